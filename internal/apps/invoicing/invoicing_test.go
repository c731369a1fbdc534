package invoicing

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestLineTax(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		amount int64
		rate   float64
		want   int64
		ok     bool
	}{
		{50, 1, 1, true},       // 0.5 -> 1
		{49, 1, 0, true},       // 0.49 -> 0
		{150, 1, 2, true},      // 1.5 -> 2
		{250, 1, 3, true},      // 2.5 -> 3 (half up, not to even)
		{999, 8.875, 89, true}, // 88.66 -> 89
		{1, 50, 1, true},       // 0.5 -> 1
		{0, 20, 0, true},
		{100, 0, 0, true},
		{math.MaxInt64, 100, math.MaxInt64, true}, // a rate <= 100% never overflows
		{math.MaxInt64 / 2, 100, math.MaxInt64 / 2, true},
		{math.MaxInt64, 0.001, 92233720368548, true},
	} {
		milli, ok := rateMilli(test.rate)
		if !ok {
			t.Fatalf("rate %v", test.rate)
		}
		got, ok := lineTax(test.amount, milli)
		if got != test.want || ok != test.ok {
			t.Errorf("lineTax(%d, %v%%) = %d, %v; want %d, %v", test.amount, test.rate, got, ok, test.want, test.ok)
		}
	}
	for _, test := range []struct {
		rate float64
		ok   bool
	}{{8.875, true}, {0.001, true}, {100, true}, {1.2345, false}, {0.0001, false}} {
		if _, ok := rateMilli(test.rate); ok != test.ok {
			t.Errorf("rateMilli(%v) ok = %v", test.rate, ok)
		}
	}
	if _, ok := lineAmount(2, math.MaxInt64/2+1); ok {
		t.Error("an overflowing product fits")
	}
	if got, ok := lineAmount(7, math.MaxInt64/7); !ok || got != math.MaxInt64/7*7 {
		t.Errorf("lineAmount = %d, %v", got, ok)
	}
}

func TestFormatAmount(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		cur   string
		cents int64
		want  string
	}{
		{"USD", 0, "USD 0.00"},
		{"USD", 5, "USD 0.05"},
		{"USD", 123456789, "USD 1,234,567.89"},
		{"USD", math.MaxInt64, "USD 92,233,720,368,547,758.07"},
		{"USD", -150, "USD -1.50"},
		{"JPY", 1234, "JPY 1,234"},
		{"KWD", 1234, "KWD 1.234"},
	} {
		if got := formatAmount(test.cur, test.cents); got != test.want {
			t.Errorf("formatAmount(%s, %d) = %q, want %q", test.cur, test.cents, got, test.want)
		}
	}
}

// TestCRMChecks: company_id and deal_id are checked against the CRM when
// one is wired (422 when missing), and kept unchecked without one.
func TestCRMChecks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.crm.add(t, tenant, "company", "cmp_1")
	b.crm.add(t, tenant, "deal", "dea_1")
	b.crm.add(t, "ten_other", "company", "cmp_2")
	locOf := func(err error) []any {
		vs := errs.Violations(err)
		if len(vs) != 1 {
			t.Fatalf("violations of %v", err)
		}
		return vs[0].Loc
	}
	c := b.customer(t, CustomerIn{Name: "Linked", CompanyID: ptr("cmp_1")})
	for _, id := range []string{"cmp_missing", "cmp_2"} { // another tenant's company is missing too
		_, err := b.s.CreateCustomer(ctx, tenant, CustomerIn{Name: "Unlinked", CompanyID: ptr(id)})
		if diff := cmp.Diff([]any{"company_id"}, locOf(err)); diff != "" {
			t.Errorf("company %s (-want +got):\n%s", id, diff)
		}
	}
	if _, err := b.s.UpdateCustomer(ctx, tenant, c.ID, CustomerPatch{CompanyID: ptr("cmp_missing")}); !errors.Is(err, errs.Invalid) {
		t.Errorf("patch to a missing company: %v", err)
	}
	lines := []LineIn{{Description: "x", Quantity: 1, UnitAmountCents: 100}}
	if _, err := b.s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: c.ID, Lines: lines, DealID: ptr("dea_1")}); err != nil {
		t.Errorf("invoice for a deal: %v", err)
	}
	_, err := b.s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: c.ID, Lines: lines, DealID: ptr("dea_missing")})
	if diff := cmp.Diff([]any{"deal_id"}, locOf(err)); diff != "" {
		t.Errorf("missing deal (-want +got):\n%s", diff)
	}
	// Without a CRM the ids are kept as given.
	plain := New(Config{Store: b.st, Clock: b.clk})
	if _, err := plain.CreateCustomer(ctx, tenant, CustomerIn{Name: "Free", CompanyID: ptr("cmp_anything")}); err != nil {
		t.Errorf("without a CRM: %v", err)
	}
}

