package runengine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// BenchmarkListTasks lists the first page (50) of open tasks with 10,000
// and 1,000,000 runs stored, each waiting on its open task: a paged list
// reads an index, so both must cost about the same. The store is Badger in
// a temp dir, seeded once per size with runengine.SeedTasks (the records
// the engine writes, in big transactions), then closed and reopened so the
// list reads tables, not the memtable; it stays open for every round, and
// is listed for half a minute before measuring (see warmUp). The
// engine is made with New and not opened (lists need no workers; Open
// would resume every seeded run).
func BenchmarkListTasks(b *testing.B) {
	parent := b
	for _, n := range []int{10_000, 1_000_000} {
		var (
			once sync.Once
			eng  *runengine.Engine
			err  error
		)
		setup := func() {
			dir := parent.TempDir()
			var st store.Store
			if st, err = openBenchStore(dir); err != nil {
				return
			}
			parent.Logf("seeding %d runs", n)
			err = runengine.SeedTasks(st, tenant, n)
			if cerr := st.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return
			}
			if st, err = openBenchStore(dir); err != nil {
				return
			}
			clk := clock.Real{}
			eng, err = runengine.New(runengine.Config{Store: st, Clock: clk,
				Capabilities: registry.New(registry.Config{Store: st, Clock: clk}),
				Processes:    process.NewService(process.Config{Store: st, Clock: clk})})
			parent.Cleanup(func() {
				if eng != nil {
					eng.Close()
				}
				st.Close()
			})
			if err != nil {
				return
			}
			// Warm up: the bulk seeding leaves Badger compactions behind
			// for a few seconds (a store that grew over weeks has none),
			// and caches start cold.
			for began := time.Now(); time.Since(began) < warmUp; {
				if _, _, err = eng.ListTasks(context.Background(), tenant,
					runengine.TaskQuery{Status: runengine.TaskOpen}, store.Page{Limit: 50}); err != nil {
					return
				}
			}
		}
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			once.Do(setup)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			q := runengine.TaskQuery{Status: runengine.TaskOpen}
			page, next, err := eng.ListTasks(ctx, tenant, q, store.Page{Limit: 50})
			if err != nil || len(page) != 50 || next == "" {
				b.Fatalf("first page: %d tasks, next %q, %v", len(page), next, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := eng.ListTasks(ctx, tenant, q, store.Page{Limit: 50}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// warmUp is how long BenchmarkListTasks lists before it measures: long
// enough for the compactions the bulk seeding of a million runs leaves
// behind (with them running, a list costs half as much again).
const warmUp = 30 * time.Second

func openBenchStore(dir string) (store.Store, error) {
	return badgerstore.Open(badgerstore.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}
