package runengine

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// TestBulkRetryPageDoneAgainRerunsOnce: a job's page is done again when
// its progress did not commit (the server died, or closed, after the
// page's actions and before the commit). Cancel, pause and resume are then
// no-ops; a retry's rerun must be too, or each run of the page is rerun
// twice (its provider called twice). The job is run here, then its record
// put back as it was before the page, as after such a crash, and run
// again. The page done again finds the reruns also when the process was
// archived in between (a rerun repeated with its key answers the first,
// as a Start repeated with its key does, whatever changed since).
func TestBulkRetryPageDoneAgainRerunsOnce(t *testing.T) {
	t.Parallel()
	for _, archived := range []bool{false, true} {
		t.Run(map[bool]string{false: "as it was", true: "process archived"}[archived], func(t *testing.T) {
			t.Parallel()
			bulkRetryPageDoneAgain(t, archived)
		})
	}
}

func bulkRetryPageDoneAgain(t *testing.T, archive bool) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, memStore(t), clk, Config{MaxAttempts: 1, Gate: autoDecides{}})
	// No provider fills the capability: each run fails at its call.
	def, first := startNew(t, eng, procs, "ten_a", `{"name":"Call","trigger":{"type":"manual"},
		"steps":[{"key":"call","type":"execute","capability":"acme.nothing","config":{"args":{}}}]}`)
	second, err := eng.Start(ctx, StartParams{Tenant: "ten_a", ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first.ID, second.ID} {
		if _, err := eng.WaitRun(ctx, "ten_a", id); err != nil {
			t.Fatal(err)
		}
	}
	rec := eng.newJob(JobFilter{ProcessID: def.ID, Status: RunFailed}, JobRetry, "usr_a")
	before := *rec
	put := func(rec jobRecord) {
		t.Helper()
		if err := eng.st.Update(ctx, func(tx store.Txn) error { return eng.putJob(tx, "ten_a", &rec) }); err != nil {
			t.Fatal(err)
		}
	}
	for pass := range 2 { // the page, then the page done again
		if pass == 1 && archive {
			if err := procs.Archive(ctx, "ten_a", "usr_a", def.ID); err != nil {
				t.Fatal(err)
			}
		}
		put(before)
		if err := eng.runJob("ten_a", rec.ID); err != nil {
			t.Fatal(err)
		}
	}
	reruns := map[string][]string{}
	runs, _, err := eng.ListRuns(ctx, "ten_a", RunQuery{ProcessID: def.ID}, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.RerunOf != "" {
			reruns[r.RerunOf] = append(reruns[r.RerunOf], r.ID)
		}
	}
	for _, id := range []string{first.ID, second.ID} {
		if len(reruns[id]) != 1 {
			t.Errorf("run %s was rerun %d times (%v), want once", id, len(reruns[id]), reruns[id])
		}
	}
	done, err := eng.GetJob(ctx, "ten_a", rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Results) != 2 || done.Changed != 2 || done.ErrorCount != 0 {
		t.Errorf("job changed %d, results %+v, errors %+v; want both runs, each with its one rerun", done.Changed, done.Results, done.Errors)
	}
}
