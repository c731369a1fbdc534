package runengine

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDataPartsAreData: each part of the run's data a step may ask for
// alone is the same as in the whole data, and a key the data has not is
// left out.
func TestDataPartsAreData(t *testing.T) {
	t.Parallel()
	event := "delivery.received"
	x := &exec{r: &Run{ID: "run_1", ProcessID: "proc_1", ProcessName: "P",
		Subject: Subject{Type: "delivery", Label: "PO-1"},
		Trigger: RunTrigger{Type: "event", Event: &event, Data: map[string]any{"n": 1}},
		Steps: []StepRun{{Key: "a", Status: StepCompleted, Output: map[string]any{"ok": true}},
			{Key: "b", Status: StepRunning}}}}
	whole := x.data()
	if diff := cmp.Diff([]string{"run", "steps", "subject", "trigger"}, slices.Sorted(maps.Keys(whole))); diff != "" {
		t.Fatalf("the data's keys (-want +got):\n%s", diff)
	}
	for _, roots := range [][]string{{"subject"}, {"trigger"}, {"steps"}, {"run"}, {"steps", "subject"}, {"amount"}, {}} {
		want := map[string]any{}
		for _, r := range roots {
			if v, ok := whole[r]; ok {
				want[r] = v
			}
		}
		if diff := cmp.Diff(want, x.dataParts(roots)); diff != "" {
			t.Errorf("dataParts(%v) (-want +got):\n%s", roots, diff)
		}
	}
}
