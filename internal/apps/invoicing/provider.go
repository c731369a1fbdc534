package invoicing

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// ProviderID is the id of the invoicing app's capability provider.
const ProviderID = "builtin.invoicing"

// Provider returns the capability provider of the invoicing app:
// customer.create, invoice.create (optionally finalizing and sending),
// invoice.finalize, invoice.send, invoice.remind, invoice.void,
// invoice.get and payment.request, each for the tenant of its call.
func (s *Service) Provider() capability.Provider { return provider{s} }

type provider struct{ s *Service }

var _ capability.Provider = provider{}

func capabilities() []string {
	return []string{capability.CustomerCreate, capability.InvoiceCreate, capability.InvoiceFinalize,
		capability.InvoiceSend, capability.InvoiceRemind, capability.InvoiceVoid, capability.InvoiceGet,
		capability.PaymentRequest}
}

// App describes the invoicing app (the "invoicing" entry of
// capability.BuiltinApps).
func App() capability.App {
	return capability.App{ID: "invoicing", Name: "Invoicing", API: capability.API{Prefix: "/v1/invoicing"},
		Events: capability.Events{Emits: Events(), Consumes: []string{}}, Capabilities: capabilities()}
}

// Info describes the provider.
func (provider) Info() capability.Info {
	return capability.Info{ID: ProviderID, Name: "Invoicing", Kind: capability.KindBuiltin, Capabilities: capabilities()}
}

// callKey remembers what a call with an idempotency key created, so a
// repeated call returns it instead of creating another.
func callKey(tenant, key string) []byte { return store.Key(tenant, "invoicing", "call", key) }

func (s *Service) recalled(ctx context.Context, tenant, key string) (string, error) {
	if key == "" {
		return "", nil
	}
	var id string
	err := s.st.View(ctx, func(r store.Reader) error {
		raw, err := r.Get(callKey(tenant, key))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		id = string(raw)
		return err
	})
	return id, err
}

func (s *Service) remember(ctx context.Context, tenant, key, id string) error {
	if key == "" {
		return nil
	}
	return s.st.Update(ctx, func(tx store.Txn) error { return tx.Set(callKey(tenant, key), []byte(id)) })
}

func result(inv *Invoice) capability.InvoiceResult {
	out := capability.InvoiceResult{InvoiceID: inv.ID, Status: inv.Status, Currency: inv.Currency,
		TotalCents: ptr(inv.TotalCents), AmountDueCents: ptr(inv.AmountDueCents), RemindersSent: ptr(inv.RemindersSent)}
	if inv.Number != nil {
		out.Number = *inv.Number
	}
	if inv.DueDate != nil {
		out.DueDate = *inv.DueDate
	}
	if inv.PaymentURL != nil {
		out.PaymentURL = *inv.PaymentURL
	}
	return out
}

func optional(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}

