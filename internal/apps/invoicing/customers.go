package invoicing

import (
	"context"
	"strings"
	"unicode"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// maxSearchWords bounds the search entries one customer writes.
const maxSearchWords = 24

var customers = &store.Collection[Customer]{
	Name:     "invcust",
	ID:       func(c *Customer) string { return c.ID },
	NotFound: "customer not found",
	Indexes: []store.Index[Customer]{
		{Name: "company", Values: func(c *Customer) [][]any {
			if c.CompanyID == nil {
				return nil
			}
			return [][]any{{*c.CompanyID}}
		}},
		// "w": one entry per word of the name and the email, lowercased,
		// so ?q= is a prefix walk.
		{Name: "w", Values: func(c *Customer) [][]any {
			var out [][]any
			for _, w := range searchWords(c) {
				out = append(out, []any{w})
			}
			return out
		}},
	},
}

func searchWords(c *Customer) []string {
	text := strings.ToLower(c.Name)
	var words []string
	seen := map[string]bool{}
	add := func(w string) {
		if w != "" && !seen[w] && len(words) < maxSearchWords {
			seen[w] = true
			words = append(words, w)
		}
	}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		add(w)
	}
	if c.Email != nil {
		add(strings.ToLower(*c.Email))
	}
	return words
}

// checkCompany asks the CRM whether company_id exists (when a CRM is
// wired); a missing one is a 422 at loc.
func (s *Service) checkCompany(ctx context.Context, tenant string, id *string, l []any) error {
	if id == nil || s.cfg.Companies == nil {
		return nil
	}
	err := s.cfg.Companies.CompanyExists(ctx, tenant, *id)
	if errors.Is(err, errs.NotFound) {
		return errs.Invalidf(l, "value_error", "no company %q in the CRM", *id)
	}
	return err
}

func (s *Service) checkDeal(ctx context.Context, tenant string, id *string, l []any) error {
	if id == nil || s.cfg.Companies == nil {
		return nil
	}
	err := s.cfg.Companies.DealExists(ctx, tenant, *id)
	if errors.Is(err, errs.NotFound) {
		return errs.Invalidf(l, "value_error", "no deal %q in the CRM", *id)
	}
	return err
}

// CreateCustomer creates a customer.
func (s *Service) CreateCustomer(ctx context.Context, tenant string, in CustomerIn) (*Customer, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkCompany(ctx, tenant, in.CompanyID, loc("company_id")); err != nil {
		return nil, err
	}
	now := s.now()
	c := &Customer{ID: s.ids.New("cus", now), Name: strings.TrimSpace(in.Name), Email: in.Email, Phone: in.Phone,
		CompanyID: in.CompanyID, Address: in.Address.normalized(), CreatedAt: now}
	err := s.st.Update(ctx, func(tx store.Txn) error {
		a, err := s.account(ctx, tx, tenant)
		if err != nil {
			return err
		}
		if a.Status == AccountConnected {
			c.PaymentsCustomerID = ptr("sim_" + c.ID)
		}
		return customers.Put(tx, tenant, c)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Customer returns one customer.
func (s *Service) Customer(ctx context.Context, tenant, id string) (*Customer, error) {
	var c *Customer
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		c, err = customers.Get(r, tenant, id)
		return err
	})
	return c, err
}

// CustomerFilter narrows a customer list: Q matches the start of a word of
// the name or of the email; CompanyID the CRM company.
type CustomerFilter struct {
	Q         string
	CompanyID string
}

// ListCustomers returns a page of customers: newest first, or with Q in the
// order of the matched words.
func (s *Service) ListCustomers(ctx context.Context, tenant string, f CustomerFilter, p store.Page) ([]*Customer, string, error) {
	var out []*Customer
	var next string
	q := strings.ToLower(strings.TrimSpace(f.Q))
	if q != "" && f.CompanyID != "" {
		return nil, "", errs.Invalidf(loc("query", "q"), "value_error", "q and company_id cannot be combined")
	}
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		switch {
		case q != "":
			p.Forward = true
			// The prefix of every "w" entry whose word starts with q: the
			// encoded word without its terminator.
			full := store.Key(tenant, "i", customers.Name, "w", q)
			out, next, err = customers.ListUnder(r, tenant, full[:len(full)-2], p)
			out = dedupe(out)
		case f.CompanyID != "":
			out, next, err = customers.ListBy(r, tenant, "company", []any{f.CompanyID}, p)
		default:
			out, next, err = customers.List(r, tenant, p)
		}
		return err
	})
	return out, next, err
}

func dedupe(cs []*Customer) []*Customer {
	seen := map[string]bool{}
	out := cs[:0]
	for _, c := range cs {
		if !seen[c.ID] {
			seen[c.ID] = true
			out = append(out, c)
		}
	}
	return out
}

// UpdateCustomer applies a patch. The name and email shown on the
// customer's invoices are those of when each was finalized; drafts follow
// the customer.
func (s *Service) UpdateCustomer(ctx context.Context, tenant, id string, p CustomerPatch) (*Customer, error) {
	if _, err := s.Customer(ctx, tenant, id); err != nil {
		return nil, err
	}
	if err := errs.Validation(p.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkCompany(ctx, tenant, p.CompanyID, loc("company_id")); err != nil {
		return nil, err
	}
	var out *Customer
	err := s.st.Update(ctx, func(tx store.Txn) error {
		c, err := customers.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if p.Name != nil {
			c.Name = strings.TrimSpace(*p.Name)
		}
		if p.Email != nil || p.clears("email") {
			c.Email = p.Email
		}
		if p.Phone != nil || p.clears("phone") {
			c.Phone = p.Phone
		}
		if p.CompanyID != nil || p.clears("company_id") {
			c.CompanyID = p.CompanyID
		}
		if p.Address != nil || p.clears("address") {
			c.Address = p.Address.normalized()
		}
		out = c
		return customers.Put(tx, tenant, c)
	})
	return out, err
}

// DeleteCustomer deletes a customer without invoices; one with invoices
// is a conflict (void them and keep the customer for the record).
func (s *Service) DeleteCustomer(ctx context.Context, tenant, id string) error {
	return s.st.Update(ctx, func(tx store.Txn) error {
		if _, err := customers.Get(tx, tenant, id); err != nil {
			return err
		}
		has := false
		if err := invoices.IDsBy(tx, tenant, "c", []any{id}, func(string) error {
			has = true
			return store.ErrStop
		}); err != nil {
			return err
		}
		if has {
			return errs.Conflictf("customer has invoices; it cannot be deleted")
		}
		return customers.Delete(tx, tenant, id)
	})
}

// moveBalance adds delta to a customer's balance within tx.
func moveBalance(tx store.Txn, tenant, id string, delta int64) error {
	if delta == 0 {
		return nil
	}
	c, err := customers.Get(tx, tenant, id)
	if err != nil {
		return err
	}
	nb, ok := c.BalanceCents+delta, true
	if delta > 0 {
		nb, ok = addCents(c.BalanceCents, delta)
	}
	if !ok {
		return errs.Invalidf([]any{}, "less_than_equal", "the customer's balance would exceed 9223372036854775807 cents")
	}
	c.BalanceCents = nb
	return customers.Put(tx, tenant, c)
}
