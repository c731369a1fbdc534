package runengine

import (
	"strings"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestRunEntryKeys: a run's entries in the active and label-word indexes
// are the keys of their prefixes and the run id (what lists and searches
// scan), each made in one allocation, also for a tenant, word or id of
// NUL bytes, which the key encoding escapes.
func TestRunEntryKeys(t *testing.T) {
	for _, tc := range []struct{ tenant, word, runID string }{
		{"ten_a", "invoice", "run_01M8BQF0MG9B0C1D3J2VAVT742"},
		{"t", "w", "r"},
		{"ten\x00nul", "wo\x00rd", "run\x00\x00"},
		{strings.Repeat("t", 300), strings.Repeat("w", 64), strings.Repeat("r", 200)},
	} {
		want := [][]byte{store.AppendKey(activePrefix(tc.tenant), tc.runID), store.AppendKey(wordPrefix(tc.tenant, tc.word), tc.runID)}
		got := [][]byte{activeKey(tc.tenant, tc.runID), wordKey(tc.tenant, tc.word, tc.runID)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: keys (-want +got):\n%s", tc.runID, diff)
		}
	}
	const tenant, word, runID = "ten_a", "invoice", "run_01M8BQF0MG9B0C1D3J2VAVT742"
	if n := testing.AllocsPerRun(100, func() { activeKey(tenant, runID) }); n != 1 {
		t.Errorf("activeKey: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { wordKey(tenant, word, runID) }); n != 1 {
		t.Errorf("wordKey: %v allocations, want 1", n)
	}
}

// TestActiveOf: a run's entry in the active index is set when it became
// running since its last commit, deleted when it stopped, and left alone
// otherwise (a new run that never ran included).
func TestActiveOf(t *testing.T) {
	run := func(s RunStatus) *Run { return &Run{ID: "run_1", Status: s} }
	for _, tc := range []struct {
		name     string
		old, cur *Run
		want     activeChange
	}{
		{"new and running", nil, run(RunRunning), activeSet},
		{"new and waiting", nil, run(RunWaiting), activeKept},
		{"resumed", run(RunWaiting), run(RunRunning), activeSet},
		{"still running", run(RunRunning), run(RunRunning), activeKept},
		{"completed", run(RunRunning), run(RunCompleted), activeDel},
		{"waits", run(RunRunning), run(RunWaiting), activeDel},
		{"resumed and completed between commits", run(RunWaiting), run(RunCompleted), activeKept},
	} {
		if got := activeOf(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
