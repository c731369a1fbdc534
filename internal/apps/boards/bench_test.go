package boards

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
)

// seed fills the first status of a new board with n items, appended in
// order, in transactions of up to 500 items.
func (b *bundle) seed(t testing.TB, n int) (*Detail, []*Item) {
	t.Helper()
	d := b.board(t, BoardIn{Name: fmt.Sprintf("Seeded %d", n)})
	r := &record{Board: d.Board, Statuses: d.Statuses, Columns: d.Columns, Groups: d.Groups}
	status := d.Statuses[0].ID
	items := make([]*Item, 0, n)
	last := ""
	now := b.clock.Now()
	for start := 0; start < n; start += 500 {
		err := b.st.Update(b.ctx, func(tx store.Txn) error {
			last0, made := last, items
			for i := start; i < min(n, start+500); i++ {
				pos, err := rankBetween(last0, "")
				if err != nil {
					return err
				}
				it := &Item{ID: b.svc.ids.New("itm", now), BoardID: r.ID, Number: int64(i + 1), Key: fmt.Sprintf("%s-%d", boardKey(r), i+1),
					Title: fmt.Sprintf("Task number %d", i+1), StatusID: status, Values: map[string]any{}, Position: pos,
					CreatedAt: now, UpdatedAt: now}
				if err := putItem(tx, b.tenant, nil, it); err != nil {
					return err
				}
				made = append(made, it)
				last0 = pos
			}
			if _, err := addInt(tx, store.Key(b.tenant, spaceSeq, r.ID), int64(min(n, start+500)-start)); err != nil {
				return err
			}
			items, last = made, last0
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return d, items
}

// BenchmarkItems measures listing the first page (50) of a status and
// moving an item within it (a random item placed right after another
// random one), with 100 and with 100,000 items in the status. Random
// items, so no key is rewritten thousands of times (a key's old versions
// slow scans over it until Badger compacts them away). Besides ns/op it
// reports cpu-µs/op, the CPU time the process spent per operation
// (Badger's background work included): the steadier figure on a shared
// machine. Both boards live in one store, seeded before either is
// measured (the small one first, so the first page of each has left the
// memtable for Badger's tables), so the two sizes see the same store and
// differ only in the status.
func BenchmarkItems(b *testing.B) {
	bd := setup(b)
	type seeded struct {
		n     int
		d     *Detail
		items []*Item
	}
	var boards []seeded
	for _, n := range []int{100, 100_000} {
		d, items := bd.seed(b, n)
		boards = append(boards, seeded{n, d, items})
	}
	for _, sb := range boards {
		d, items, n := sb.d, sb.items, sb.n
		status := d.Statuses[0].ID
		b.Run(fmt.Sprintf("list-status/items=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				page, _, err := bd.svc.ListItems(bd.ctx, bd.tenant, d.ID, ItemFilter{StatusID: status}, store.Page{Limit: 50})
				if err != nil || len(page) != 50 {
					b.Fatal(len(page), err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
		b.Run(fmt.Sprintf("move/items=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			cpu := cpuTime()
			for b.Loop() {
				m := rng.IntN(n)
				after := items[(m+1+rng.IntN(n-1))%n].ID
				_, err := bd.svc.UpdateItem(bd.ctx, bd.tenant, d.ID, items[m].ID, ItemPatch{Placement: Placement{AfterID: &after}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
