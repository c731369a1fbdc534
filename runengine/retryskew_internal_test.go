package runengine

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// TestBulkRetryClockSkew: on a cluster, a bulk retry is made on one node
// and run on another, whose clock may differ. Made by a node an hour
// ahead, the job's id sorts after every run, its own reruns included;
// made by a node an hour behind, before every run. Either way the job
// reruns each failed run once and none of its own reruns, which fail too
// (no provider fills the capability). Before, the job told its own reruns
// from the runs to retry by comparing ids: an hour ahead it retried its
// own reruns (and theirs) as it reached them, an hour behind it skipped
// every run.
func TestBulkRetryClockSkew(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			bulkRetrySkewed(t, skew)
		})
	}
}

func bulkRetrySkewed(t *testing.T, skew time.Duration) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, memStore(t), clk, Config{MaxAttempts: 1, Gate: autoDecides{}})
	t.Cleanup(func() { eng.Close() })
	const n = 150 // a page and half of one
	def := createNew(t, procs, "ten_a", `{"name":"Call","trigger":{"type":"manual"},
		"steps":[{"key":"call","type":"execute","capability":"acme.nothing","config":{"args":{}}}]}`)
	for range n {
		r, err := eng.Start(ctx, StartParams{Tenant: "ten_a", ProcessID: def.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.WaitRun(ctx, "ten_a", r.ID); err != nil {
			t.Fatal(err)
		}
	}
	rec := eng.newJob(JobFilter{Status: RunFailed}, JobRetry, "usr_a")
	var other ids.Generator // the node that made the job
	rec.ID = other.New("job", clk.Now().Add(skew))
	if err := eng.st.Update(ctx, func(tx store.Txn) error { return eng.putJob(tx, "ten_a", rec) }); err != nil {
		t.Fatal(err)
	}
	if err := eng.runJob("ten_a", rec.ID); err != nil {
		t.Fatal(err)
	}
	all := map[string]*Run{}
	for page := (store.Page{Limit: 100}); ; {
		list, next, err := eng.ListRuns(ctx, "ten_a", RunQuery{ProcessID: def.ID}, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			all[r.ID] = r
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	reruns := map[string]int{}
	ofReruns := 0
	for _, r := range all {
		if r.RerunOf == "" {
			continue
		}
		reruns[r.RerunOf]++
		if all[r.RerunOf] != nil && all[r.RerunOf].RerunOf != "" {
			ofReruns++
		}
	}
	once := 0
	for id, r := range all {
		if r.RerunOf == "" && reruns[id] == 1 {
			once++
		}
	}
	if once != n || ofReruns != 0 {
		t.Errorf("%d of %d failed runs rerun once; %d reruns of the job's own reruns; want %d, 0", once, n, ofReruns, n)
	}
	done, err := eng.GetJob(ctx, "ten_a", rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Changed != n || done.ErrorCount != 0 {
		t.Errorf("job changed %d, errors %d (%+v); want %d, 0", done.Changed, done.ErrorCount, done.Errors, n)
	}
}
