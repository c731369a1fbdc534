package runengine_test

import (
	"context"
	"testing"

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

// dataOf is the data of the event a wait step's output shows.
func dataOf(out any) any {
	m, _ := out.(map[string]any)
	return m["data"]
}
