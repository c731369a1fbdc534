package runengine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/clock"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// BenchmarkListTasks lists the first page (50) of open tasks with 10,000
// and 1,000,000 runs stored, each waiting on its open task: a paged list
// reads an index, so both must cost about the same. The store is Badger in
// a temp dir, seeded once per size with runengine.SeedTasks (the records
// the engine writes, in big transactions) and reopened before measuring, so
// the list reads from tables, not from the memtable.
func BenchmarkListTasks(b *testing.B) {
	parent := b
	for _, n := range []int{10_000, 1_000_000} {
		var (
			once sync.Once
			dir  string
			err  error
		)
		seed := func(b *testing.B) string {
			once.Do(func() {
				dir = parent.TempDir() // kept for every round and -count
				var st store.Store
				st, err = openBenchStore(dir)
				if err != nil {
					return
				}
				b.Logf("seeding %d runs", n)
				err = runengine.SeedTasks(st, tenant, n)
				if cerr := st.Close(); err == nil {
					err = cerr
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			return dir
		}
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			st, err := openBenchStore(seed(b))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			clk := clock.Real{}
			eng, err := runengine.New(runengine.Config{Store: st, Clock: clk,
				Capabilities: capability.NewRegistry(capability.RegistryConfig{Store: st, Clock: clk}),
				Processes:    process.NewService(process.Config{Store: st, Clock: clk})})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
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

func openBenchStore(dir string) (store.Store, error) {
	return badgerstore.Open(badgerstore.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}
