package runengine

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// TestCallCapResumesByPriority: with a call cap of one per tenant, a low
// priority run's call is in flight and a high priority run's call waits
// for the slot when the engine closes. The next engine resumes the runs
// in the active index's order, the low priority run first: both make
// their call again, the high priority run's first. Before, the calls made
// again took the slots in the order their runs were resumed, so the low
// priority run's went first.
func TestCallCapResumesByPriority(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	// One worker: the commands of Open's recovery are handled in the
	// active index's order.
	cfg := Config{Workers: 1, MaxCallsPerTenant: 1, Grace: time.Millisecond, Gate: autoDecides{}}
	p := &heldCalls{}
	t.Cleanup(func() {
		for _, l := range []string{"low", "high"} {
			if ch := p.gate(l); !isClosed(ch) {
				close(ch)
			}
		}
	})
	open := func() (*Engine, *process.Service) { return openOn(t, st, clk, cfg, p) }
	eng, procs := open()
	def := createNew(t, procs, tenant, `{"name":"Held","trigger":{"type":"manual"},
		"steps":[{"key":"call","type":"execute","capability":"test.held","config":{"args":{"label":"${subject.label}"}}}]}`)
	ctx := context.Background()
	start := func(label, priority string) string {
		r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Priority: priority, Subject: Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	low := start("low", PriorityLow)
	testwait.Until(t, "the low priority run's call", func() bool { return len(p.calls()) == 1 })
	high := start("high", PriorityHigh)
	testwait.Until(t, "the high priority run's call queued", func() bool { return eng.admission.reason(tenant, high) != "" })
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	eng, _ = open()
	testwait.Until(t, "a call made again", func() bool { return len(p.calls()) == 2 })
	p.let("high")
	p.let("low")
	for _, id := range []string{high, low} {
		wctx, cancel := context.WithTimeout(ctx, testwait.Limit)
		r, err := eng.WaitRunUntil(wctx, tenant, id, func(r *Run) bool { return r.Status == RunCompleted })
		cancel()
		if err != nil {
			t.Fatalf("run %s never completed: %v (%+v)", id, err, r)
		}
	}
	if diff := cmp.Diff([]string{"low", "high", "low"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