// TestCustomerSearch: ?q= finds customers by the start of any word of the
// name or their email, ?company_id= by company; a null in a patch clears.
func TestCustomerSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.crm.add(t, tenant, "company", "cmp_1")
	acme := b.customer(t, CustomerIn{Name: "Acme Widgets", Email: ptr("ap@acme.example"), CompanyID: ptr("cmp_1")})
	wid := b.customer(t, CustomerIn{Name: "Widget World Widgets"})
	b.customer(t, CustomerIn{Name: "Globex"})
	for _, test := range []struct {
		f    CustomerFilter
		want []string
	}{
		{CustomerFilter{Q: "wid"}, []string{wid.ID, acme.ID}}, // "widget" sorts before "widgets"
		{CustomerFilter{Q: "ACME"}, []string{acme.ID}},
		{CustomerFilter{Q: "ap@"}, []string{acme.ID}},
		{CustomerFilter{Q: "zzz"}, nil},
		{CustomerFilter{CompanyID: "cmp_1"}, []string{acme.ID}},
	} {
		got, _, err := b.s.ListCustomers(ctx, tenant, test.f, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range got {
			ids = append(ids, c.ID)
		}
		if diff := cmp.Diff(test.want, ids); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", test.f, diff)
		}
	}
	var p CustomerPatch
	if err := json.Unmarshal([]byte(`{"email": null, "company_id": null, "address": null}`), &p); err != nil {
		t.Fatal(err)
	}
	c, err := b.s.UpdateCustomer(ctx, tenant, acme.ID, p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Email != nil || c.CompanyID != nil || *c.Address.Country != "US" {
		t.Errorf("after clearing: %+v", c)
	}
	if got, _, _ := b.s.ListCustomers(ctx, tenant, CustomerFilter{Q: "ap@"}, store.Page{}); len(got) != 0 {
		t.Errorf("the old email still finds %d", len(got))
	}
}

// TestProvider: a process reaches the app through its capabilities;
// creating calls act once per idempotency key.
func TestProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p := b.s.Provider()
	if info := p.Info(); info.ID != ProviderID || info.Kind != capability.KindBuiltin || len(info.Capabilities) != 8 {
		t.Errorf("info %+v", info)
	}
	var builtin capability.App
	for _, a := range capability.BuiltinApps() {
		if a.ID == "invoicing" {
			builtin = a
		}
	}
	if diff := cmp.Diff(builtin, App()); diff != "" {
		t.Errorf("App() differs from the built-in invoicing app (-builtin +App):\n%s", diff)
	}
	call := func(capID, key, args string) map[string]any {
		t.Helper()
		raw, err := p.Call(ctx, capability.Call{Tenant: tenant, Capability: capID, Args: json.RawMessage(args), IdempotencyKey: key})
		if err != nil {
			t.Fatalf("%s: %v", capID, err)
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	c1 := call(capability.CustomerCreate, "run1/customer/1", `{"name": "Hooli", "email": "ap@hooli.example"}`)
	c2 := call(capability.CustomerCreate, "run1/customer/1", `{"name": "Hooli", "email": "ap@hooli.example"}`)
	if c1["customer_id"] != c2["customer_id"] {
		t.Errorf("a repeated customer.create made %v and %v", c1, c2)
	}
	cid := c1["customer_id"].(string)
	args := `{"customer_id": "` + cid + `", "lines": [{"description": "Plan", "quantity": 1, "unit_amount_cents": 9900}], "send": true}`
	inv := call(capability.InvoiceCreate, "run1/invoice/1", args)
	again := call(capability.InvoiceCreate, "run1/invoice/1", args)
	if inv["status"] != "open" || inv["number"] != "INV-000001" || again["invoice_id"] != inv["invoice_id"] {
		t.Errorf("invoice.create with send: %v then %v", inv, again)
	}
	if !strings.HasPrefix(inv["payment_url"].(string), "https://bas.example/api/v1/invoicing/pay/pl_") {
		t.Errorf("payment url %v", inv["payment_url"])
	}
	if b.mail.count() != 1 {
		t.Errorf("%d mails after create-and-send", b.mail.count())
	}
	id := inv["invoice_id"].(string)
	rem := call(capability.InvoiceRemind, "run1/remind/1", `{"invoice_id": "`+id+`"}`)
	if rem["reminders_sent"] != float64(1) || b.mail.count() != 2 {
		t.Errorf("remind: %v, %d mails", rem, b.mail.count())
	}
	req := call(capability.PaymentRequest, "run1/req/1", `{"amount_cents": 9900, "currency": "USD", "invoice_id": "`+id+`"}`)
	if req["url"] != inv["payment_url"] {
		t.Errorf("payment.request %v", req)
	}
	_, err := p.Call(ctx, capability.Call{Tenant: tenant, Capability: capability.PaymentRequest,
		Args: json.RawMessage(`{"amount_cents": 1, "currency": "USD", "invoice_id": "` + id + `"}`)})
	if !errors.Is(err, errs.Invalid) {
		t.Errorf("a request for another amount: %v", err)
	}
	fresh := call(capability.PaymentRequest, "run1/req/2", `{"amount_cents": 500, "currency": "EUR", "customer_id": "`+cid+`", "email": "pay@hooli.example"}`)
	got, err := b.s.Invoice(ctx, tenant, fresh["payment_request_id"].(string))
	if err != nil || got.Status != StatusOpen || got.TotalCents != 500 || got.Currency != "EUR" || *got.Number != "INV-000002" {
		t.Errorf("payment.request for a customer made %+v, %v", got, err)
	}
	v1 := call(capability.InvoiceVoid, "run1/void/1", `{"invoice_id": "`+id+`", "reason": "duplicate"}`)
	v2 := call(capability.InvoiceVoid, "run1/void/1", `{"invoice_id": "`+id+`", "reason": "duplicate"}`)
	if v1["status"] != "void" || v2["status"] != "void" {
		t.Errorf("void then again: %v, %v", v1, v2)
	}
	// Another tenant's invoice is not found.
	if _, err := p.Call(ctx, capability.Call{Tenant: "ten_other", Capability: capability.InvoiceGet,
		Args: json.RawMessage(`{"invoice_id": "` + id + `"}`)}); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's invoice: %v", err)
	}
}

