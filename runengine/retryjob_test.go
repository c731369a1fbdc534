package runengine_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// TestBulkRetrySkipsItsOwnReruns: a bulk retry over failed runs reruns
// each run that had failed when it was made, once. Its reruns fail too
// here (the provider is down, one attempt), and come later in the failed
// runs' index than the job's cursor; before, the job reached them and
// retried them again, and their reruns again: 250 failed runs made
// thousands of reruns, each a call to the provider.
func TestBulkRetrySkipsItsOwnReruns(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	b := openWith(t, st, clock.NewFake(t0), &testProvider{failures: 1 << 30}, &autoGate{auto: true},
		func(c *runengine.Config) { c.MaxAttempts = 1 })
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.flaky","config":{"args":{}}}]`)
	const failed = 250 // three pages of the job
	for range failed {
		b.waitRun(t, b.start(t, def.ID), "failed", status(runengine.RunFailed))
	}
	j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Status: runengine.RunFailed}, runengine.JobRetry, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, b, j.ID)
	if j.Total != failed || j.Done != failed || j.Changed != failed || j.ErrorCount != 0 {
		t.Errorf("job total %d, done %d, changed %d, errors %d; want %d, %d, %d, 0", j.Total, j.Done, j.Changed, j.ErrorCount,
			failed, failed, failed)
	}
	reruns := 0
	for page := (store.Page{Limit: 100}); ; {
		runs, next, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.RerunOf != "" {
				reruns++
				if r.RerunJob != j.ID {
					t.Errorf("rerun %s names job %q, want %s", r.ID, r.RerunJob, j.ID)
				}
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	if reruns != failed {
		t.Errorf("%d reruns, want one per failed run (%d)", reruns, failed)
	}
}
