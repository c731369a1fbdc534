//go:build failpoints

package runengine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// TestFailpointCancelledJobStops cancels bulk jobs while a page of their
// runs is being acted on (the JobPage failpoint holds the page): the job
// counts that page and stops before the next. One job is cancelled in the
// engine that runs it; the other is left running by a Close in the middle
// of its page, resumed by the next Open, and cancelled there. A third
// Open finds both cancelled and restarts neither.
func TestFailpointCancelledJobStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	prov, gate := &testProvider{}, &autoGate{auto: true}
	ctx := context.Background()
	pages := make(chan chan struct{})
	openAt := func(hook func(tenant, id string)) *bundle {
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return openWith(t, st, clk, prov, gate, func(c *runengine.Config) { c.Failpoints.JobPage = hook })
	}
	held := func(string, string) {
		release := make(chan struct{})
		pages <- release
		<-release
	}
	b := openAt(held)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	var ids []string
	for range 150 { // a page of 100 runs and half of one
		id := b.start(t, def.ID)
		b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
		ids = append(ids, id)
	}
	statuses := func(what string, want map[runengine.RunStatus]int) {
		t.Helper()
		got := map[runengine.RunStatus]int{}
		for _, id := range ids {
			r, err := b.eng.GetRun(ctx, tenant, id)
			if err != nil {
				t.Fatal(err)
			}
			got[r.Status]++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: runs by status (-want +got):\n%s", what, diff)
		}
	}
	stopped := func(id string) *runengine.Job {
		t.Helper()
		var j *runengine.Job
		waitFor(t, "job "+id+" counted its page", func() bool {
			var err error
			if j, err = b.eng.GetJob(ctx, tenant, id); err != nil {
				t.Fatal(err)
			}
			return j.Done > 0
		})
		return j
	}
	want := func(what string, j *runengine.Job, done, changed int) {
		t.Helper()
		if j.Status != runengine.JobCancelled || j.Done != done || j.Changed != changed || j.CancelledBy != "usr_b" || j.CompletedAt == nil {
			t.Errorf("%s: job %s, done %d, changed %d, cancelled by %q, completed at %v; want cancelled, %d, %d, usr_b, set",
				what, j.Status, j.Done, j.Changed, j.CancelledBy, j.CompletedAt, done, changed)
		}
	}

	// Cancelled in the engine running it.
	first, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{ProcessID: def.ID}, runengine.JobPause, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	release := <-pages
	j, err := b.eng.CancelJob(ctx, tenant, first.ID, "usr_b")
	if err != nil || j.Status != runengine.JobCancelled || j.Done != 0 {
		t.Fatalf("cancel of a running job: %+v %v", j, err)
	}
	close(release)
	want("cancelled while its first page was acted on", stopped(first.ID), 100, 100)
	statuses("one page paused", map[runengine.RunStatus]int{runengine.RunPaused: 100, runengine.RunWaiting: 50})
	if _, err := b.eng.CancelJob(ctx, tenant, first.ID, "usr_b"); !errors.Is(err, errs.Conflict) {
		t.Errorf("a second cancel: %v, want a conflict", err)
	}

	// Left running by a Close, resumed by the next Open, cancelled there.
	second, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{ProcessID: def.ID}, runengine.JobCancel, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	release = <-pages
	closeHeld(b, release)
	b = openAt(held)
	release = <-pages
	if _, err := b.eng.CancelJob(ctx, tenant, second.ID, "usr_b"); err != nil {
		t.Fatal(err)
	}
	close(release)
	// The closed engine cancelled the page's runs without counting them:
	// the resumed job finds them cancelled by it, and counts them.
	want("cancelled after a reopen resumed it", stopped(second.ID), 100, 100)
	statuses("one page cancelled", map[runengine.RunStatus]int{runengine.RunCancelled: 100, runengine.RunWaiting: 50})
	b.eng.Close()
	b.st.Close()

	b = openAt(func(_, id string) { t.Errorf("job %s ran after it was cancelled", id) })
	for _, id := range []string{first.ID, second.ID} {
		j, err := b.eng.GetJob(ctx, tenant, id)
		if err != nil || j.Status != runengine.JobCancelled || j.Done != 100 {
			t.Errorf("job %s after a reopen: %+v %v", id, j, err)
		}
		err = b.st.View(ctx, func(r store.Reader) error {
			_, err := r.Get(store.Key(store.System, "jobs-running", tenant, id))
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("job %s is still marked running: %v", id, err)
		}
	}
	statuses("after a reopen", map[runengine.RunStatus]int{runengine.RunCancelled: 100, runengine.RunWaiting: 50})
}

// TestFailpointCancelledWhatIfIsNotLatest cancels a what-if while its only
// page is replayed: the job ends cancelled, with the page counted, and its
// report does not become the process's latest what-if.
func TestFailpointCancelledWhatIfIsNotLatest(t *testing.T) {
	t.Parallel()
	pages := make(chan chan struct{})
	b := openChanged(t, func(c *runengine.Config) {
		c.Failpoints.JobPage = func(string, string) {
			release := make(chan struct{})
			pages <- release
			<-release
		}
	})
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID,
		Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	job, err := b.eng.WhatIf(ctx, tenant, runengine.WhatIfParams{ProcessID: def.ID}, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	release := <-pages
	if _, err := b.eng.CancelJob(ctx, tenant, job.ID, "usr_b"); err != nil {
		t.Fatal(err)
	}
	close(release)
	var j *runengine.Job
	waitFor(t, "the what-if counted its page", func() bool {
		if j, err = b.eng.GetJob(ctx, tenant, job.ID); err != nil {
			t.Fatal(err)
		}
		return j.Done > 0
	})
	if j.Status != runengine.JobCancelled || j.Done != 1 || j.Result == nil || j.Result.Runs != 1 || j.CancelledBy != "usr_b" {
		t.Errorf("the cancelled what-if: %s, done %d, cancelled by %q, result %+v", j.Status, j.Done, j.CancelledBy, j.Result)
	}
	var last *runengine.WhatIfSummary
	err = b.st.View(ctx, func(r store.Reader) error {
		last, err = runengine.LatestWhatIf(r, tenant, def.ID)
		return err
	})
	if err != nil || last != nil {
		t.Errorf("the process's latest what-if after a cancelled one: %+v, %v; want none", last, err)
	}
}
