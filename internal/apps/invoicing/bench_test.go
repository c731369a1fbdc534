package invoicing

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

func benchService(b *testing.B, inMemory bool) (*Service, string) {
	b.Helper()
	opts := badgerstore.Options{InMemory: inMemory}
	if !inMemory {
		opts.Dir = b.TempDir()
	}
	st, err := badgerstore.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	s := New(Config{Store: st, Clock: clock.NewFake(t0)})
	c, err := s.CreateCustomer(context.Background(), tenant, CustomerIn{Name: "Bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s, c.ID
}

func benchLines(n int) []LineIn {
	rate := 8.875
	lines := make([]LineIn, n)
	for i := range lines {
		lines[i] = LineIn{Description: "Consulting hours", Quantity: 3, UnitAmountCents: 12345, TaxRatePercent: &rate}
	}
	return lines
}

// BenchmarkInvoiceLifecycle creates, finalizes and pays one invoice of 5
// lines per op (three synced commits on disk).
func BenchmarkInvoiceLifecycle(b *testing.B) {
	s, cid := benchService(b, false)
	ctx := context.Background()
	lines := benchLines(5)
	b.ReportAllocs()
	for b.Loop() {
		inv, err := s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: cid, Lines: lines})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Finalize(ctx, tenant, inv.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Pay(ctx, tenant, inv.ID, PayIn{AmountCents: inv.TotalCents, Method: "card"}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFinalizeParallel finalizes drafts of one tenant from many
// goroutines (they share the tenant's number counter).
func BenchmarkFinalizeParallel(b *testing.B) {
	s, cid := benchService(b, false)
	ctx := context.Background()
	ids := make(chan string, b.N+1)
	for i := 0; i < b.N; i++ {
		inv, err := s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: cid, Lines: benchLines(1)})
		if err != nil {
			b.Fatal(err)
		}
		ids <- inv.ID
	}
	close(ids)
	b.ResetTimer()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Finalize(ctx, tenant, <-ids); err != nil {
				b.Error(err)
			}
		}
	})
}

// BenchmarkListInvoices reads a page of 50 open invoices of a customer
// among 2,000 (in memory).
func BenchmarkListInvoices(b *testing.B) {
	s, cid := benchService(b, true)
	ctx := context.Background()
	for i := 0; i < 2000; i++ {
		inv, err := s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: cid, Lines: benchLines(1)})
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := s.Finalize(ctx, tenant, inv.ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		out, _, err := s.ListInvoices(ctx, tenant, InvoiceFilter{Status: StatusOpen, CustomerID: cid}, store.Page{Limit: 50})
		if err != nil || len(out) != 50 {
			b.Fatal(len(out), err)
		}
	}
}

// BenchmarkPDF renders an invoice of 50 lines.
func BenchmarkPDF(b *testing.B) {
	s, cid := benchService(b, true)
	ctx := context.Background()
	inv, err := s.CreateInvoice(ctx, tenant, InvoiceIn{CustomerID: cid, Lines: benchLines(50)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.PDF(ctx, tenant, inv.ID); err != nil {
			b.Fatal(err)
		}
	}
}
