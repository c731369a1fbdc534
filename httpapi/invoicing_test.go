package httpapi_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/apps/invoicing"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/google/go-cmp/cmp"
)

// invoiceOut is the part of InvoiceOut the tests read.
type invoiceOut struct {
	ID               string  `json:"id"`
	Number           *string `json:"number"`
	Status           string  `json:"status"`
	Collection       string  `json:"collection"`
	CustomerID       string  `json:"customer_id"`
	CustomerName     string  `json:"customer_name"`
	Currency         string  `json:"currency"`
	SubtotalCents    int64   `json:"subtotal_cents"`
	TaxCents         int64   `json:"tax_cents"`
	TotalCents       int64   `json:"total_cents"`
	AmountPaidCents  int64   `json:"amount_paid_cents"`
	AmountDueCents   int64   `json:"amount_due_cents"`
	DueDate          *string `json:"due_date"`
	PaymentURL       *string `json:"payment_url"`
	RemindersSent    int     `json:"reminders_sent"`
	NextCollectionAt *string `json:"next_collection_at"`
	Lines            []struct {
		AmountCents int64 `json:"amount_cents"`
		TaxCents    int64 `json:"tax_cents"`
	} `json:"lines"`
	Payments []struct {
		AmountCents int64 `json:"amount_cents"`
	} `json:"payments"`
	Events []struct {
		Type string  `json:"type"`
		Note *string `json:"note"`
	} `json:"events"`
}

func (inv invoiceOut) eventTypes() []string {
	var out []string
	for _, e := range inv.Events {
		out = append(out, e.Type)
	}
	return out
}

type customerOut struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Email        *string        `json:"email"`
	CompanyID    *string        `json:"company_id"`
	Address      map[string]any `json:"address"`
	BalanceCents int64          `json:"balance_cents"`
}

type outboxMsg struct {
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Body    string   `json:"body"`
}

func (s *testServer) customer(t *testing.T, token, body string) customerOut {
	t.Helper()
	var c customerOut
	s.do(t, "POST", "/v1/invoicing/customers", token, body).want(t, http.StatusCreated).decode(t, &c)
	return c
}

func (s *testServer) getCustomer(t *testing.T, token, id string) customerOut {
	t.Helper()
	var c customerOut
	s.do(t, "GET", "/v1/invoicing/customers/"+id, token, nil).want(t, http.StatusOK).decode(t, &c)
	return c
}

func (s *testServer) draft(t *testing.T, token, customerID, extra string) invoiceOut {
	t.Helper()
	var inv invoiceOut
	body := fmt.Sprintf(`{"customer_id": %q, "lines": [{"description": "Consulting", "quantity": 2, "unit_amount_cents": 5000}]%s}`, customerID, extra)
	s.do(t, "POST", "/v1/invoicing/invoices", token, body).want(t, http.StatusCreated).decode(t, &inv)
	return inv
}

func (s *testServer) invoiceAction(t *testing.T, token, id, action string, body any, status int) invoiceOut {
	t.Helper()
	var inv invoiceOut
	r := s.do(t, "POST", "/v1/invoicing/invoices/"+id+"/"+action, token, body).want(t, status)
	if status == http.StatusOK {
		r.decode(t, &inv)
	}
	return inv
}

func (s *testServer) getInvoice(t *testing.T, token, id string) invoiceOut {
	t.Helper()
	var inv invoiceOut
	s.do(t, "GET", "/v1/invoicing/invoices/"+id, token, nil).want(t, http.StatusOK).decode(t, &inv)
	return inv
}

