package runengine

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// BenchmarkCockpitRewrites reads the cockpit of a tenant whose counters
// were written once, and of one whose counters were rewritten 20,000
// times (one transaction each, as group commits do) to the same final
// values: every rewrite leaves a version of the key behind until
// compaction drops it, and the cockpit must cost the same in both.
// In-memory Badger, so no compaction runs and every version stays. The
// tenant has ten runs, each waiting on its open task. The
// engine is made with New and not opened (the cockpit needs no workers).
func BenchmarkCockpitRewrites(b *testing.B) {
	for _, writes := range []int{1, 20_000} {
		b.Run("writes="+strconv.Itoa(writes), func(b *testing.B) {
			st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			clk := clock.Real{}
			// Ten runs for the recent runs and open tasks: with none, the
			// lists' reverse scans would land on a counter (see
			// badgerstore's Scan: reverse scans still step over versions).
			if err := SeedTasks(st, "t-bench", 10); err != nil {
				b.Fatal(err)
			}
			if err := rewriteCounters(st, "t-bench", clk.Now().UTC(), writes); err != nil {
				b.Fatal(err)
			}
			eng, err := New(Config{Store: st, Clock: clk,
				Capabilities: registry.New(registry.Config{Store: st, Clock: clk}),
				Processes:    process.NewService(process.Config{Store: st, Clock: clk})})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { eng.Close() })
			v := Viewer{Assignees: []string{"ann"}, CanWork: true, CanDecide: true}
			c, err := eng.Cockpit(context.Background(), "t-bench", v, nil)
			if err != nil {
				b.Fatal(err)
			}
			if c.Running != 2*writes || c.ByFunction["finance"].Waiting != writes || c.Completed30d != writes {
				b.Fatalf("cockpit running %d, finance %+v, completed %d; want %d, %d waiting, %d", c.Running, c.ByFunction["finance"], c.Completed30d, 2*writes, writes, writes)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Cockpit(context.Background(), "t-bench", v, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rewriteCounters writes tenant's cockpit counters writes times, one
// transaction each, the i-th setting each to i: they end at writes.
func rewriteCounters(st store.Store, tenant string, now time.Time, writes int) error {
	day := now.Format("2006-01-02")
	keys := []string{
		counterKey(tenant, "inflight", "finance"), counterKey(tenant, "inflight", "sales"),
		counterKey(tenant, "waiting", "finance"), counterKey(tenant, "waiting", "sales"),
		counterKey(tenant, "overdue"), counterKey(tenant, "completed", day), counterKey(tenant, "minutes", day),
		counterKey(tenant, "tasks-open", "ann"), counterKey(tenant, "tasks-open", "*"),
		counterKey(tenant, "approvals-pending"),
	}
	for i := 1; i <= writes; i++ {
		err := st.Update(context.Background(), func(tx store.Txn) error {
			for _, k := range keys {
				if err := tx.Set([]byte(k), binary.BigEndian.AppendUint64(nil, uint64(i))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
