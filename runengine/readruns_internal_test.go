package runengine

import (
	"fmt"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestReadRuns reads the runs of a worker's due timers in one sorted read:
// each command gets its run, a run named twice is read once (for its first
// command), and a missing run or one of another tenant is left nil.
func TestReadRuns(t *testing.T) {
	st := memStore(t)
	var ids []string
	err := st.Update(t.Context(), func(tx store.Txn) error {
		for i := range 40 {
			r := &Run{ID: fmt.Sprintf("run_%03d", i), ProcessID: "prc_1", Status: RunWaiting,
				Subject: Subject{Type: "delivery", Label: fmt.Sprintf("DN-%d", i)}}
			raw, err := appendStoredRun(nil, r)
			if err != nil {
				return err
			}
			if err := runs.PutOver(tx, "ten_a", nil, r, raw); err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Out of order, a duplicate, far apart, missing, another tenant's.
	names := []struct{ tenant, id string }{
		{"ten_a", "run_030"}, {"ten_a", "run_001"}, {"ten_a", "run_002"}, {"ten_a", "run_001"},
		{"ten_a", "run_999"}, {"ten_b", "run_003"}, {"ten_a", "run_039"}, {"ten_a", "run_000"},
	}
	cmds := make([]*command, len(names))
	for i, n := range names {
		cmds[i] = &command{kind: cmdTimer, tenant: n.tenant, runID: n.id}
	}
	got := make([]*Run, len(cmds))
	if err := st.View(t.Context(), func(r store.Reader) error { readRuns(r, cmds, got); return nil }); err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, r := range got {
		id := "-"
		if r != nil {
			id = r.ID + " " + r.Subject.Label
		}
		gotIDs = append(gotIDs, id)
	}
	want := []string{"run_030 DN-30", "run_001 DN-1", "run_002 DN-2", "-", "-", "-", "run_039 DN-39", "run_000 DN-0"}
	if diff := cmp.Diff(want, gotIDs); diff != "" {
		t.Errorf("readRuns (-want +got):\n%s", diff)
	}
}
