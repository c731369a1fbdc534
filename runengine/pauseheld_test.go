package runengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// TestPausedRunHoldsOneEventPerWait publishes three events a paused run's
// wait matches: the run holds the first only (each may carry 64 KiB of
// data, and the run is written whole on every change), and resumed, its
// wait takes that one; a later wait for the same event waits for a new
// one, as it would have had the run not been paused (its wait was not
// there when they came).
func TestPausedRunHoldsOneEventPerWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"first","type":"wait","config":{"event":"test.ping"}},
		{"key":"second","type":"wait","config":{"event":"test.ping"}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting for the event", stepStatus("first", runengine.StepWaiting))
	if _, err := b.eng.Pause(ctx, tenant, id, "usr_a"); err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		t.Helper()
		if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "test.ping", Data: map[string]any{"n": n}}); err != nil {
			t.Fatal(err)
		}
	}
	for n := range 3 {
		publish(n + 1)
	}
	r := b.waitRun(t, id, "holding an event", func(r *runengine.Run) bool { return r.Paused != nil && len(r.Paused.Events) > 0 })
	if n := len(r.Paused.Events); n != 1 {
		t.Errorf("the paused run holds %d events, want 1", n)
	}
	if _, err := b.eng.Resume(ctx, tenant, id, "usr_a"); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "waiting for a second event", stepStatus("second", runengine.StepWaiting))
	if diff := cmp.Diff(map[string]any{"n": float64(1)}, dataOf(r.Steps[0].Output)); diff != "" {
		t.Errorf("the first wait took (-want +got):\n%s", diff)
	}
	publish(4)
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff(map[string]any{"n": float64(4)}, dataOf(r.Steps[1].Output)); diff != "" {
		t.Errorf("the second wait took (-want +got):\n%s", diff)
	}
}

// TestPausedWaitTakesWhatCameFirst pauses a run whose wait for an event
// has a timeout, and lets both the event and the timeout come while it is
// paused, in either order. Resumed, the wait ends by the one that came
// first, and a later wait for the same event does not take the held event
// (it was not waiting when the event came). Before, the held timers were
// applied before the held events whatever their order: the wait timed out
// though its event had come in time, and the next wait took that event.
func TestPausedWaitTakesWhatCameFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type outcome struct {
		TimedOut any
		Data     any
		Second   runengine.StepStatus
	}
	for _, c := range []struct {
		name       string
		eventFirst bool
		want       outcome
	}{
		{"event then timeout", true, outcome{false, map[string]any{"n": float64(1)}, runengine.StepWaiting}},
		{"timeout then event", false, outcome{true, nil, runengine.StepWaiting}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			def := b.create(t, `{"type":"manual"}`, `[{"key":"first","type":"wait","config":{"event":"test.ping","timeout":"1h"}},
				{"key":"second","type":"wait","config":{"event":"test.ping"}}]`)
			id := b.start(t, def.ID)
			b.waitRun(t, id, "waiting for the event", stepStatus("first", runengine.StepWaiting))
			if _, err := b.eng.Pause(ctx, tenant, id, "usr_a"); err != nil {
				t.Fatal(err)
			}
			event := func() {
				if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "test.ping", Data: map[string]any{"n": 1}}); err != nil {
					t.Fatal(err)
				}
				b.waitRun(t, id, "holding the event", func(r *runengine.Run) bool { return r.Paused != nil && len(r.Paused.Events) == 1 })
			}
			timeout := func() {
				b.advance(2 * time.Hour)
				b.waitRun(t, id, "holding the timeout", func(r *runengine.Run) bool { return r.Paused != nil && len(r.Paused.Timers) == 1 })
			}
			if c.eventFirst {
				event()
				timeout()
			} else {
				timeout()
				event()
			}
			if _, err := b.eng.Resume(ctx, tenant, id, "usr_a"); err != nil {
				t.Fatal(err)
			}
			r := b.waitRun(t, id, "past the first wait", stepStatus("first", runengine.StepCompleted))
			out, _ := r.Steps[0].Output.(map[string]any)
			got := outcome{out["timed_out"], out["data"], r.Steps[1].Status}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("resumed (-want +got):\n%s", diff)
			}
		})
	}
}

// dataOf is the data of the event a wait step's output shows.
func dataOf(out any) any {
	m, _ := out.(map[string]any)
	return m["data"]
}