// TestPaymentsBound: an invoice takes MaxPayments payments, not one more.
func TestPaymentsBound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c := b.customer(t, CustomerIn{Name: "Drip"})
	inv, err := b.s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: c.ID,
		Lines: []LineIn{{Description: "x", Quantity: 1, UnitAmountCents: MaxPayments + 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Finalize(ctx, tenant, inv.ID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxPayments; i++ {
		if _, err := b.s.Pay(ctx, tenant, inv.ID, PayIn{AmountCents: 1, Method: "cash"}, ""); err != nil {
			t.Fatalf("payment %d: %v", i+1, err)
		}
	}
	if _, err := b.s.Pay(ctx, tenant, inv.ID, PayIn{AmountCents: 1, Method: "cash"}, ""); !errors.Is(err, errs.Conflict) {
		t.Errorf("payment %d: %v", MaxPayments+1, err)
	}
	got, err := b.s.Invoice(ctx, tenant, inv.ID)
	if err != nil || got.AmountDueCents != 1 || len(got.Payments) != MaxPayments {
		t.Errorf("after the bound: due %d, %d payments, %v", got.AmountDueCents, len(got.Payments), err)
	}
}

// TestFinalizeNumbersAcrossServices: two services on one store (two
// processes) finalize 50 drafts at once; the store's conflict retry keeps
// the numbers distinct and consecutive.
func TestFinalizeNumbersAcrossServices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other := New(Config{Store: b.st, Clock: b.clk})
	c := b.customer(t, CustomerIn{Name: "Two Doors"})
	const n = 50
	ids := make([]string, n)
	for i := range ids {
		inv, err := b.s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: c.ID,
			Lines: []LineIn{{Description: "x", Quantity: 1, UnitAmountCents: 100}}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = inv.ID
	}
	numbers := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		svc := b.s
		if i%2 == 1 {
			svc = other
		}
		wg.Go(func() {
			inv, err := svc.Finalize(ctx, tenant, ids[i])
			if err != nil {
				t.Errorf("finalize %d: %v", i, err)
				return
			}
			numbers[i] = *inv.Number
		})
	}
	testwait.Wait(t, &wg, "the concurrent finalizations returned")
	sort.Strings(numbers)
	for i, got := range numbers {
		if want := fmt.Sprintf("INV-%06d", i+1); got != want {
			t.Fatalf("numbers %v", numbers)
		}
	}
	got, err := b.s.Customer(ctx, tenant, c.ID)
	if err != nil || got.BalanceCents != n*100 {
		t.Errorf("balance %d, %v", got.BalanceCents, err)
	}
}

// TestValidateLocatesAtFieldNames: the inputs' Validate locates violations
// at their field names (["lines", 0, "quantity"]), not under "body" (the
// HTTP API's prefix).
func TestValidateLocatesAtFieldNames(t *testing.T) {
	t.Parallel()
	days, bad := -1, "x"
	for _, test := range []struct {
		name string
		in   interface{ Validate() []errs.Violation }
		want []string // "loc type"
	}{
		{"customer", CustomerIn{Name: "", Email: &bad}, []string{"name string_too_short", "email value_error"}},
		{"invoice", InvoiceIn{CustomerID: "cus_1", Lines: []LineIn{{Description: "a", Quantity: 0}}, DaysUntilDue: &days},
			[]string{"lines.0.quantity greater_than_equal", "days_until_due greater_than_equal"}},
		{"payment", PayIn{AmountCents: 0, Method: "barter"}, []string{"amount_cents greater_than_equal", "method enum"}},
		{"send", SendIn{To: &bad}, []string{"to value_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, v := range test.in.Validate() {
				got = append(got, v.Where()+" "+v.Type)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}
