package invoicing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// record is an invoice as stored: the invoice and what only the app reads.
type record struct {
	Invoice
	// Token is the payment link's secret ("" before the first send).
	Token string `json:"pay_token,omitempty"`
	// NextReminder is the index in the account's days_after_due of the
	// next scheduled reminder.
	NextReminder int `json:"next_reminder,omitempty"`
	// PayKeys are the idempotency keys of the payments recorded, so a
	// repeated payment request pays once.
	PayKeys []string `json:"pay_keys,omitempty"`
}

// The invoice list indexes: one per combination of the filters status and
// customer, so every filtered list is one index walk.
var invoices = &store.Collection[record]{
	Name:     "invoice",
	ID:       func(r *record) string { return r.ID },
	NotFound: "invoice not found",
	Indexes: []store.Index[record]{
		{Name: "s", Values: func(r *record) [][]any { return [][]any{{r.Status}} }},
		{Name: "c", Values: func(r *record) [][]any { return [][]any{{r.CustomerID}} }},
		{Name: "sc", Values: func(r *record) [][]any { return [][]any{{r.Status, r.CustomerID}} }},
		{Name: "number", Unique: true, Values: func(r *record) [][]any {
			if r.Number == nil {
				return nil
			}
			return [][]any{{*r.Number}}
		}},
	},
}

// counterKey holds a tenant's last invoice number.
func counterKey(tenant string) []byte { return store.Key(tenant, "invoicing", "number") }

// tokenKey maps a payment link's token to its tenant and invoice.
func tokenKey(token string) []byte { return store.Key(store.System, "invpay", token) }

// Event names on the bus.
const (
	BusCreated   = "invoicing.invoice.created"
	BusFinalized = "invoicing.invoice.finalized"
	BusSent      = "invoicing.invoice.sent"
	BusOverdue   = "invoicing.invoice.overdue"
	BusPaid      = "invoicing.invoice.paid"
	BusVoided    = "invoicing.invoice.voided"
	BusPayment   = "invoicing.payment.received"
)

// Events lists the events the app emits.
func Events() []string {
	return []string{BusCreated, BusFinalized, BusSent, BusPaid, BusOverdue, BusVoided, BusPayment}
}

// busData is the data of an invoice event on the bus.
func busData(r *record) map[string]any {
	d := map[string]any{"invoice_id": r.ID, "status": r.Status, "collection": r.Collection,
		"customer_id": r.CustomerID, "customer_name": r.CustomerName, "currency": r.Currency,
		"total_cents": r.TotalCents, "amount_paid_cents": r.AmountPaidCents, "amount_due_cents": r.AmountDueCents}
	if r.Number != nil {
		d["number"] = *r.Number
	}
	if r.CustomerEmail != nil {
		d["customer_email"] = *r.CustomerEmail
	}
	if r.DueDate != nil {
		d["due_date"] = *r.DueDate
	}
	if r.DealID != nil {
		d["deal_id"] = *r.DealID
	}
	return d
}

func (s *Service) emit(tx store.Txn, tenant, name string, r *record, extra map[string]any) error {
	d := busData(r)
	for k, v := range extra {
		d[k] = v
	}
	return s.cfg.Events.Emit(tx, tenant, name, d)
}

func (r *record) event(at time.Time, typ string, note *string) {
	r.Events = append(r.Events, Event{At: at, Type: typ, Note: note})
	r.UpdatedAt = at
}

func (r *record) out() *Invoice {
	inv := r.Invoice
	return &inv
}

// stateConflict is the 409 for an action the invoice's status forbids.
func stateConflict(r *record, action string) error {
	switch r.Status {
	case StatusDraft:
		return errs.Conflictf("invoice is a draft; finalize it before you %s it", action)
	case StatusOpen:
		return errs.Conflictf("invoice is open; only a draft can be %s", action)
	}
	return errs.Conflictf("invoice is already %s", r.Status)
}