// awaitInvoice polls an invoice until cond holds (timers fire on the
// engine's goroutines after the clock moves).
func (s *testServer) awaitInvoice(t *testing.T, token, id, what string, cond func(invoiceOut) bool) invoiceOut {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		inv := s.getInvoice(t, token, id)
		if cond(inv) {
			return inv
		}
		if time.Now().After(deadline) {
			t.Fatalf("invoice %s never %s: %+v", id, what, inv)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *testServer) outbox(t *testing.T, token string) []outboxMsg {
	t.Helper()
	var out []outboxMsg
	s.do(t, "GET", "/v1/outbox?limit=200", token, nil).want(t, http.StatusOK).decode(t, &out)
	return out
}

// mailsAbout counts the outbox messages whose subject names number.
func (s *testServer) mailsAbout(t *testing.T, token, number string) int {
	t.Helper()
	n := 0
	for _, m := range s.outbox(t, token) {
		if strings.Contains(m.Subject, number) {
			n++
		}
	}
	return n
}

// TestInvoicingLifecycle walks an invoice from draft to paid and checks
// every amount, the customer's balance, the email, the PDF and the
// history on the way.
func TestInvoicingLifecycle(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	s.do(t, "PATCH", "/v1/invoicing/account", admin, `{"business_name": "Acme Consulting", "support_email": "billing@acme.example",
	  "tax": {"default_rate_percent": 20, "tax_id": "GB123456789"}}`).want(t, http.StatusOK)
	c := s.customer(t, admin, `{"name": "Globex Ltd", "email": "ap@globex.example", "phone": "+44 20 7946 0000",
	  "address": {"line1": "1 High St", "city": "London", "postal_code": "EC1A 1AA"}}`)
	if c.Address["country"] != "US" {
		t.Errorf("address country defaults to %v", c.Address["country"])
	}
	var inv invoiceOut
	resp := s.do(t, "POST", "/v1/invoicing/invoices", admin, fmt.Sprintf(`{"customer_id": %q, "memo": "Thank you",
	  "lines": [{"description": "Design work", "quantity": 3, "unit_amount_cents": 12345},
	            {"description": "Hosting", "quantity": 1, "unit_amount_cents": 999, "tax_rate_percent": 8.875}]}`, c.ID)).
		want(t, http.StatusCreated)
	resp.decode(t, &inv)
	if loc := resp.Header.Get("Location"); loc != "/api/v1/invoicing/invoices/"+inv.ID {
		t.Errorf("Location %q", loc)
	}
	// 3 x 123.45 = 370.35 at 20% = 74.07; 9.99 at 8.875% = 0.8866 -> 0.89.
	want := invoiceOut{ID: inv.ID, Status: "draft", Collection: "current", CustomerID: c.ID, CustomerName: "Globex Ltd",
		Currency: "USD", SubtotalCents: 38034, TaxCents: 7496, TotalCents: 45530, AmountDueCents: 45530}
	got := inv
	got.Lines, got.Events, got.Payments, got.NextCollectionAt = nil, nil, nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("draft (-want +got):\n%s", diff)
	}
	if inv.Lines[1].TaxCents != 89 || inv.Lines[0].TaxCents != 7407 {
		t.Errorf("line taxes %+v", inv.Lines)
	}
	// A draft changes; its customer's balance does not count it.
	s.do(t, "PATCH", "/v1/invoicing/invoices/"+inv.ID, admin, `{"days_until_due": 30}`).want(t, http.StatusOK)
	if got := s.getCustomer(t, admin, c.ID).BalanceCents; got != 0 {
		t.Errorf("balance of a customer with a draft = %d", got)
	}
	inv = s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
	if inv.Number == nil || *inv.Number != "INV-000001" || inv.Status != "open" || *inv.DueDate != "2025-03-31" {
		t.Errorf("finalized: number %v status %s due %v", inv.Number, inv.Status, inv.DueDate)
	}
	s.do(t, "PATCH", "/v1/invoicing/invoices/"+inv.ID, admin, `{"memo": "late"}`).want(t, http.StatusConflict)
	if got := s.getCustomer(t, admin, c.ID).BalanceCents; got != 45530 {
		t.Errorf("balance after finalize = %d", got)
	}
	inv = s.invoiceAction(t, admin, inv.ID, "send", nil, http.StatusOK)
	if inv.PaymentURL == nil || !strings.HasPrefix(*inv.PaymentURL, "/api/v1/invoicing/pay/pl_") {
		t.Fatalf("payment url %v", inv.PaymentURL)
	}
	mails := s.outbox(t, admin)
	if len(mails) != 1 || mails[0].To[0] != "ap@globex.example" || !strings.Contains(mails[0].Subject, "INV-000001") ||
		!strings.Contains(mails[0].Body, "/api/v1/invoicing/invoices/"+inv.ID+"/pdf") ||
		!strings.Contains(mails[0].Body, *inv.PaymentURL) {
		t.Errorf("sent mail %+v", mails)
	}

	// The PDF reads back with the project's extractor.
	pdf := s.do(t, "GET", "/v1/invoicing/invoices/"+inv.ID+"/pdf", admin, nil).want(t, http.StatusOK)
	if ct := pdf.Header.Get("Content-Type"); ct != "application/pdf" {
		t.Errorf("pdf content type %q", ct)
	}
	pages, err := extract.FromPDF(context.Background(), pdf.Body, extract.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	text := pages[0].Text
	for _, want := range []string{"Invoice INV-000001", "Acme Consulting", "billing@acme.example", "GB123456789",
		"Globex Ltd", "2025-03-31", "Design work", "Hosting", "USD 123.45", "USD 370.35", "8.875%", "20%",
		"USD 380.34", "USD 74.96", "USD 455.30", "Amount due", strings.TrimPrefix(*inv.PaymentURL, "/api")} {
		if !strings.Contains(strings.ReplaceAll(text, "\t", " "), want) {
			t.Errorf("the PDF lacks %q:\n%s", want, text)
		}
	}

	// Partial payment, too much, the rest.
	inv = s.invoiceAction(t, admin, inv.ID, "pay", `{"amount_cents": 30000, "method": "bank_transfer", "reference": "TX-1"}`, http.StatusOK)
	if inv.Status != "open" || inv.AmountPaidCents != 30000 || inv.AmountDueCents != 15530 {
		t.Errorf("after a partial payment: %+v", inv)
	}
	r := s.do(t, "POST", "/v1/invoicing/invoices/"+inv.ID+"/pay", admin, `{"amount_cents": 15531, "method": "card"}`).
		want(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"loc":["body","amount_cents"]`) {
		t.Errorf("overpayment error %s", r.Body)
	}
	s.invoiceAction(t, admin, inv.ID, "void", nil, http.StatusConflict) // something is paid
	inv = s.invoiceAction(t, admin, inv.ID, "pay", `{"amount_cents": 15530, "method": "card"}`, http.StatusOK)
	if inv.Status != "paid" || inv.Collection != "collected" || inv.AmountDueCents != 0 {
		t.Errorf("after the last payment: %+v", inv)
	}
	if got := s.getCustomer(t, admin, c.ID).BalanceCents; got != 0 {
		t.Errorf("balance after payment = %d", got)
	}
	wantEvents := []string{"created", "updated", "finalized", "sent", "payment", "payment", "paid"}
	var evs []struct{ Type string }
	s.do(t, "GET", "/v1/invoicing/invoices/"+inv.ID+"/events", admin, nil).want(t, http.StatusOK).decode(t, &evs)
	var gotEvents []string
	for _, e := range evs {
		gotEvents = append(gotEvents, e.Type)
	}
	if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// Another tenant sees none of it.
	other := s.devLogin(t, `{"tenant_id": "ten_other", "email": "o@other.example", "user_id": "usr_other"}`).Token
	s.do(t, "GET", "/v1/invoicing/invoices/"+inv.ID, other, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/invoicing/customers/"+c.ID, other, nil).want(t, http.StatusNotFound)
	s.do(t, "POST", "/v1/invoicing/invoices/"+inv.ID+"/pay", other, `{"amount_cents": 1, "method": "card"}`).want(t, http.StatusNotFound)
	// A customer with invoices stays; one without goes.
	s.do(t, "DELETE", "/v1/invoicing/customers/"+c.ID, admin, nil).want(t, http.StatusConflict)
	spare := s.customer(t, admin, `{"name": "Spare"}`)
	s.do(t, "DELETE", "/v1/invoicing/customers/"+spare.ID, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/invoicing/customers/"+spare.ID, admin, nil).want(t, http.StatusNotFound)

	// The app's capabilities are filled by builtin.invoicing, no longer gaps.
	var caps []struct {
		ID        string `json:"id"`
		Providers []struct {
			ID string `json:"id"`
		} `json:"providers"`
	}
	s.do(t, "GET", "/v1/capabilities", admin, nil).want(t, http.StatusOK).decode(t, &caps)
	filled := map[string]bool{}
	for _, c := range caps {
		for _, p := range c.Providers {
			if p.ID == "builtin.invoicing" {
				filled[c.ID] = true
			}
		}
	}
	for _, id := range []string{"customer.create", "invoice.create", "invoice.finalize", "invoice.send", "invoice.remind",
		"invoice.void", "invoice.get", "payment.request"} {
		if !filled[id] {
			t.Errorf("%s is not filled by builtin.invoicing", id)
		}
	}
}

// TestInvoicingTransitions tries every action from every status.
func TestInvoicingTransitions(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	c := s.customer(t, admin, `{"name": "Initech", "email": "ap@initech.example"}`)
	// make returns an invoice in the status.
	make := func(status string) string {
		inv := s.draft(t, admin, c.ID, "")
		switch status {
		case "open":
			s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
		case "partly_paid":
			s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
			s.invoiceAction(t, admin, inv.ID, "pay", `{"amount_cents": 100, "method": "cash"}`, http.StatusOK)
		case "paid":
			s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
			s.invoiceAction(t, admin, inv.ID, "pay", `{"amount_cents": 10000, "method": "cash"}`, http.StatusOK)
		case "void":
			s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
			s.invoiceAction(t, admin, inv.ID, "void", nil, http.StatusOK)
		case "uncollectible":
			s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
			s.invoiceAction(t, admin, inv.ID, "mark-uncollectible", `{"note": "gone"}`, http.StatusOK)
		}
		return inv.ID
	}
	pay := `{"amount_cents": 100, "method": "card"}`
	for _, test := range []struct {
		from, action string
		body         any
		want         int
		wantStatus   string
	}{
		{"draft", "finalize", nil, 200, "open"},
		{"draft", "send", nil, 409, "draft"},
		{"draft", "pay", pay, 409, "draft"},
		{"draft", "void", nil, 409, "draft"},
		{"draft", "mark-uncollectible", nil, 409, "draft"},
		{"draft", "remind", nil, 409, "draft"},
		{"open", "finalize", nil, 409, "open"},
		{"open", "send", nil, 200, "open"},
		{"open", "pay", pay, 200, "open"},
		{"open", "void", nil, 200, "void"},
		{"open", "mark-uncollectible", nil, 200, "uncollectible"},
		{"open", "remind", nil, 200, "open"},
		{"partly_paid", "void", nil, 409, "open"},
		{"partly_paid", "mark-uncollectible", nil, 200, "uncollectible"},
		{"paid", "finalize", nil, 409, "paid"},
		{"paid", "send", nil, 409, "paid"},
		{"paid", "pay", pay, 409, "paid"},
		{"paid", "void", nil, 409, "paid"},
		{"paid", "mark-uncollectible", nil, 409, "paid"},
		{"void", "pay", pay, 409, "void"},
		{"void", "send", nil, 409, "void"},
		{"void", "void", nil, 409, "void"},
		{"void", "finalize", nil, 409, "void"},
		{"uncollectible", "pay", pay, 409, "uncollectible"},
		{"uncollectible", "void", nil, 409, "uncollectible"},
		{"uncollectible", "mark-uncollectible", nil, 409, "uncollectible"},
	} {
		id := make(test.from)
		s.do(t, "POST", "/v1/invoicing/invoices/"+id+"/"+test.action, admin, test.body).want(t, test.want)
		if got := s.getInvoice(t, admin, id).Status; got != test.wantStatus {
			t.Errorf("%s from %s: status %s, want %s", test.action, test.from, got, test.wantStatus)
		}
		if test.from != "draft" {
			s.do(t, "PATCH", "/v1/invoicing/invoices/"+id, admin, `{"memo": "x"}`).want(t, http.StatusConflict)
		}
	}
	// Balances follow: open invoices only.
	var open []invoiceOut
	s.do(t, "GET", "/v1/invoicing/invoices?status=open&customer_id="+c.ID+"&limit=200", admin, nil).want(t, http.StatusOK).decode(t, &open)
	var due int64
	for _, inv := range open {
		due += inv.AmountDueCents
	}
	if got := s.getCustomer(t, admin, c.ID).BalanceCents; got != due {
		t.Errorf("balance %d, open invoices owe %d", got, due)
	}
	s.do(t, "GET", "/v1/invoicing/invoices?status=lost", admin, nil).want(t, http.StatusUnprocessableEntity)
}

// TestInvoicingMoney checks amounts at their edges: rounding half up,
// zero lines, 500 lines, and the largest amounts int64 holds.
func TestInvoicingMoney(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	c := s.customer(t, admin, `{"name": "Money Corp"}`)
	line := func(q, unit int64, rate string) string {
		l := fmt.Sprintf(`{"description": "x", "quantity": %d, "unit_amount_cents": %d`, q, unit)
		if rate != "" {
			l += `, "tax_rate_percent": ` + rate
		}
		return l + "}"
	}
	many := func(n int) string {
		ls := make([]string, n)
		for i := range ls {
			ls[i] = line(1, 1, "")
		}
		return strings.Join(ls, ",")
	}
	const max = math.MaxInt64
	for _, test := range []struct {
		name      string
		lines     string
		want      int
		wantTotal int64
		wantTax   int64
		wantLoc   string
	}{
		{"half a cent rounds up", line(1, 50, "1"), 201, 51, 1, ""},
		{"just under half rounds down", line(1, 49, "1"), 201, 49, 0, ""},
		{"one and a half cents rounds up", line(1, 150, "1"), 201, 152, 2, ""},
		{"three decimals", line(1, 1000, "8.875"), 201, 1089, 89, ""},
		{"zero-amount line", line(3, 0, "20"), 201, 0, 0, ""},
		{"zero rate", line(1, 100, "0"), 201, 100, 0, ""},
		{"full rate", line(1, 100, "100"), 201, 200, 100, ""},
		{"500 lines", many(500), 201, 500, 0, ""},
		{"501 lines", many(501), 422, 0, 0, `"loc":["body","lines"]`},
		{"no lines", "", 422, 0, 0, `"loc":["body","lines"]`},
		{"the largest amount", line(1, max, "0"), 201, max, 0, ""},
		{"the largest product", line(7, max/7, ""), 201, max / 7 * 7, 0, ""},
		{"a product past it", line(2, max/2+1, ""), 422, 0, 0, `"loc":["body","lines",0,"unit_amount_cents"]`},
		{"a total past it", line(1, max, "0") + "," + line(1, 1, "0"), 422, 0, 0, `"loc":["body","lines"]`},
		{"tax that pushes the total past it", line(1, max-1, "0.001"), 422, 0, 0, `"loc":["body","lines"]`},
		{"the largest total with tax", line(1, max-101, "") + "," + line(1, 100, "1"), 201, max, 1, ""},
		{"four decimals", line(1, 100, "1.2345"), 422, 0, 0, `"loc":["body","lines",0,"tax_rate_percent"]`},
		{"rate over 100", line(1, 100, "100.001"), 422, 0, 0, `"tax_rate_percent"`},
		{"negative rate", line(1, 100, "-1"), 422, 0, 0, `"tax_rate_percent"`},
		{"quantity 0", line(0, 100, ""), 422, 0, 0, `"loc":["body","lines",0,"quantity"]`},
		{"negative unit", line(1, -1, ""), 422, 0, 0, `"loc":["body","lines",0,"unit_amount_cents"]`},
		{"an amount past int64", `{"description": "x", "quantity": 1, "unit_amount_cents": 9223372036854775808}`, 422, 0, 0, `"unit_amount_cents"`},
	} {
		t.Run(test.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"customer_id": %q, "lines": [%s]}`, c.ID, test.lines)
			r := s.do(t, "POST", "/v1/invoicing/invoices", admin, body).want(t, test.want)
			if test.want != 201 {
				if !strings.Contains(string(r.Body), test.wantLoc) {
					t.Errorf("error %s lacks %s", r.Body, test.wantLoc)
				}
				return
			}
			var inv invoiceOut
			r.decode(t, &inv)
			if inv.TotalCents != test.wantTotal || inv.TaxCents != test.wantTax || inv.AmountDueCents != test.wantTotal {
				t.Errorf("total %d tax %d due %d, want total %d tax %d", inv.TotalCents, inv.TaxCents, inv.AmountDueCents,
					test.wantTotal, test.wantTax)
			}
		})
	}
	// Bounds of the other fields, each just inside and just outside.
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, test := range []struct {
		name, body string
		want       int
		wantLoc    string
	}{
		{"days 0", `"days_until_due": 0`, 201, ""},
		{"days 365", `"days_until_due": 365`, 201, ""},
		{"days 366", `"days_until_due": 366`, 422, `"days_until_due"`},
		{"days -1", `"days_until_due": -1`, 422, `"days_until_due"`},
		{"due date", `"due_date": "2025-04-01"`, 201, ""},
		{"bad due date", `"due_date": "2025-02-30"`, 422, `"due_date"`},
		{"memo 2000", `"memo": "` + long(2000) + `"`, 201, ""},
		{"memo 2001", `"memo": "` + long(2001) + `"`, 422, `"memo"`},
		{"unknown currency", `"currency": "ABC"`, 422, `"currency"`},
		{"lower-case currency", `"currency": "usd"`, 422, `"currency"`},
		{"another currency", `"currency": "JPY"`, 201, ""},
		{"description 500", `"lines": [{"description": "` + long(500) + `", "quantity": 1, "unit_amount_cents": 1}]`, 201, ""},
		{"description 501", `"lines": [{"description": "` + long(501) + `", "quantity": 1, "unit_amount_cents": 1}]`, 422, `"description"`},
		{"every violation at once", `"days_until_due": 400, "memo": "` + long(2001) + `", "currency": "usd"`, 422,
			`"days_until_due"`},
	} {
		t.Run(test.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"customer_id": %q, "lines": [%s], %s}`, c.ID, line(1, 100, ""), test.body)
			if strings.HasPrefix(test.body, `"lines"`) {
				body = fmt.Sprintf(`{"customer_id": %q, %s}`, c.ID, test.body)
			}
			r := s.do(t, "POST", "/v1/invoicing/invoices", admin, body).want(t, test.want)
			if test.want != 201 && !strings.Contains(string(r.Body), test.wantLoc) {
				t.Errorf("error %s lacks %s", r.Body, test.wantLoc)
			}
			if test.name == "every violation at once" {
				for _, l := range []string{`"days_until_due"`, `"memo"`, `"currency"`} {
					if !strings.Contains(string(r.Body), l) {
						t.Errorf("error %s lacks %s", r.Body, l)
					}
				}
			}
		})
	}
	for _, test := range []struct {
		name, body string
		want       int
	}{
		{"name 200", `{"name": "` + long(200) + `"}`, 201},
		{"name 201", `{"name": "` + long(201) + `"}`, 422},
		{"empty name", `{"name": ""}`, 422},
		{"phone 40", `{"name": "a", "phone": "` + long(40) + `"}`, 201},
		{"phone 41", `{"name": "a", "phone": "` + long(41) + `"}`, 422},
		{"bad email", `{"name": "a", "email": "not-an-email"}`, 422},
		{"bad country", `{"name": "a", "address": {"country": "usa"}}`, 422},
	} {
		t.Run("customer "+test.name, func(t *testing.T) {
			s.do(t, "POST", "/v1/invoicing/customers", admin, test.body).want(t, test.want)
		})
	}
	// A customer of another tenant is no customer.
	s.do(t, "POST", "/v1/invoicing/invoices", admin, `{"customer_id": "cus_missing", "lines": [`+line(1, 1, "")+`]}`).
		want(t, http.StatusUnprocessableEntity)
}

// TestInvoicingConcurrentFinalize: 50 finalizes at once get 50 distinct,
// consecutive numbers.
func TestInvoicingConcurrentFinalize(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	c := s.customer(t, admin, `{"name": "Busy Inc"}`)
	const n = 50
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.draft(t, admin, c.ID, "").ID
	}
	numbers := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			var inv invoiceOut
			r := s.do(t, "POST", "/v1/invoicing/invoices/"+ids[i]+"/finalize", admin, nil)
			if r.Status != http.StatusOK {
				t.Errorf("finalize %d: %d %s", i, r.Status, r.Body)
				return
			}
			r.decode(t, &inv)
			numbers[i] = *inv.Number
		})
	}
	wg.Wait()
	sort.Strings(numbers)
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("INV-%06d", i+1)
	}
	if diff := cmp.Diff(want, numbers); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
	if got := s.getCustomer(t, admin, c.ID).BalanceCents; got != n*10000 {
		t.Errorf("balance %d, want %d", got, n*10000)
	}
}

// TestInvoicingCollection: the clock makes an invoice overdue and sends
// the account's reminders; a paid invoice gets none.
func TestInvoicingCollection(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	// A key, not a session: sessions end before the month this test spans.
	admin := s.newKey(t, s.devLogin(t, `{}`).Token, `{"name": "collection", "roles": ["admin"]}`).Secret
	s.do(t, "PATCH", "/v1/invoicing/account", admin, `{"reminders": {"enabled": true, "days_after_due": [1, 3],
	  "template": "Dear {customer_name}, {number} ({amount_due}) was due {due_date}. Pay: {payment_url}"}}`).want(t, http.StatusOK)
	c := s.customer(t, admin, `{"name": "Late Payer", "email": "late@payer.example"}`)
	late := s.draft(t, admin, c.ID, `, "days_until_due": 2`)
	late = s.invoiceAction(t, admin, late.ID, "finalize", nil, http.StatusOK)
	s.invoiceAction(t, admin, late.ID, "send", nil, http.StatusOK)
	prompt := s.draft(t, admin, c.ID, `, "days_until_due": 2`)
	prompt = s.invoiceAction(t, admin, prompt.ID, "finalize", nil, http.StatusOK)
	if *late.DueDate != "2025-03-03" || late.NextCollectionAt == nil || *late.NextCollectionAt != "2025-03-04T00:00:00Z" {
		t.Fatalf("due %v, next collection %v", *late.DueDate, late.NextCollectionAt)
	}
	// The prompt payer pays before the due date: no timer is left.
	prompt = s.invoiceAction(t, admin, prompt.ID, "pay", `{"amount_cents": 10000, "method": "card"}`, http.StatusOK)
	if prompt.NextCollectionAt != nil || prompt.Collection != "collected" {
		t.Errorf("paid invoice: collection %s, next %v", prompt.Collection, prompt.NextCollectionAt)
	}
	// On the due date itself nothing happens.
	s.clock.Advance(2*24*time.Hour + 14*time.Hour + 59*time.Minute) // 2025-03-03T23:59
	if inv := s.getInvoice(t, admin, late.ID); inv.Collection != "current" {
		t.Errorf("on the due date: %s", inv.Collection)
	}
	// At midnight: overdue, and the day-1 reminder.
	s.clock.Advance(time.Minute)
	inv := s.awaitInvoice(t, admin, late.ID, "reminded once", func(inv invoiceOut) bool { return inv.RemindersSent == 1 })
	if diff := cmp.Diff([]string{"created", "finalized", "sent", "overdue", "reminder_sent"}, inv.eventTypes()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if inv.Collection != "reminding" || inv.NextCollectionAt == nil || *inv.NextCollectionAt != "2025-03-06T00:00:00Z" {
		t.Errorf("collection %s, next %v", inv.Collection, inv.NextCollectionAt)
	}
	var reminder *outboxMsg
	for _, m := range s.outbox(t, admin) {
		if strings.HasPrefix(m.Subject, "Reminder") {
			reminder = &m
		}
	}
	if reminder == nil || reminder.Body != "Dear Late Payer, INV-000001 (USD 100.00) was due 2025-03-03. Pay: "+*inv.PaymentURL {
		t.Errorf("reminder %+v", reminder)
	}
	s.clock.Advance(2 * 24 * time.Hour)
	inv = s.awaitInvoice(t, admin, late.ID, "reminded twice", func(inv invoiceOut) bool { return inv.RemindersSent == 2 })
	if inv.NextCollectionAt != nil {
		t.Errorf("a timer after the last reminder: %v", *inv.NextCollectionAt)
	}
	// Paying ends it: the payment link's checkout, as a payments webhook.
	token := (*inv.PaymentURL)[strings.LastIndexByte(*inv.PaymentURL, '/')+1:]
	s.do(t, "POST", "/v1/invoicing/pay/"+token, "", `{"card_number": "4000000000000002"}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", "/v1/invoicing/pay/"+token, "", `{"card_number": "4242424242424242"}`).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/invoicing/pay/"+token, "", `{"card_number": "4242424242424242"}`).want(t, http.StatusConflict)
	inv = s.getInvoice(t, admin, late.ID)
	if inv.Status != "paid" || inv.Collection != "collected" || len(inv.Payments) != 1 {
		t.Errorf("after checkout: %+v", inv)
	}
	// The link of a paid invoice still answers (status paid); an unknown one is 404.
	s.do(t, "GET", "/v1/invoicing/pay/pl_unknown", "", nil).want(t, http.StatusNotFound)
	pdf := s.do(t, "GET", "/v1/invoicing/pay/"+token+"/pdf", "", nil).want(t, http.StatusOK)
	if pages, err := extract.FromPDF(context.Background(), pdf.Body, extract.Budget{}); err != nil || !strings.Contains(pages[0].Text, "INV-000001") {
		t.Errorf("the link's PDF: %v", err)
	}
	s.clock.Advance(30 * 24 * time.Hour)
	// Past its lifetime the link is gone.
	s.do(t, "GET", "/v1/invoicing/pay/"+token, "", nil).want(t, http.StatusNotFound)
	if n := s.mailsAbout(t, admin, *prompt.Number); n != 0 {
		t.Errorf("%d mails about the invoice paid on time", n)
	}
	if n := s.mailsAbout(t, admin, *late.Number); n != 3 {
		t.Errorf("%d mails about the late invoice, want the invoice and 2 reminders", n)
	}
}

