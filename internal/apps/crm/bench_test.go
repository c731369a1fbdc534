package crm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
)

// seedDeals makes n deals spread over the default pipeline's stages, 20
// owners and 500 companies' worth of company ids, 500 to a transaction.
func seedDeals(b *testing.B, bd *bundle, n int) *Pipeline {
	b.Helper()
	ctx := context.Background()
	bd.svc.owner = func(context.Context, string, string) error { return nil } // every owner is a member
	p, err := bd.svc.DefaultPipeline(ctx, tenant)
	if err != nil {
		b.Fatal(err)
	}
	var companyIDs []string
	for i := range 500 {
		c, err := bd.svc.CreateCompany(ctx, tenant, CompanyIn{Name: fmt.Sprintf("Company %03d", i)})
		if err != nil {
			b.Fatal(err)
		}
		companyIDs = append(companyIDs, c.ID)
	}
	const perTxn = 500
	for start := 0; start < n; start += perTxn {
		err := bd.st.Update(ctx, func(tx store.Txn) error {
			for i := start; i < min(start+perTxn, n); i++ {
				st := p.Stages[i%len(p.Stages)]
				in := DealIn{Title: fmt.Sprintf("Deal %06d for %s", i, []string{"anvils", "rockets", "magnets", "springs"}[i%4]),
					AmountCents: ptr(int64(1000 + i%997*100)), StageID: &st.ID, OwnerID: ptr(fmt.Sprintf("usr_%02d", i%20)),
					CompanyID: &companyIDs[i%len(companyIDs)]}
				if _, err := bd.svc.createDealTx(ctx, tx, tenant, in); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return p
}

// BenchmarkCRM measures the board of the default pipeline (six columns of
// 50 deals with their counters) and a filtered list page of 50 deals, at
// 1,000 and 100,000 deals: both read an index and the counters, so their
// cost follows the page, not the number of deals.
func BenchmarkCRM(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		bd := setup(b)
		p := seedDeals(b, bd, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("deals=%d/board", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cols, err := bd.svc.Board(ctx, tenant, p.ID, 50)
				if err != nil || len(cols) != 6 || len(cols[0].Deals) != 50 {
					b.Fatalf("board: %v", err)
				}
			}
		})
		for _, f := range []struct {
			name   string
			filter DealFilter
		}{
			{"owner", DealFilter{OwnerID: "usr_07"}},
			{"stage", DealFilter{StageID: p.Stages[1].ID}},
			{"q", DealFilter{Q: "deal 00"}},
		} {
			b.Run(fmt.Sprintf("deals=%d/list-%s", n, f.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					page, _, err := bd.svc.ListDeals(ctx, tenant, f.filter, store.Page{Limit: 50})
					if err != nil || len(page) != 50 {
						b.Fatalf("list: %d, %v", len(page), err)
					}
				}
			})
		}
	}
}

// BenchmarkCRMScale runs each call on a workspace of 1,000 deals and on
// one of 100,000 deals in turn, iteration by iteration, so both meet the
// same load on a shared machine, and reports the time of each and their
// ratio (x-100k/1k).
func BenchmarkCRMScale(b *testing.B) {
	ctx := context.Background()
	type side struct {
		bd *bundle
		p  *Pipeline
	}
	var sides [2]side
	for i, n := range []int{1_000, 100_000} {
		bd := setup(b)
		sides[i] = side{bd, seedDeals(b, bd, n)}
	}
	for _, op := range []struct {
		name string
		fn   func(s side) error
	}{
		{"board", func(s side) error {
			_, err := s.bd.svc.Board(ctx, tenant, s.p.ID, 50)
			return err
		}},
		{"list-owner", func(s side) error {
			_, _, err := s.bd.svc.ListDeals(ctx, tenant, DealFilter{OwnerID: "usr_07"}, store.Page{Limit: 50})
			return err
		}},
		{"list-stage", func(s side) error {
			_, _, err := s.bd.svc.ListDeals(ctx, tenant, DealFilter{StageID: s.p.Stages[1].ID}, store.Page{Limit: 50})
			return err
		}},
		{"list-q", func(s side) error {
			_, _, err := s.bd.svc.ListDeals(ctx, tenant, DealFilter{Q: "deal 00"}, store.Page{Limit: 50})
			return err
		}},
	} {
		// Warm up: the big store compacts for a while after seeding.
		for range 300 {
			for _, s := range sides {
				if err := op.fn(s); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(op.name, func(b *testing.B) {
			var spent [2]time.Duration
			n := 0
			for b.Loop() {
				for i, s := range sides {
					start := time.Now()
					if err := op.fn(s); err != nil {
						b.Fatal(err)
					}
					spent[i] += time.Since(start)
				}
				n++
			}
			b.ReportMetric(float64(spent[0].Microseconds())/float64(n), "µs-1k")
			b.ReportMetric(float64(spent[1].Microseconds())/float64(n), "µs-100k")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "x-100k/1k")
		})
	}
}
