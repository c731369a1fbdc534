package invoicing

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// PDFURL is the authenticated address of an invoice's PDF.
func (s *Service) PDFURL(id string) string {
	return s.cfg.PublicURL + "/v1/invoicing/invoices/" + id + "/pdf"
}

// payURL is the public address of a payment link.
func (s *Service) payURL(token string) string { return s.cfg.PublicURL + "/v1/invoicing/pay/" + token }

// Send mails an open invoice to its customer (or to in.To) through
// email.send, with a link to its PDF and, in simulated mode, a payment
// link: an unguessable token that works until Config.PaymentLinkTTL has
// passed or the invoice is no longer open. Sending again mails it again
// (with the same link while it works).
func (s *Service) Send(ctx context.Context, tenant, id string, in SendIn) (*Invoice, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	var to []string
	if in.To != nil {
		to = []string{*in.To}
	}
	return s.send(ctx, tenant, id, to)
}

// send mails an open invoice to the addresses given, or to its customer.
func (s *Service) send(ctx context.Context, tenant, id string, to []string) (*Invoice, error) {
	if s.cfg.Mailer == nil {
		return nil, errs.Unavailablef("invoices cannot be sent: no email provider is configured")
	}
	// First the link, so the email never names a link that does not work.
	var r *record
	var acct *Account
	err := s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		if r, err = invoices.Get(tx, tenant, id); err != nil {
			return err
		}
		if r.Status != StatusOpen {
			return stateConflict(r, "send")
		}
		if acct, err = s.account(ctx, tx, tenant); err != nil {
			return err
		}
		if len(to) == 0 && r.CustomerEmail == nil {
			return errs.Invalidf(loc("to"), "missing", "the customer has no email address; give to")
		}
		return s.ensureLink(tx, tenant, r, acct)
	})
	if err != nil {
		return nil, err
	}
	if len(to) == 0 {
		to = []string{*r.CustomerEmail}
	}
	sends := 0
	for _, e := range r.Events {
		if e.Type == EventSent {
			sends++
		}
	}
	subject := "Invoice " + *r.Number + " from " + acct.BusinessName
	if err := s.mail(ctx, tenant, "invoice-send/"+r.ID+"/"+itoa(sends+1), to, subject, s.invoiceText(r, acct)); err != nil {
		return nil, err
	}
	var out *Invoice
	err = s.st.Update(ctx, func(tx store.Txn) error {
		now := s.now()
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if r.SentAt == nil {
			r.SentAt = &now
		}
		r.event(now, EventSent, ptr("to "+strings.Join(to, ", ")))
		if err := s.emit(tx, tenant, BusSent, r, map[string]any{"to": to}); err != nil {
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

// ensureLink gives an open invoice a working payment link in simulated
// mode (a new token when it has none or its link expired).
func (s *Service) ensureLink(tx store.Txn, tenant string, r *record, a *Account) error {
	if a.Mode != ModeSimulated {
		return nil
	}
	now := s.now()
	if r.Token != "" && r.PaymentLinkExpiresAt != nil {
		if exp, err := time.Parse(time.RFC3339, *r.PaymentLinkExpiresAt); err == nil && now.Before(exp) {
			return nil
		}
		if err := tx.Delete(tokenKey(r.Token)); err != nil {
			return err
		}
	}
	r.Token = "pl_" + ids.Token(32)
	exp := now.Add(s.cfg.PaymentLinkTTL).Format(time.RFC3339)
	r.PaymentURL, r.PaymentLinkExpiresAt = ptr(s.payURL(r.Token)), &exp
	if err := tx.Set(tokenKey(r.Token), []byte(tenant+"\x00"+r.ID)); err != nil {
		return err
	}
	return invoices.Put(tx, tenant, r)
}

// mail sends one email through email.send with an idempotency key, so a
// repeated attempt is not sent twice by providers that honour it.
func (s *Service) mail(ctx context.Context, tenant, key string, to []string, subject, body string) error {
	if s.cfg.Mailer == nil {
		return errs.Unavailablef("no email provider is configured")
	}
	args, err := json.Marshal(map[string]any{"to": to, "subject": subject, "body": body})
	if err != nil {
		return errors.Wrap(err, "encode email")
	}
	_, err = s.cfg.Mailer.Call(ctx, capability.Call{Tenant: tenant, Capability: capability.EmailSend, Args: args,
		IdempotencyKey: key})
	return err
}

func (s *Service) invoiceText(r *record, a *Account) string {
	var b strings.Builder
	b.WriteString("Hello " + r.CustomerName + ",\n\n")
	b.WriteString("Invoice " + *r.Number + " from " + a.BusinessName + " for " + formatAmount(r.Currency, r.TotalCents) +
		" is due on " + *r.DueDate + ".\n")
	b.WriteString("Amount due: " + formatAmount(r.Currency, r.AmountDueCents) + "\n\n")
	b.WriteString("Invoice (PDF): " + s.PDFURL(r.ID) + "\n")
	if r.PaymentURL != nil {
		b.WriteString("Pay online: " + *r.PaymentURL + "\n")
	}
	if a.SupportEmail != nil {
		b.WriteString("\nQuestions? Write to " + *a.SupportEmail + ".\n")
	}
	return b.String()
}

// defaultReminderTemplate is the reminder body when the account has none.
const defaultReminderTemplate = `Hello {customer_name},

This is a reminder that invoice {number} from {business_name} was due on {due_date}.
Amount due: {amount_due}
Pay online: {payment_url}

If you have already paid, please ignore this message.`

func (s *Service) reminderText(r *record, a *Account) string {
	tpl := defaultReminderTemplate
	if a.Reminders.Template != nil && strings.TrimSpace(*a.Reminders.Template) != "" {
		tpl = *a.Reminders.Template
	}
	link := s.PDFURL(r.ID)
	if r.PaymentURL != nil {
		link = *r.PaymentURL
	}
	return strings.NewReplacer("{customer_name}", r.CustomerName, "{number}", *r.Number,
		"{business_name}", a.BusinessName, "{due_date}", *r.DueDate,
		"{amount_due}", formatAmount(r.Currency, r.AmountDueCents), "{payment_url}", link).Replace(tpl)
}

// Remind sends a reminder for an open invoice now (POST .../remind and the
// invoice.remind capability), whatever the schedule says.
func (s *Service) Remind(ctx context.Context, tenant, id string, in SendIn) (*Invoice, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	inv, acct, err := s.prepareReminder(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	to := inv.CustomerEmail
	if in.To != nil {
		to = in.To
	}
	if to == nil {
		return nil, errs.Invalidf(loc("to"), "missing", "the customer has no email address; give to")
	}
	n := inv.RemindersSent + 1
	if err := s.mail(ctx, tenant, "invoice-reminder/"+id+"/"+itoa(n), []string{*to}, "Reminder: invoice "+*inv.Number+" is due",
		s.reminderText(inv, acct)); err != nil {
		return nil, err
	}
	var out *Invoice
	err = s.st.Update(ctx, func(tx store.Txn) error {
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		s.noteReminder(r, *to)
		out = r.out()
		return invoices.Put(tx, tenant, r)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// prepareReminder gives an open invoice its payment link and returns it.
func (s *Service) prepareReminder(ctx context.Context, tenant, id string) (*record, *Account, error) {
	var r *record
	var a *Account
	err := s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		if r, err = invoices.Get(tx, tenant, id); err != nil {
			return err
		}
		if r.Status != StatusOpen {
			return stateConflict(r, "remind")
		}
		if a, err = s.account(ctx, tx, tenant); err != nil {
			return err
		}
		return s.ensureLink(tx, tenant, r, a)
	})
	return r, a, err
}

func (s *Service) noteReminder(r *record, to string) {
	r.RemindersSent++
	if r.Collection == CollectionOverdue {
		r.Collection = CollectionReminding
	}
	r.event(s.now(), EventReminderSent, ptr("to "+to))
}

// collect moves an open invoice's collection on when its timer is due:
// overdue once its due date has passed (emitting invoicing.invoice.overdue),
// then a reminder on each day of the account's schedule that has come
// (one email when several came while the engine was closed). A paid,
// void or uncollectible invoice has no timer; one found anyway ends.
func (s *Service) collect(ctx context.Context, t runengine.AppTimer) error {
	tenant, id := t.Tenant, t.Token
	var r *record
	var a *Account
	err := s.st.View(ctx, func(rd store.Reader) error {
		var err error
		if r, err = invoices.Get(rd, tenant, id); err != nil {
			return err
		}
		a, err = s.account(ctx, rd, tenant)
		return err
	})
	if errors.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.now()
	// The reminder due now, if any: the last day of the schedule that has
	// come, from the next one on.
	due := -1
	if r.Status == StatusOpen && a.Reminders.Enabled && r.DueDate != nil {
		for k := r.NextReminder; k < len(a.Reminders.DaysAfterDue); k++ {
			if !reminderAt(r, a.Reminders.DaysAfterDue[k]).After(now) {
				due = k
			}
		}
	}
	sentTo := ""
	if due >= 0 && r.CustomerEmail != nil && s.cfg.Mailer != nil {
		var lr *record
		if lr, a, err = s.prepareReminder(ctx, tenant, id); err != nil {
			if errors.Is(err, errs.Conflict) {
				return nil // no longer open: its timer went with the change
			}
			return err
		}
		err := s.mail(ctx, tenant, "invoice-reminder/"+id+"/day-"+itoa(a.Reminders.DaysAfterDue[due]),
			[]string{*lr.CustomerEmail}, "Reminder: invoice "+*lr.Number+" is overdue", s.reminderText(lr, a))
		switch {
		case err == nil:
			sentTo = *lr.CustomerEmail
		case errors.Is(err, errs.Invalid):
			// The provider refuses this email for good: skip this reminder
			// rather than retry it forever.
			s.log.Warn("invoicing: a reminder was refused", "tenant", tenant, "invoice", id, "error", err.Error())
		default:
			return err // retried by the engine later
		}
	}
	err = s.st.Update(ctx, func(tx store.Txn) error {
		if err := t.Clear(tx); err != nil {
			return err
		}
		r, err := invoices.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if r.Status != StatusOpen || r.DueDate == nil {
			return nil
		}
		now := s.now()
		// This was the invoice's one collection timer (or the engine's retry
		// of it): cleared above.
		r.NextCollectionAt = nil
		if r.Collection == CollectionCurrent && !overdueAt(r).After(now) {
			r.Collection = CollectionOverdue
			r.event(now, EventOverdue, nil)
			if err := s.emit(tx, tenant, BusOverdue, r, nil); err != nil {
				return err
			}
		}
		if due >= 0 && due >= r.NextReminder {
			if sentTo != "" {
				s.noteReminder(r, sentTo)
			}
			r.NextReminder = due + 1
		}
		next := time.Time{}
		switch {
		case r.Collection == CollectionCurrent:
			next = overdueAt(r)
		case a.Reminders.Enabled && r.NextReminder < len(a.Reminders.DaysAfterDue):
			next = reminderAt(r, a.Reminders.DaysAfterDue[r.NextReminder])
		}
		if !next.IsZero() {
			if err := s.schedule(tx, tenant, r, next); err != nil {
				return err
			}
		}
		return invoices.Put(tx, tenant, r)
	})
	if err == nil {
		s.cfg.Events.Kick()
	}
	return err
}

// ---- Payment links (simulated checkout) -------------------------------------

// Checkout is what a payment link shows the payer.
type Checkout struct {
	Number         string  `json:"number"`
	Status         string  `json:"status"`
	BusinessName   string  `json:"business_name"`
	SupportEmail   *string `json:"support_email"`
	CustomerName   string  `json:"customer_name"`
	Currency       string  `json:"currency"`
	TotalCents     int64   `json:"total_cents"`
	AmountDueCents int64   `json:"amount_due_cents"`
	DueDate        string  `json:"due_date"`
	ExpiresAt      string  `json:"expires_at"`
}

// byToken resolves a payment link to its tenant and invoice; an unknown or
// expired link is a 404.
func (s *Service) byToken(r store.Reader, token string) (string, *record, error) {
	notFound := errs.NotFoundf("payment link not found or expired")
	if !strings.HasPrefix(token, "pl_") || len(token) > 100 {
		return "", nil, notFound
	}
	raw, err := r.Get(tokenKey(token))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, notFound
	}
	if err != nil {
		return "", nil, err
	}
	tenant, id, _ := strings.Cut(string(raw), "\x00")
	rec, err := invoices.Get(r, tenant, id)
	if errors.Is(err, errs.NotFound) || (err == nil && rec.Token != token) {
		return "", nil, notFound
	}
	if err != nil {
		return "", nil, err
	}
	if exp, perr := time.Parse(time.RFC3339, *rec.PaymentLinkExpiresAt); perr != nil || !s.now().Before(exp) {
		return "", nil, notFound
	}
	return tenant, rec, nil
}

// PaymentLink returns what the payment link token shows.
func (s *Service) PaymentLink(ctx context.Context, token string) (*Checkout, error) {
	var out *Checkout
	err := s.st.View(ctx, func(r store.Reader) error {
		tenant, rec, err := s.byToken(r, token)
		if err != nil {
			return err
		}
		a, err := s.account(ctx, r, tenant)
		if err != nil {
			return err
		}
		out = &Checkout{Number: *rec.Number, Status: rec.Status, BusinessName: a.BusinessName, SupportEmail: a.SupportEmail,
			CustomerName: rec.CustomerName, Currency: rec.Currency, TotalCents: rec.TotalCents,
			AmountDueCents: rec.AmountDueCents, DueDate: *rec.DueDate, ExpiresAt: *rec.PaymentLinkExpiresAt}
		return nil
	})
	return out, err
}

// PaymentLinkPDF returns the PDF of the invoice a payment link names.
func (s *Service) PaymentLinkPDF(ctx context.Context, token string) ([]byte, string, error) {
	var tenant, id string
	err := s.st.View(ctx, func(r store.Reader) error {
		t, rec, err := s.byToken(r, token)
		tenant, id = t, ""
		if rec != nil {
			id = rec.ID
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return s.PDF(ctx, tenant, id)
}

// declinedCard is the test card that is always declined.
const declinedCard = "4000000000000002"

// PayByLink is the simulated checkout of a payment link: the card pays the
// whole amount due, recorded exactly as a payments provider's webhook
// would record it (method card, a charge reference). The declined test
// card is a 402-like refusal reported as a 422 on card_number; a link of
// an invoice no longer open is a 409.
func (s *Service) PayByLink(ctx context.Context, token string, in CheckoutIn) (*Checkout, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if in.CardNumber == declinedCard {
		return nil, errs.Invalidf(loc("card_number"), "value_error", "the card was declined")
	}
	err := s.st.Update(ctx, func(tx store.Txn) error {
		t, r, err := s.byToken(tx, token)
		if err != nil {
			return err
		}
		if r.Status != StatusOpen {
			return errs.Conflictf("invoice is already %s", r.Status)
		}
		ref := s.ids.New("ch_sim", s.now())
		if err := s.pay(tx, t, r, PayIn{AmountCents: r.AmountDueCents, Method: "card", Reference: &ref}, ""); err != nil {
			return err
		}
		return invoices.Put(tx, t, r)
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Events.Kick()
	return s.PaymentLink(ctx, token)
}