// TestInvoicingPayIdempotent: a payment repeated with the same
// Idempotency-Key pays once, also when the first answer was lost after the
// payment committed (a crash between payment and response).
func TestInvoicingPayIdempotent(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	sess := s.devLogin(t, `{}`)
	admin := sess.Token
	c := s.customer(t, admin, `{"name": "Twice Ltd"}`)
	inv := s.draft(t, admin, c.ID, "")
	s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
	body := `{"amount_cents": 4000, "method": "card"}`
	var a, b invoiceOut
	s.do(t, "POST", "/v1/invoicing/invoices/"+inv.ID+"/pay", admin, body, "Idempotency-Key", "pay-1").want(t, http.StatusOK).decode(t, &a)
	s.do(t, "POST", "/v1/invoicing/invoices/"+inv.ID+"/pay", admin, body, "Idempotency-Key", "pay-1").want(t, http.StatusOK).decode(t, &b)
	if a.AmountPaidCents != 4000 || b.AmountPaidCents != 4000 {
		t.Errorf("paid %d then %d", a.AmountPaidCents, b.AmountPaidCents)
	}
	// The crash: the payment committed, the answer (and the HTTP layer's
	// record of it) never did. The retry with the key pays nothing more.
	ctx := context.Background()
	if _, err := wiring.Of(s.ws.Internal()).Invoicing().Pay(ctx, sess.TenantID, inv.ID, invoicing.PayIn{AmountCents: 1000, Method: "card"},
		invoicing.PayKey("", sess.UserID, "pay-2")); err != nil {
		t.Fatal(err)
	}
	var after invoiceOut
	s.do(t, "POST", "/v1/invoicing/invoices/"+inv.ID+"/pay", admin, `{"amount_cents": 1000, "method": "card"}`,
		"Idempotency-Key", "pay-2").want(t, http.StatusOK).decode(t, &after)
	if after.AmountPaidCents != 5000 || len(after.Payments) != 2 {
		t.Errorf("after the retry: paid %d in %d payments, want 5000 in 2", after.AmountPaidCents, len(after.Payments))
	}
	if got := s.getCustomer(t, admin, c.ID).BalanceCents; got != 5000 {
		t.Errorf("balance %d", got)
	}
}

