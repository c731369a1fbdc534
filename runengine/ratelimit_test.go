package runengine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// openLimited is setup with rate limits.
func openLimited(t testing.TB, limits []runengine.RateLimit) *bundle {
	return openChanged(t, func(c *runengine.Config) { c.RateLimits = limits })
}

// openChanged is setup with a changed engine config; extra providers are
// registered too.
func openChanged(t testing.TB, change func(*runengine.Config), extra ...capability.Provider) *bundle {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	b := &bundle{st: st, clk: clk, prov: &testProvider{}, gate: &autoGate{auto: true}}
	b.procs = process.NewService(process.Config{Store: st, Clock: clk})
	b.reg = registry.New(registry.Config{Store: st, Clock: clk})
	for _, p := range append([]capability.Provider{b.prov}, extra...) {
		if err := b.reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	cfg := runengine.Config{Store: st, Clock: clk, Capabilities: b.reg, Processes: b.procs, Gate: b.gate, RetryBase: time.Second}
	change(&cfg)
	b.eng, err = runengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.eng.Close()
		st.Close()
	})
	return b
}

// TestRateLimitPerKey limits calls to 2 per second per customer: the third
// call of one customer waits in the due-time index, showing why, while
// another customer's call goes at once.
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	if _, err := runengine.New(runengine.Config{RateLimits: []runengine.RateLimit{{Capability: "x", Limit: 0, Per: time.Second}}}); err == nil {
		t.Error("a limit of 0 was taken")
	}
	b := openLimited(t, []runengine.RateLimit{{Capability: "test.", Key: "args.customer_id", Limit: 2, Per: time.Second}})
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.echo","config":{"args":{"customer_id":"${subject.type}"}}}]`)
	start := func(customer string) string {
		raw, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Subject: runengine.Subject{Type: customer, Label: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return runID(t, raw)
	}
	first, second := start("c1"), start("c1")
	b.waitRun(t, first, "completed", status(runengine.RunCompleted))
	b.waitRun(t, second, "completed", status(runengine.RunCompleted))
	third := start("c1")
	r := b.waitRun(t, third, "waiting on the limit", status(runengine.RunWaiting))
	if want := "rate limit of test.: 2 per 1s per args.customer_id"; r.WaitingReason != want {
		t.Errorf("waiting_reason = %q, want %q", r.WaitingReason, want)
	}
	other := start("c2")
	b.waitRun(t, other, "completed", status(runengine.RunCompleted))
	if slices.Contains(b.prov.keys(), third+"/call/1") {
		t.Fatal("the limited call went out")
	}
	b.advance(500 * time.Millisecond)
	r = b.waitRun(t, third, "completed", status(runengine.RunCompleted))
	if r.WaitingReason != "" || !slices.Contains(b.prov.keys(), third+"/call/1") {
		t.Errorf("after the wait: reason %q, calls %v", r.WaitingReason, b.prov.keys())
	}
}

// BenchmarkRateLimiter is the cost a rate limit adds to a call: one run of
// a one-step process per op, under a limit it never reaches, against the
// same without a limit.
func BenchmarkRateLimiter(b *testing.B) {
	for _, c := range []struct {
		name   string
		limits []runengine.RateLimit
	}{
		{"none", nil},
		{"limited", []runengine.RateLimit{{Capability: "test.", Key: "args.customer_id", Limit: 1 << 30, Per: time.Second}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bu := openLimited(b, c.limits)
			ctx := context.Background()
			in, err := process.DecodeIn([]byte(`{"name":"p","trigger":{"type":"manual"},"steps":[{"key":"call","type":"execute","capability":"test.echo","config":{"args":{"customer_id":"${subject.type}"}}}]}`))
			if err != nil {
				b.Fatal(err)
			}
			def, err := bu.procs.Create(ctx, tenant, "usr", in)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := bu.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Subject: runengine.Subject{Type: "c1", Label: "x"}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