// CreateInvoice creates a draft invoice for a customer. Lines without a
// tax rate take the account's default rate; the currency defaults to the
// account's.
func (s *Service) CreateInvoice(ctx context.Context, tenant string, in InvoiceIn) (*Invoice, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkDeal(ctx, tenant, in.DealID, loc("deal_id")); err != nil {
		return nil, err
	}
	var out *Invoice
	err := s.st.Update(ctx, func(tx store.Txn) error {
		now := s.now()
		c, err := customers.Get(tx, tenant, in.CustomerID)
		if errors.Is(err, errs.NotFound) {
			return errs.Invalidf(loc("customer_id"), "value_error", "no customer %q", in.CustomerID)
		}
		if err != nil {
			return err
		}
		a, err := s.account(ctx, tx, tenant)
		if err != nil {
			return err
		}
		lines, sub, tax, vs := makeLines(in.Lines, a.Tax.DefaultRatePercent, loc("lines"))
		if len(vs) > 0 {
			return errs.Validation(vs...)
		}
		r := &record{Invoice: Invoice{ID: s.ids.New("inv", now), Status: StatusDraft, Collection: CollectionCurrent,
			CustomerID: c.ID, CustomerName: c.Name, CustomerEmail: c.Email, Currency: a.DefaultCurrency,
			Lines: lines, SubtotalCents: sub, TaxCents: tax, TotalCents: sub + tax, AmountDueCents: sub + tax,
			DaysUntilDue: DefaultDueDays, DueDate: in.DueDate, DealID: in.DealID, Memo: in.Memo,
			Payments: []Payment{}, Events: []Event{}, CreatedAt: now}}
		if in.Currency != nil {
			r.Currency = *in.Currency
		}
		if in.DaysUntilDue != nil {
			r.DaysUntilDue = *in.DaysUntilDue
		}
		r.event(now, EventCreated, nil)
		if err := s.emit(tx, tenant, BusCreated, r, nil); err != nil {
			return err
		}
		out = r.out()
		return invoices.Put(tx, tenant, r)
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Events.Kick()
	return out, nil
}

// Invoice returns one invoice.
func (s *Service) Invoice(ctx context.Context, tenant, id string) (*Invoice, error) {
	var out *Invoice
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := invoices.Get(r, tenant, id)
		if err != nil {
			return err
		}
		out = rec.out()
		return nil
	})
	return out, err
}

// InvoiceFilter narrows an invoice list.
type InvoiceFilter struct {
	Status     string
	CustomerID string
}

var statuses = []string{StatusDraft, StatusOpen, StatusPaid, StatusVoid, StatusUncollectible}

// ListInvoices returns a page of invoices, newest first.
func (s *Service) ListInvoices(ctx context.Context, tenant string, f InvoiceFilter, p store.Page) ([]*Invoice, string, error) {
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		return nil, "", errs.Invalidf(loc("query", "status"), "enum", "must be one of %s", strings.Join(statuses, ", "))
	}
	var recs []*record
	var next string
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		switch {
		case f.Status != "" && f.CustomerID != "":
			recs, next, err = invoices.ListBy(r, tenant, "sc", []any{f.Status, f.CustomerID}, p)
		case f.Status != "":
			recs, next, err = invoices.ListBy(r, tenant, "s", []any{f.Status}, p)
		case f.CustomerID != "":
			recs, next, err = invoices.ListBy(r, tenant, "c", []any{f.CustomerID}, p)
		default:
			recs, next, err = invoices.List(r, tenant, p)
		}
		return err
	})
	out := make([]*Invoice, len(recs))
	for i, r := range recs {
		out[i] = r.out()
	}
	return out, next, err
}