// TestInvoicingAccount: the account's defaults, its patch bounds and the
// simulated onboarding the clock completes.
func TestInvoicingAccount(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	type accountOut struct {
		Mode              string  `json:"mode"`
		Status            string  `json:"status"`
		PaymentsAccountID *string `json:"payments_account_id"`
		ChargesEnabled    bool    `json:"charges_enabled"`
		PayoutsEnabled    bool    `json:"payouts_enabled"`
		DefaultCurrency   string  `json:"default_currency"`
		Reminders         struct {
			Enabled      bool  `json:"enabled"`
			DaysAfterDue []int `json:"days_after_due"`
		} `json:"reminders"`
		Tax struct {
			DefaultRatePercent float64 `json:"default_rate_percent"`
			Inclusive          bool    `json:"inclusive"`
		} `json:"tax"`
	}
	// AccountOut and CustomerOut carry exactly interface.md's fields.
	keysOf := func(path, method, body string, status int) []string {
		var m map[string]any
		s.do(t, method, path, admin, body).want(t, status).decode(t, &m)
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	if diff := cmp.Diff([]string{"business_name", "charges_enabled", "default_currency", "mode", "payments_account_id",
		"payouts_enabled", "reminders", "status", "support_email", "tax"}, keysOf("/v1/invoicing/account", "GET", "", 200)); diff != "" {
		t.Errorf("AccountOut keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"address", "balance_cents", "company_id", "created_at", "email", "id", "name",
		"payments_customer_id", "phone"}, keysOf("/v1/invoicing/customers", "POST", `{"name": "Shape"}`, 201)); diff != "" {
		t.Errorf("CustomerOut keys (-want +got):\n%s", diff)
	}
	var a accountOut
	s.do(t, "GET", "/v1/invoicing/account", admin, nil).want(t, http.StatusOK).decode(t, &a)
	if a.Mode != "simulated" || a.Status != "not_connected" || a.DefaultCurrency != "USD" ||
		!a.Reminders.Enabled || len(a.Reminders.DaysAfterDue) != 3 || a.ChargesEnabled {
		t.Errorf("defaults %+v", a)
	}
	for _, test := range []struct {
		body string
		want int
	}{
		{`{"default_currency": "EUR"}`, 200},
		{`{"default_currency": "EUX"}`, 422},
		{`{"support_email": "nope"}`, 422},
		{`{"support_email": null}`, 200},
		{`{"tax": {"default_rate_percent": 100}}`, 200},
		{`{"tax": {"default_rate_percent": 100.001}}`, 422},
		{`{"tax": {"inclusive": true}}`, 422},
		{`{"reminders": {"days_after_due": [1, 365]}}`, 200},
		{`{"reminders": {"days_after_due": [0]}}`, 422},
		{`{"reminders": {"days_after_due": [366]}}`, 422},
		{`{"reminders": {"days_after_due": [3, 2]}}`, 422},
		{`{"reminders": {"days_after_due": [1,2,3,4,5,6,7,8,9,10,11]}}`, 422},
		{`{"business_name": ""}`, 422},
	} {
		s.do(t, "PATCH", "/v1/invoicing/account", admin, test.body).want(t, test.want)
	}
	s.do(t, "POST", "/v1/invoicing/account/connect", admin, nil).want(t, http.StatusOK).decode(t, &a)
	if a.Status != "onboarding" {
		t.Errorf("after connect: %s", a.Status)
	}
	s.clock.Advance(time.Minute)
	deadline := time.Now().Add(20 * time.Second)
	for a.Status != "connected" {
		if time.Now().After(deadline) {
			t.Fatalf("onboarding never completed: %+v", a)
		}
		time.Sleep(5 * time.Millisecond)
		s.do(t, "GET", "/v1/invoicing/account", admin, nil).want(t, http.StatusOK).decode(t, &a)
	}
	if !a.ChargesEnabled || !a.PayoutsEnabled || a.PaymentsAccountID == nil || a.DefaultCurrency != "EUR" {
		t.Errorf("connected %+v", a)
	}
}

// TestInvoicingChasingProcess is interface.md section 1's "chasing a
// receivable": a process started by invoicing.invoice.overdue reminds the
// customer until invoicing.invoice.paid ends it.
func TestInvoicingChasingProcess(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	s.do(t, "PATCH", "/v1/invoicing/account", admin, `{"reminders": {"enabled": false}}`).want(t, http.StatusOK)
	proc := s.createProc(t, admin, `{
	  "name": "Chase receivables", "function": "finance",
	  "trigger": {"type": "event", "event": "invoicing.invoice.overdue"},
	  "steps": [{"key": "chase", "type": "follow_up",
	             "config": {"to": "${trigger.data.customer_email}", "subject": "Chasing ${trigger.data.number}",
	                        "body": "Invoice ${trigger.data.number} is overdue.", "every": "24h", "max_reminders": 10,
	                        "until_event": "invoicing.invoice.paid", "filter": {"invoice_id": "${trigger.data.invoice_id}"}}}]
	}`)
	c := s.customer(t, admin, `{"name": "Slow Co", "email": "ap@slow.example"}`)
	inv := s.draft(t, admin, c.ID, `, "days_until_due": 0`)
	inv = s.invoiceAction(t, admin, inv.ID, "finalize", nil, http.StatusOK)
	s.invoiceAction(t, admin, inv.ID, "send", nil, http.StatusOK)
	s.clock.Advance(15 * time.Hour) // past midnight: overdue
	var runs []string
	deadline := time.Now().Add(20 * time.Second)
	for len(runs) == 0 {
		runs = s.listIDs(t, admin, "/v1/process-runs?process_id="+proc.ID)
		if time.Now().After(deadline) {
			t.Fatal("no chasing run started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.awaitRun(t, admin, runs[0], "waiting", runStatusIs("waiting"))
	chases := func() int {
		n := 0
		for _, m := range s.outbox(t, admin) {
			if m.Subject == "Chasing INV-000001" && m.To[0] == "ap@slow.example" {
				n++
			}
		}
		return n
	}
	if n := chases(); n != 1 {
		t.Fatalf("%d chasing mails at the start", n)
	}
	s.clock.Advance(24 * time.Hour)
	deadline = time.Now().Add(20 * time.Second)
	for chases() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no second chasing mail")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.awaitRun(t, admin, runs[0], "waiting again", func(r runView) bool {
		return r.Status == "waiting" && r.Steps[0].Status == "waiting"
	})
	s.invoiceAction(t, admin, inv.ID, "pay", `{"amount_cents": 10000, "method": "bank_transfer"}`, http.StatusOK)
	run := s.awaitRun(t, admin, runs[0], "completed", runStatusIs("completed"))
	if out, _ := run.step(t, "chase").Output.(map[string]any); out["replied"] != true || out["reminders_sent"] != float64(2) {
		t.Errorf("chase output %v", out)
	}
	s.clock.Advance(72 * time.Hour)
	if n := chases(); n != 2 {
		t.Errorf("%d chasing mails after payment, want 2", n)
	}
}

// TestInvoicingProcessCreatesAndSends: a process creates, finalizes and
// sends an invoice through the builtin.invoicing provider's capabilities.
func TestInvoicingProcessCreatesAndSends(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	s.do(t, "PATCH", "/v1/automation", admin, `{"percent": 100, "max_percent": 100}`).want(t, http.StatusOK)
	c := s.customer(t, admin, `{"name": "Auto Co", "email": "ap@auto.example"}`)
	proc := s.createProc(t, admin, fmt.Sprintf(`{
	  "name": "Bill the customer", "function": "finance", "trigger": {"type": "manual"},
	  "steps": [
	    {"key": "create", "type": "execute", "capability": "invoice.create",
	     "config": {"args": {"customer_id": %q, "lines": [{"description": "${subject.label}", "quantity": 1, "unit_amount_cents": 25000}]}}},
	    {"key": "finalize", "type": "execute", "capability": "invoice.finalize",
	     "config": {"args": {"invoice_id": "${steps.create.invoice_id}"}}},
	    {"key": "send", "type": "execute", "capability": "invoice.send",
	     "config": {"args": {"invoice_id": "${steps.create.invoice_id}"}}}]
	}`, c.ID))
	r := s.startRun(t, admin, proc.ID, "Annual licence")
	for i := 0; i < 3; i++ {
		r = s.awaitRun(t, admin, r.ID, "moving", func(r runView) bool { return r.Status == "completed" || r.Status == "waiting" })
		if r.Status == "completed" {
			break
		}
		for _, st := range r.Steps {
			if st.ApprovalID != nil && st.Status == "waiting_approval" {
				s.do(t, "POST", "/v1/approvals/"+*st.ApprovalID+"/approve", admin, `{}`).want(t, http.StatusOK)
			}
		}
	}
	r = s.awaitRun(t, admin, r.ID, "completed", runStatusIs("completed"))
	out, _ := r.step(t, "send").Output.(map[string]any)
	id, _ := out["invoice_id"].(string)
	inv := s.getInvoice(t, admin, id)
	if inv.Status != "open" || *inv.Number != "INV-000001" || inv.TotalCents != 25000 {
		t.Errorf("invoice %+v", inv)
	}
	if n := s.mailsAbout(t, admin, "INV-000001"); n != 1 {
		t.Errorf("%d mails", n)
	}
}

// TestInvoicingCollectionCatchUp: when the clock jumps past several
// reminder days at once, the invoice becomes overdue and gets one
// reminder, for the latest day; a voided or written-off invoice gets
// nothing.
func TestInvoicingCollectionCatchUp(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.newKey(t, s.devLogin(t, `{}`).Token, `{"name": "catch-up", "roles": ["admin"]}`).Secret
	c := s.customer(t, admin, `{"name": "Away Inc", "email": "ap@away.example"}`)
	late := s.draft(t, admin, c.ID, `, "days_until_due": 0`)
	late = s.invoiceAction(t, admin, late.ID, "finalize", nil, http.StatusOK)
	voided := s.draft(t, admin, c.ID, `, "days_until_due": 0`)
	voided = s.invoiceAction(t, admin, voided.ID, "finalize", nil, http.StatusOK)
	s.invoiceAction(t, admin, voided.ID, "void", `{"note": "sent twice"}`, http.StatusOK)
	written := s.draft(t, admin, c.ID, `, "days_until_due": 0`)
	written = s.invoiceAction(t, admin, written.ID, "finalize", nil, http.StatusOK)
	s.invoiceAction(t, admin, written.ID, "mark-uncollectible", nil, http.StatusOK)
	s.clock.Advance(20 * 24 * time.Hour) // past days 1, 7 and 14 of the default schedule
	inv := s.awaitInvoice(t, admin, late.ID, "caught up", func(inv invoiceOut) bool {
		return inv.RemindersSent == 1 && inv.NextCollectionAt == nil
	})
	if diff := cmp.Diff([]string{"created", "finalized", "overdue", "reminder_sent"}, inv.eventTypes()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, id := range []string{voided.ID, written.ID} {
		got := s.getInvoice(t, admin, id)
		if got.RemindersSent != 0 || got.NextCollectionAt != nil || strings.Contains(strings.Join(got.eventTypes(), ","), "overdue") {
			t.Errorf("%s (%s) was chased: %v", id, got.Status, got.eventTypes())
		}
	}
	if n := s.mailsAbout(t, admin, *late.Number); n != 1 {
		t.Errorf("%d reminders, want 1", n)
	}
	if n := s.mailsAbout(t, admin, *voided.Number) + s.mailsAbout(t, admin, *written.Number); n != 0 {
		t.Errorf("%d mails about closed invoices", n)
	}
}
