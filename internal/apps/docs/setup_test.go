package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/go-pdf/fpdf"
)

// event is one event the recording sink got.
type event struct {
	Tenant string
	Name   string
	Data   map[string]any
}

// recordingSink is a small stand-in for the run engine's outbox: Emit
// writes the event into the store inside the caller's transaction (so an
// event exists exactly when its change was committed) and Kick counts.
type recordingSink struct {
	st    store.Store
	mu    sync.Mutex
	seq   int
	kicks int
}

func (r *recordingSink) Emit(tx store.Txn, tenant, name string, data any) error {
	b, err := json.Marshal(event{Tenant: tenant, Name: name, Data: mustMap(data)})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.seq++
	n := r.seq
	r.mu.Unlock()
	return tx.Set(store.Key(store.System, "test-outbox", n), b)
}

func (r *recordingSink) Kick() {
	r.mu.Lock()
	r.kicks++
	r.mu.Unlock()
}

func mustMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// events returns the committed events in the order they were written.
func (r *recordingSink) events(t *testing.T) []event {
	t.Helper()
	var out []event
	err := r.st.View(context.Background(), func(rd store.Reader) error {
		return rd.Scan(store.ScanOptions{Prefix: store.Key(store.System, "test-outbox")}, func(_, v []byte) error {
			var e event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *recordingSink) names(t *testing.T) []string {
	var out []string
	for _, e := range r.events(t) {
		out = append(out, e.Name)
	}
	return out
}

type bundle struct {
	svc    *Service
	st     store.Store
	clock  *clock.Fake
	sink   *recordingSink
	tenant string
	ctx    context.Context
}

var t0 = time.Date(2024, 2, 5, 9, 0, 0, 0, time.UTC)

func setup(t testing.TB) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fc := clock.NewFake(t0)
	sink := &recordingSink{st: st}
	svc := NewService(Config{Store: st, Clock: fc, Events: sink})
	return &bundle{svc: svc, st: st, clock: fc, sink: sink, tenant: "tnt_a", ctx: context.Background()}
}

// invoiceType makes a type from the supplier invoice template.
func (b *bundle) invoiceType(t testing.TB, mutate func(*DocTypePatch)) *DocType {
	t.Helper()
	typ, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "supplier_invoice"})
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		var p DocTypePatch
		mutate(&p)
		if typ, err = b.svc.UpdateType(b.ctx, b.tenant, typ.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	return typ
}

// invoice is the data of a supplier invoice the tests write as text, CSV
// and PDF.
type invoice struct {
	Supplier, Number, Date, Due, Currency string
	Lines                                 [][4]string // description, qty, unit, amount
	Subtotal, Rate, Tax, Total            string
}

func goodInvoice() invoice {
	return invoice{
		Supplier: "ACME Supplies Ltd", Number: "INV-2024-001", Date: "1 Feb 2024", Due: "2024-03-02", Currency: "EUR",
		Lines:    [][4]string{{"Widgets", "10", "50.00", "500.00"}, {"Gadgets", "2", "250.00", "500.00"}},
		Subtotal: "1,000.00", Rate: "20%", Tax: "200.00", Total: "1,200.00",
	}
}

func (inv invoice) labelLines() []string {
	return []string{
		"Supplier: " + inv.Supplier,
		"Invoice number: " + inv.Number,
		"Invoice date: " + inv.Date,
		"Due date: " + inv.Due,
		"Currency: " + inv.Currency,
	}
}

func (inv invoice) totalLines() []string {
	return []string{"Subtotal: " + inv.Subtotal, "Tax rate: " + inv.Rate, "Tax: " + inv.Tax, "Total: " + inv.Total}
}

func (inv invoice) text() []byte {
	var b bytes.Buffer
	b.WriteString("INVOICE\n\n")
	for _, l := range inv.labelLines() {
		b.WriteString(l + "\n")
	}
	b.WriteString("\nDescription\tQty\tUnit price\tAmount\n")
	for _, l := range inv.Lines {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", l[0], l[1], l[2], l[3])
	}
	b.WriteString("\n")
	for _, l := range inv.totalLines() {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

func (inv invoice) csv() []byte {
	q := func(s string) string { return `"` + s + `"` }
	var b bytes.Buffer
	fmt.Fprintf(&b, "Supplier,%s\nInvoice number,%s\nInvoice date,%s\nDue date,%s\nCurrency,%s\n",
		q(inv.Supplier), inv.Number, inv.Date, inv.Due, inv.Currency)
	fmt.Fprintf(&b, "Subtotal,%s\nTax rate,%s\nTax,%s\nTotal,%s\n", q(inv.Subtotal), inv.Rate, inv.Tax, q(inv.Total))
	b.WriteString("Description,Qty,Unit price,Amount\n")
	for _, l := range inv.Lines {
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", l[0], l[1], l[2], l[3])
	}
	return b.Bytes()
}

func (inv invoice) pdf(t testing.TB) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetCompression(true)
	p.AddPage()
	p.SetFont("Helvetica", "", 11)
	y := 20.0
	p.Text(20, y, "INVOICE")
	for _, l := range inv.labelLines() {
		y += 7
		p.Text(20, y, l)
	}
	y += 10
	p.SetXY(20, y)
	for _, h := range []string{"Description", "Qty", "Unit price", "Amount"} {
		p.CellFormat(40, 7, h, "", 0, "L", false, 0, "")
	}
	p.Ln(7)
	for _, l := range inv.Lines {
		p.SetX(20)
		for _, c := range l {
			p.CellFormat(40, 7, c, "", 0, "L", false, 0, "")
		}
		p.Ln(7)
	}
	y = p.GetY() + 7
	for _, l := range inv.totalLines() {
		y += 7
		p.Text(20, y, l)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// values returns the extracted values of d as key -> value.
func values(d *Document) map[string]any {
	out := map[string]any{}
	for k, v := range d.Extracted {
		out[k] = v.Value
	}
	return out
}

func ruleIDs(d *Document) []string {
	var out []string
	if d.Validation != nil {
		for _, is := range d.Validation.Issues {
			out = append(out, is.RuleID)
		}
	}
	return out
}

func historyActions(d *Document) []string {
	var out []string
	for _, h := range d.History {
		out = append(out, h.Action)
	}
	return out
}
