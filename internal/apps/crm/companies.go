package crm

import (
	"context"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// CompanyFilter selects companies; at most one field may be set.
type CompanyFilter struct {
	// OwnerID lists the companies of one owner.
	OwnerID string
	// Q lists the companies whose name or domain starts with it (case and
	// punctuation aside), in alphabetical order of what matched.
	Q string
}

// CreateCompany adds a company and emits crm.company.created.
func (s *Service) CreateCompany(ctx context.Context, tenant string, in CompanyIn) (*Company, error) {
	var out *Company
	err := s.update(ctx, func(tx store.Txn) error {
		c, err := s.createCompanyTx(ctx, tx, tenant, in)
		out = c
		return err
	})
	return out, err
}

func (s *Service) createCompanyTx(ctx context.Context, tx store.Txn, tenant string, in CompanyIn) (*Company, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkOwner(ctx, tenant, clean(in.OwnerID), "owner_id"); err != nil {
		return nil, err
	}
	now := s.now()
	c := &Company{ID: s.ids.New(prefixCompany, now), Name: strings.TrimSpace(in.Name), Domain: clean(in.Domain),
		Industry: clean(in.Industry), Phone: clean(in.Phone), Website: clean(in.Website), OwnerID: clean(in.OwnerID),
		CreatedAt: now, UpdatedAt: now}
	if err := companies.Put(tx, tenant, c); err != nil {
		return nil, err
	}
	return c, s.emit(tx, tenant, "crm.company.created", c, "company_id", c.ID, nil)
}

// GetCompany returns one company.
func (s *Service) GetCompany(ctx context.Context, tenant, id string) (*Company, error) {
	var out *Company
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		out, err = companies.Get(r, tenant, id)
		return err
	})
	return out, err
}

// ListCompanies returns a page of companies, newest first (alphabetical
// with Q).
func (s *Service) ListCompanies(ctx context.Context, tenant string, f CompanyFilter, p store.Page) ([]*Company, string, error) {
	index, values, err := choose([]filterValue{{"owner_id", f.OwnerID, "o"}, {"q", f.Q, "q"}}, nil)
	if err != nil {
		return nil, "", err
	}
	return listPage(ctx, s, companies, tenant, index, values, f.Q, p, companyTexts)
}

// UpdateCompany applies a patch.
func (s *Service) UpdateCompany(ctx context.Context, tenant, id string, in CompanyPatch) (*Company, error) {
	var out *Company
	err := s.update(ctx, func(tx store.Txn) error {
		c, err := companies.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if in.OwnerID != nil {
			if err := s.checkOwner(ctx, tenant, clean(in.OwnerID), "owner_id"); err != nil {
				return err
			}
		}
		if in.Name != nil {
			c.Name = strings.TrimSpace(*in.Name)
		}
		set(&c.Domain, in.Domain, in.Null, "domain")
		set(&c.Industry, in.Industry, in.Null, "industry")
		set(&c.Phone, in.Phone, in.Null, "phone")
		set(&c.Website, in.Website, in.Null, "website")
		set(&c.OwnerID, in.OwnerID, in.Null, "owner_id")
		c.UpdatedAt = s.now()
		out = c
		return companies.Put(tx, tenant, c)
	})
	return out, err
}

// DeleteCompany deletes a company and, in the same transaction, unlinks
// (sets to null) the company_id of its contacts, deals and activities.
func (s *Service) DeleteCompany(ctx context.Context, tenant, id string) error {
	return tooManyLinks(s.update(ctx, func(tx store.Txn) error {
		if err := companies.Delete(tx, tenant, id); err != nil {
			return err
		}
		now := s.now()
		if err := unlink(tx, tenant, contacts, "c", id, func(c *Contact) { c.CompanyID, c.UpdatedAt = nil, now }); err != nil {
			return err
		}
		if err := unlink(tx, tenant, deals, "c", id, func(d *Deal) { d.CompanyID, d.UpdatedAt = nil, now }); err != nil {
			return err
		}
		return unlink(tx, tenant, activities, "c", id, func(a *Activity) { a.CompanyID, a.UpdatedAt = nil, now })
	}))
}

// tooManyLinks turns a delete whose unlinking does not fit one
// transaction into a conflict that says what to do.
func tooManyLinks(err error) error {
	if errors.Is(err, errs.TooLarge) {
		return errs.Conflictf("the record is linked to more records than one delete can unlink (a few thousand); " +
			"unlink or delete some of them first")
	}
	return err
}

// unlink applies clear to every record of c whose entry in index starts
// with id, and stores it.
func unlink[T any](tx store.Txn, tenant string, c *store.Collection[T], index, id string, clear func(*T)) error {
	var list []string
	if err := c.IDsBy(tx, tenant, index, []any{id}, func(rid string) error {
		list = append(list, rid)
		return nil
	}); err != nil {
		return err
	}
	for _, rid := range list {
		v, err := c.Get(tx, tenant, rid)
		if err != nil {
			return err
		}
		clear(v)
		if err := c.Put(tx, tenant, v); err != nil {
			return err
		}
	}
	return nil
}

// filterValue is one list filter: its query name, the value asked for
// and the index that serves it alone.
type filterValue struct {
	name, value, index string
}

// choose picks the index serving the filters set: none, one, or a pair
// that combos names ("owner_id+stage_id" -> index). Any other
// combination is a 422.
func choose(fs []filterValue, combos map[string]string) (string, []any, error) {
	var set []filterValue
	for _, f := range fs {
		if f.value != "" {
			set = append(set, f)
		}
	}
	switch len(set) {
	case 0:
		return "", nil, nil
	case 1:
		if set[0].name == "q" && len([]rune(set[0].value)) > MaxQueryLen {
			return "", nil, errs.Invalidf([]any{"query", "q"}, "string_too_long", "must be at most %d characters", MaxQueryLen)
		}
		if set[0].name == "q" && normalize(set[0].value) == "" {
			return "", nil, errs.Invalidf([]any{"query", "q"}, "value_error", "needs a letter or digit")
		}
		return set[0].index, []any{set[0].value}, nil
	case 2:
		if ix, ok := combos[set[0].name+"+"+set[1].name]; ok {
			return ix, []any{set[0].value, set[1].value}, nil
		}
	}
	names := make([]string, len(set))
	for i, f := range set {
		names[i] = f.name
	}
	return "", nil, errs.Invalidf([]any{"query"}, "value_error", "the filters %s cannot be combined; use one of them", strings.Join(names, ", "))
}
