package automation_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

func benchService(b *testing.B, opts badgerstore.Options) *automation.Service {
	b.Helper()
	opts.Logger = quiet()
	st, err := badgerstore.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return benchServiceOn(b, st)
}

func benchServiceOn(b *testing.B, st store.Store) *automation.Service {
	svc := automation.New(automation.Config{Store: st, Clock: clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))})
	p, err := automation.ParsePatch([]byte(`{"percent": 50, "daily_limit": 1000000, "auto_ramp": true}`))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.UpdateWorkspace(context.Background(), "t1", "u1", p); err != nil {
		b.Fatal(err)
	}
	return svc
}

// BenchmarkDecide measures the gate's answer for new items (one read-write
// transaction: settings, the stored answer, today's counters).
func BenchmarkDecide(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts badgerstore.Options
	}{{"memory", badgerstore.Options{InMemory: true}}, {"disk-synced", badgerstore.Options{Dir: b.TempDir()}}} {
		b.Run(bc.name, func(b *testing.B) {
			svc := benchService(b, bc.opts)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := svc.Decide(ctx, runengine.GateRequest{Tenant: "t1", ProcessID: "prc_1", ItemKey: fmt.Sprintf("run_%d/pay", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecideParallel measures Decide calls of one process from 64
// goroutines (they contend on today's counters) on a synced disk store.
func BenchmarkDecideParallel(b *testing.B) {
	svc := benchService(b, badgerstore.Options{Dir: b.TempDir()})
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("run_%d/pay", n.Add(1))
			if _, err := svc.Decide(ctx, runengine.GateRequest{Tenant: "t1", ProcessID: "prc_1", ItemKey: key}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkObserve measures recording a verdict and weighing the ramp and
// the rollback (the last 20 and 10 verdicts).
func BenchmarkObserve(b *testing.B) {
	svc := benchService(b, badgerstore.Options{InMemory: true})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := svc.Observe(ctx, runengine.Outcome{Tenant: "t1", ProcessID: "prc_1", StepKey: "pay", Agreed: i%10 != 0, Actor: "u"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideHanded measures the gate's answer for new items asked as
// the run engine asks (a callwrites.Writes in the context): decided from
// the day counts in memory, its record and counts handed over (and
// settled here as committed, without a commit).
func BenchmarkDecideHanded(b *testing.B) {
	svc := benchService(b, badgerstore.Options{InMemory: true})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := callwrites.Writes{Joins: true}
		ctx := callwrites.With(context.Background(), &w)
		if _, err := svc.Decide(ctx, runengine.GateRequest{Tenant: "t1", ProcessID: "prc_1", RunID: "run_" + strconv.Itoa(i),
			StepKey: "pay", ItemKey: "run_" + strconv.Itoa(i) + "/pay", New: true}); err != nil {
			b.Fatal(err)
		}
		h := w.TakeAll()
		h.Drop(nil)
	}
}