// Call performs one capability call in call.Tenant. Calls that create
// (customer.create, invoice.create, payment.request for a customer) act at
// most once per idempotency key; the others are safe to repeat: a repeated
// finalize or void finds the invoice already there and answers with it.
func (p provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	s := p.s
	tenant := call.Tenant
	if strings.TrimSpace(tenant) == "" {
		return nil, errors.New("invoicing: a capability call without a tenant")
	}
	decode := func(v any) error {
		if err := json.Unmarshal(call.Args, v); err != nil {
			return errs.Invalidf([]any{"args"}, "type_error", "arguments do not decode: %v", err)
		}
		return nil
	}
	var out any
	switch call.Capability {
	case capability.CustomerCreate:
		var a capability.CustomerCreateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		id, err := s.recalled(ctx, tenant, call.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		if id == "" {
			c, err := s.CreateCustomer(ctx, tenant, CustomerIn{Name: a.Name, Email: optional(a.Email),
				Phone: optional(a.Phone), CompanyID: optional(a.CompanyID)})
			if err != nil {
				return nil, err
			}
			id = c.ID
			if err := s.remember(ctx, tenant, call.IdempotencyKey, id); err != nil {
				return nil, err
			}
		}
		out = capability.CustomerCreateResult{CustomerID: id}
	case capability.InvoiceCreate:
		var a capability.InvoiceCreateArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		id, err := s.recalled(ctx, tenant, call.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		if id == "" {
			in := InvoiceIn{CustomerID: a.CustomerID, DaysUntilDue: a.DaysUntilDue, DueDate: optional(a.DueDate),
				DealID: optional(a.DealID), Memo: optional(a.Memo), Currency: optional(a.Currency)}
			for _, l := range a.Lines {
				in.Lines = append(in.Lines, LineIn{Description: l.Description, Quantity: l.Quantity,
					UnitAmountCents: l.UnitAmountCents, TaxRatePercent: l.TaxRatePercent})
			}
			inv, err := s.CreateInvoice(ctx, tenant, in)
			if err != nil {
				return nil, err
			}
			id = inv.ID
			if err := s.remember(ctx, tenant, call.IdempotencyKey, id); err != nil {
				return nil, err
			}
		}
		inv, err := s.Invoice(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if (a.Finalize || a.Send) && inv.Status == StatusDraft {
			if inv, err = s.Finalize(ctx, tenant, id); err != nil {
				return nil, err
			}
		}
		if a.Send && inv.SentAt == nil && inv.Status == StatusOpen {
			if inv, err = s.send(ctx, tenant, id, nil); err != nil {
				return nil, err
			}
		}
		out = result(inv)
	case capability.InvoiceFinalize, capability.InvoiceGet:
		var a capability.InvoiceArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		inv, err := s.Invoice(ctx, tenant, a.InvoiceID)
		if err != nil {
			return nil, err
		}
		if call.Capability == capability.InvoiceFinalize && inv.Status == StatusDraft {
			if inv, err = s.Finalize(ctx, tenant, a.InvoiceID); err != nil {
				return nil, err
			}
		}
		out = result(inv)
	case capability.InvoiceSend:
		var a capability.InvoiceSendArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		inv, err := s.send(ctx, tenant, a.InvoiceID, a.To)
		if err != nil {
			return nil, err
		}
		out = result(inv)
	case capability.InvoiceRemind:
		var a capability.InvoiceRemindArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		inv, err := s.Remind(ctx, tenant, a.InvoiceID, SendIn{To: optional(a.To)})
		if err != nil {
			return nil, err
		}
		out = result(inv)
	case capability.InvoiceVoid:
		var a capability.InvoiceVoidArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		inv, err := s.Void(ctx, tenant, a.InvoiceID, NoteIn{Note: optional(a.Reason)})
		if errors.Is(err, errs.Conflict) {
			if cur, gerr := s.Invoice(ctx, tenant, a.InvoiceID); gerr == nil && cur.Status == StatusVoid {
				inv, err = cur, nil
			}
		}
		if err != nil {
			return nil, err
		}
		out = result(inv)
	case capability.PaymentRequest:
		var a capability.PaymentRequestArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		res, err := s.requestPayment(ctx, tenant, call.IdempotencyKey, a)
		if err != nil {
			return nil, err
		}
		out = res
	default:
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "the invoicing provider does not fill %s", call.Capability)
	}
	b, err := json.Marshal(out)
	return b, errors.Wrap(err, "encode result")
}

// requestPayment answers payment.request: against an invoice, its payment
// link (amount_cents must be the amount due); for a customer, a new
// invoice of one line for the amount, finalized, with its link. With
// email, the link is mailed there.
func (s *Service) requestPayment(ctx context.Context, tenant, key string, a capability.PaymentRequestArgs) (*capability.PaymentRequestResult, error) {
	id := a.InvoiceID
	if id == "" {
		if a.CustomerID == "" {
			return nil, errs.Invalidf([]any{"args", "customer_id"}, "missing", "give invoice_id or customer_id")
		}
		var err error
		if id, err = s.recalled(ctx, tenant, key); err != nil {
			return nil, err
		}
		if id == "" {
			desc := a.Description
			if strings.TrimSpace(desc) == "" {
				desc = "Payment request"
			}
			inv, err := s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: a.CustomerID, Currency: &a.Currency,
				Lines: []LineIn{{Description: desc, Quantity: 1, UnitAmountCents: a.AmountCents, TaxRatePercent: ptr(0.0)}}})
			if err != nil {
				return nil, err
			}
			id = inv.ID
			if err := s.remember(ctx, tenant, key, id); err != nil {
				return nil, err
			}
		}
		inv, err := s.Invoice(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if inv.Status == StatusDraft {
			if _, err := s.Finalize(ctx, tenant, id); err != nil {
				return nil, err
			}
		}
	}
	inv, acct, err := s.prepareReminder(ctx, tenant, id)
	if errors.Is(err, errs.Conflict) {
		return nil, errs.Conflictf("invoice is %s; only an open invoice can be paid", inv.statusOr())
	}
	if err != nil {
		return nil, err
	}
	if inv.Currency != a.Currency || inv.AmountDueCents != a.AmountCents {
		return nil, errs.Invalidf([]any{"args", "amount_cents"}, "value_error",
			"must be the invoice's amount due (%d %s)", inv.AmountDueCents, inv.Currency)
	}
	if a.Email != "" {
		if err := s.mail(ctx, tenant, "payment-request/"+id+"/"+key, []string{a.Email},
			"Payment request: invoice "+*inv.Number+" from "+acct.BusinessName, s.invoiceText(inv, acct)); err != nil {
			return nil, err
		}
	}
	res := &capability.PaymentRequestResult{PaymentRequestID: id, Status: "requested"}
	if inv.PaymentURL != nil {
		res.URL = *inv.PaymentURL
	}
	return res, nil
}

func (r *record) statusOr() string {
	if r == nil {
		return "not open"
	}
	return r.Status
}