// UpdateInvoice applies a patch to a draft; an invoice past draft is a
// conflict.
func (s *Service) UpdateInvoice(ctx context.Context, tenant, id string, p InvoicePatch) (*Invoice, error) {
	if _, err := s.Invoice(ctx, tenant, id); err != nil {
		return nil, err
	}
	if err := errs.Validation(p.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkDeal(ctx, tenant, p.DealID, loc("deal_id")); err != nil {
		return nil, err
	}
	var out *Invoice
	err := s.st.Update(ctx, func(tx store.Txn) error {
		now := s.now()
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if r.Status != StatusDraft {
			return errs.Conflictf("invoice is %s; only a draft can be changed", r.Status)
		}
		if p.CustomerID != nil {
			c, err := customers.Get(tx, tenant, *p.CustomerID)
			if errors.Is(err, errs.NotFound) {
				return errs.Invalidf(loc("customer_id"), "value_error", "no customer %q", *p.CustomerID)
			}
			if err != nil {
				return err
			}
			r.CustomerID, r.CustomerName, r.CustomerEmail = c.ID, c.Name, c.Email
		}
		if p.Lines != nil {
			a, err := s.account(ctx, tx, tenant)
			if err != nil {
				return err
			}
			lines, sub, tax, vs := makeLines(*p.Lines, a.Tax.DefaultRatePercent, loc("lines"))
			if len(vs) > 0 {
				return errs.Validation(vs...)
			}
			r.Lines, r.SubtotalCents, r.TaxCents, r.TotalCents, r.AmountDueCents = lines, sub, tax, sub+tax, sub+tax
		}
		switch {
		case p.DaysUntilDue != nil:
			r.DaysUntilDue, r.DueDate = *p.DaysUntilDue, nil
		case p.clears("days_until_due"):
			r.DaysUntilDue = DefaultDueDays
		}
		if p.DueDate != nil || p.clears("due_date") {
			r.DueDate = p.DueDate
		}
		if p.DealID != nil || p.clears("deal_id") {
			r.DealID = p.DealID
		}
		if p.Memo != nil || p.clears("memo") {
			r.Memo = p.Memo
		}
		if p.Currency != nil {
			r.Currency = *p.Currency
		}
		r.event(now, EventUpdated, nil)
		out = r.out()
		return invoices.Put(tx, tenant, r)
	})
	return out, err
}

// dueDay returns the invoice's due date as a time at midnight UTC.
func dueDay(r *record) time.Time {
	d, _ := time.Parse(dateLayout, *r.DueDate)
	return d
}

// overdueAt is when an invoice becomes overdue: the start of the day after
// its due date (UTC).
func overdueAt(r *record) time.Time { return dueDay(r).AddDate(0, 0, 1) }

// reminderAt is when the reminder days after the due date goes out.
func reminderAt(r *record, days int) time.Time { return dueDay(r).AddDate(0, 0, days) }

// Finalize gives a draft the workspace's next number (INV-000001, gap-free
// and unique under concurrent finalizes), fixes its due date and lines,
// and opens it. An invoice of zero total is paid at once.
func (s *Service) Finalize(ctx context.Context, tenant, id string) (*Invoice, error) {
	mu := s.stripe(tenant)
	mu.Lock()
	defer mu.Unlock()
	var out *Invoice
	err := s.st.Update(ctx, func(tx store.Txn) error {
		now := s.now()
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if r.Status != StatusDraft {
			return errs.Conflictf("invoice is already finalized (%s)", r.Status)
		}
		c, err := customers.Get(tx, tenant, r.CustomerID)
		if err != nil {
			return errors.Wrap(err, "the invoice's customer")
		}
		n := 0
		if raw, err := tx.Get(counterKey(tenant)); err == nil {
			fmt.Sscanf(string(raw), "%d", &n)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		n++
		if err := tx.Set(counterKey(tenant), []byte(itoa(n))); err != nil {
			return err
		}
		r.Number = ptr(fmt.Sprintf("INV-%06d", n))
		if r.DueDate == nil {
			r.DueDate = ptr(now.AddDate(0, 0, r.DaysUntilDue).Format(dateLayout))
		}
		r.CustomerName, r.CustomerEmail = c.Name, c.Email
		r.Status, r.FinalizedAt = StatusOpen, &now
		r.event(now, EventFinalized, r.Number)
		if err := s.emit(tx, tenant, BusFinalized, r, nil); err != nil {
			return err
		}
		if r.AmountDueCents == 0 {
			if err := s.settle(tx, tenant, r, now); err != nil {
				return err
			}
		} else {
			if err := moveBalance(tx, tenant, r.CustomerID, r.AmountDueCents); err != nil {
				return err
			}
			if err := s.schedule(tx, tenant, r, overdueAt(r)); err != nil {
				return err
			}
		}
		out = r.out()
		return invoices.Put(tx, tenant, r)
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Events.Kick()
	return out, nil
}

// settle marks an open invoice with nothing left to pay as paid.
func (s *Service) settle(tx store.Txn, tenant string, r *record, now time.Time) error {
	r.Status, r.PaidAt, r.Collection = StatusPaid, &now, CollectionCollected
	r.event(now, EventPaid, nil)
	if err := s.unschedule(tx, tenant, r); err != nil {
		return err
	}
	return s.emit(tx, tenant, BusPaid, r, nil)
}

// schedule sets the invoice's one collection timer at at (replacing any).
func (s *Service) schedule(tx store.Txn, tenant string, r *record, at time.Time) error {
	if err := s.unschedule(tx, tenant, r); err != nil {
		return err
	}
	if s.cfg.Timers == nil {
		return nil
	}
	r.NextCollectionAt = &at
	return s.cfg.Timers.SetTimer(tx, tenant, TimerCollect, r.ID, at)
}

// unschedule cancels the invoice's collection timer, if any.
func (s *Service) unschedule(tx store.Txn, tenant string, r *record) error {
	if r.NextCollectionAt == nil || s.cfg.Timers == nil {
		r.NextCollectionAt = nil
		return nil
	}
	at := *r.NextCollectionAt
	r.NextCollectionAt = nil
	return s.cfg.Timers.CancelTimer(tx, tenant, TimerCollect, r.ID, at)
}

// Pay records a payment against an open invoice (partial payments are
// allowed). More than remains is a 422; a draft, void, paid or
// uncollectible invoice a 409. The payment, the balance, the invoice's
// status and the events commit in one transaction; a key given (the
// request's Idempotency-Key) that already paid returns the invoice as it
// is without paying again.
func (s *Service) Pay(ctx context.Context, tenant, id string, in PayIn, key string) (*Invoice, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	var out *Invoice
	err := s.st.Update(ctx, func(tx store.Txn) error {
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if key != "" && slices.Contains(r.PayKeys, key) {
			out = r.out()
			return nil
		}
		if err := s.pay(tx, tenant, r, in, key); err != nil {
			return err
		}
		out = r.out()
		return invoices.Put(tx, tenant, r)
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Events.Kick()
	return out, nil
}

// PayKey is the key Pay keeps for an HTTP request's Idempotency-Key: scoped
// to the API key when one was used, else to the person (api.md section 6,
// idempotency scope).
func PayKey(keyID, userID, idempotencyKey string) string {
	who := "user/" + userID
	if keyID != "" {
		who = "key/" + keyID
	}
	return "http/" + who + "/" + idempotencyKey
}

// maxPayKeys bounds the idempotency keys an invoice remembers.
const maxPayKeys = 100

// MaxPayments bounds the payments of one invoice, and so its record.
const MaxPayments = 100

func (s *Service) pay(tx store.Txn, tenant string, r *record, in PayIn, key string) error {
	if r.Status != StatusOpen {
		return stateConflict(r, "pay")
	}
	if len(r.Payments) >= MaxPayments {
		return errs.Conflictf("invoice already has %d payments, the most one invoice takes", MaxPayments)
	}
	if in.AmountCents > r.AmountDueCents {
		return errs.Invalidf(loc("amount_cents"), "less_than_equal",
			"must be at most the amount due (%d)", r.AmountDueCents)
	}
	now := s.now()
	p := Payment{ID: s.ids.New("pay", now), AmountCents: in.AmountCents, Method: in.Method, Reference: in.Reference, At: now}
	r.Payments = append(r.Payments, p)
	r.AmountPaidCents += in.AmountCents
	r.AmountDueCents -= in.AmountCents
	if key != "" {
		r.PayKeys = append(r.PayKeys, key)
		if len(r.PayKeys) > maxPayKeys {
			r.PayKeys = r.PayKeys[len(r.PayKeys)-maxPayKeys:]
		}
	}
	r.event(now, EventPayment, ptr(formatAmount(r.Currency, in.AmountCents)+" by "+in.Method))
	if err := moveBalance(tx, tenant, r.CustomerID, -in.AmountCents); err != nil {
		return err
	}
	if err := s.emit(tx, tenant, BusPayment, r, map[string]any{"payment_id": p.ID, "amount_cents": p.AmountCents,
		"method": p.Method}); err != nil {
		return err
	}
	if r.AmountDueCents == 0 {
		return s.settle(tx, tenant, r, now)
	}
	return nil
}

// Void voids an open invoice on which nothing was paid.
func (s *Service) Void(ctx context.Context, tenant, id string, in NoteIn) (*Invoice, error) {
	return s.close(ctx, tenant, id, in, StatusVoid)
}

// MarkUncollectible writes an open invoice off as uncollectible.
func (s *Service) MarkUncollectible(ctx context.Context, tenant, id string, in NoteIn) (*Invoice, error) {
	return s.close(ctx, tenant, id, in, StatusUncollectible)
}

func (s *Service) close(ctx context.Context, tenant, id string, in NoteIn, status string) (*Invoice, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	var out *Invoice
	err := s.st.Update(ctx, func(tx store.Txn) error {
		now := s.now()
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		action := "void"
		if status == StatusUncollectible {
			action = "mark uncollectible"
		}
		if r.Status != StatusOpen {
			return stateConflict(r, action)
		}
		if status == StatusVoid && r.AmountPaidCents > 0 {
			return errs.Conflictf("invoice has payments; it cannot be voided")
		}
		if err := moveBalance(tx, tenant, r.CustomerID, -r.AmountDueCents); err != nil {
			return err
		}
		if err := s.unschedule(tx, tenant, r); err != nil {
			return err
		}
		r.Status = status
		if status == StatusVoid {
			r.VoidedAt = &now
			r.event(now, EventVoided, in.Note)
			if err := s.emit(tx, tenant, BusVoided, r, nil); err != nil {
				return err
			}
		} else {
			r.UncollectibleAt, r.Collection = &now, CollectionUncollectible
			r.event(now, EventUncollectible, in.Note)
		}
		out = r.out()
		return invoices.Put(tx, tenant, r)
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Events.Kick()
	return out, nil
}

// InvoiceEvents returns an invoice's history, oldest first.
func (s *Service) InvoiceEvents(ctx context.Context, tenant, id string) ([]Event, error) {
	inv, err := s.Invoice(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return inv.Events, nil
}
