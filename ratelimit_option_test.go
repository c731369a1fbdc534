package bas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/process"
	"github.com/google/go-cmp/cmp"
)

// pinger answers ping.now with {"ok": true}, counting its calls.
type pinger struct{ calls *atomic.Int32 }

func (pinger) Info() capability.Info {
	return capability.Info{ID: "acme.ping", Name: "Ping", Kind: capability.KindBuiltin, Capabilities: []string{"ping.now"}}
}

func (pinger) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "ping.now", Name: "Ping", Description: "Answers ok.",
		Args: json.RawMessage(`{"type": "object"}`), Result: json.RawMessage(`{"type": "object"}`)}}
}

func (p pinger) Call(context.Context, capability.Call) (json.RawMessage, error) {
	p.calls.Add(1)
	return json.RawMessage(`{"ok": true}`), nil
}

// TestRateLimitsOption limits a provider's calls per customer through
// Options.RateLimits: a second call for the same customer within the hour
// waits, its run showing the limit, and goes out when the hour has passed;
// another customer's call goes at once. The limits are Open's own: a
// caller that reuses its slice after Open (here: to open another workspace
// with a looser limit) changes nothing; before, the engine kept the
// caller's slice, and the change lifted the limit.
func TestRateLimitsOption(t *testing.T) {
	t.Parallel()
	for _, reused := range []bool{false, true} {
		t.Run(fmt.Sprintf("slice reused after Open: %v", reused), func(t *testing.T) {
			t.Parallel()
			testRateLimitsOption(t, reused)
		})
	}
}

func testRateLimitsOption(t *testing.T, reused bool) {
	ctx := context.Background()
	clk := bas.NewFakeClock(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	p := pinger{calls: &atomic.Int32{}}
	limits := []bas.RateLimit{{Capability: "ping.", Key: "args.customer", Limit: 1, Per: time.Hour}}
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Clock: clk, Providers: []bas.Provider{p}, RateLimits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if reused {
		limits[0] = bas.RateLimit{Capability: "ping.", Limit: 1000, Per: time.Second}
	}
	in, err := process.DecodeIn([]byte(`{"name": "Check", "trigger": {"type": "manual"},
	  "steps": [{"key": "check", "type": "monitor", "capability": "ping.now",
	    "config": {"args": {"customer": "${subject.label}"}, "condition": {"value.ok": true}, "interval": "24h", "timeout": "72h"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := ws.Processes().Create(ctx, "acme", "usr_ann", in)
	if err != nil {
		t.Fatal(err)
	}
	start := func(customer string) string {
		t.Helper()
		r, err := ws.Start(ctx, bas.StartParams{Tenant: "acme", ProcessID: def.ID, Subject: bas.Subject{Type: "customer", Label: customer}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	type seen struct {
		Status bas.RunStatus
		Reason string
	}
	wait := func(id string, cond func(*bas.Run) bool) seen {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := ws.WaitRunUntil(wctx, "acme", id, cond)
		if err != nil {
			t.Fatal(err)
		}
		return seen{r.Status, r.WaitingReason}
	}
	done := func(r *bas.Run) bool { return r.Finished() }
	limited := func(r *bas.Run) bool { return r.WaitingReason != "" || r.Finished() }

	first := start("c1")
	if diff := cmp.Diff(seen{Status: bas.RunCompleted}, wait(first, done)); diff != "" {
		t.Errorf("first call of c1 (-want +got):\n%s", diff)
	}
	second := start("c1")
	want := seen{bas.RunWaiting, "rate limit of ping.: 1 per 1h0m0s per args.customer"}
	if diff := cmp.Diff(want, wait(second, limited)); diff != "" {
		t.Errorf("second call of c1 (-want +got):\n%s", diff)
	}
	other := start("c2")
	if diff := cmp.Diff(seen{Status: bas.RunCompleted}, wait(other, done)); diff != "" {
		t.Errorf("first call of c2 (-want +got):\n%s", diff)
	}
	if n := p.calls.Load(); n != 2 {
		t.Errorf("%d calls before the hour passed, want 2", n)
	}
	clk.Advance(time.Hour)
	if diff := cmp.Diff(seen{Status: bas.RunCompleted}, wait(second, done)); diff != "" {
		t.Errorf("second call of c1 after the hour (-want +got):\n%s", diff)
	}
}
