//go:build failpoints

package runengine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// midPage is a bulk job's engine closed in the middle of the job's first
// page (see closedMidPage).
type midPage struct {
	clk       *clock.Fake
	prov      *testProvider
	configure func(*runengine.Config) // nil: as openWith's
	setup     func(*bundle)           // makes the runs
	bulk      func(*bundle) string    // makes the job, returns its id
	held      func(*bundle, string)   // nil, or runs while the page is held
	reopened  func()                  // nil, or runs before the second Open
}

// closedMidPage opens an engine on a new directory, runs m.setup in it,
// then m.bulk, and closes the engine once the job acted on its first page
// (the JobPage failpoint; m.held runs then): the page's actions are
// durable, its progress is not, as after a crash. It runs m.reopened,
// opens the engine again, which resumes the job, and returns it with the
// job's id.
func closedMidPage(t *testing.T, m midPage) (*bundle, string) {
	t.Helper()
	dir := t.TempDir()
	pages := make(chan chan struct{}, 1)
	openAt := func(hook func(tenant, id string)) *bundle {
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return openWith(t, st, m.clk, m.prov, &autoGate{auto: true}, func(c *runengine.Config) {
			c.Failpoints.JobPage = hook
			if m.configure != nil {
				m.configure(c)
			}
		})
	}
	var armed atomic.Bool
	b := openAt(func(string, string) {
		if armed.CompareAndSwap(true, false) {
			release := make(chan struct{})
			pages <- release
			<-release
		}
	})
	m.setup(b)
	armed.Store(true)
	id := m.bulk(b)
	release := <-pages
	if m.held != nil {
		m.held(b, id)
	}
	closeHeld(b, release)
	if m.reopened != nil {
		m.reopened()
	}
	return openAt(nil), id
}

// closeHeld closes b's engine while a job's page is held by the JobPage
// failpoint until release is closed: the engine is closing when the page
// goes on, so the job stops before it commits the page's progress. The
// store is closed too.
func closeHeld(b *bundle, release chan struct{}) {
	closed := make(chan struct{})
	go func() {
		b.eng.Close()
		close(closed)
	}()
	<-b.eng.Done()
	close(release)
	<-closed
	b.st.Close()
}

// TestFailpointBulkCountsExactAfterClose: a bulk job's page is acted on,
// then the engine closes before the page's progress commits (as a crash
// would), and the next Open resumes the job. The job's counts are what it
// did: each run it changed before the close is counted once in Done and
// Changed, whether the page done again lists it (a filter it still
// matches) or not (a status filter it no longer matches). Before, the
// page's runs were found already changed and counted unchanged, or not
// found at all: 150 runs cancelled, Changed 50.
func TestFailpointBulkCountsExactAfterClose(t *testing.T) {
	t.Parallel()
	const n = 150 // a page of 100 runs and half of one
	cases := []struct {
		name   string
		action string
		filter func(processID string) runengine.JobFilter
		before func(t *testing.T, b *bundle, processID string) // puts the runs where the action finds them
		after  runengine.RunStatus
	}{
		{name: "cancel by status", action: runengine.JobCancel, after: runengine.RunCancelled,
			filter: func(string) runengine.JobFilter { return runengine.JobFilter{Status: runengine.RunWaiting} }},
		{name: "cancel by process", action: runengine.JobCancel, after: runengine.RunCancelled,
			filter: func(p string) runengine.JobFilter { return runengine.JobFilter{ProcessID: p} }},
		{name: "pause by status", action: runengine.JobPause, after: runengine.RunPaused,
			filter: func(string) runengine.JobFilter { return runengine.JobFilter{Status: runengine.RunWaiting} }},
		{name: "resume by status", action: runengine.JobResume, after: runengine.RunWaiting,
			filter: func(string) runengine.JobFilter { return runengine.JobFilter{Status: runengine.RunPaused} },
			before: func(t *testing.T, b *bundle, p string) {
				j, err := b.eng.BulkRuns(context.Background(), tenant, runengine.JobFilter{ProcessID: p}, runengine.JobPause, "usr_a")
				if err != nil {
					t.Fatal(err)
				}
				waitJob(t, b, j.ID)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var ids []string
			var processID string
			b, jobID := closedMidPage(t, midPage{clk: clock.NewFake(t0), prov: &testProvider{}, setup: func(b *bundle) {
				def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
				processID = def.ID
				for range n {
					id := b.start(t, def.ID)
					b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
					ids = append(ids, id)
				}
				if c.before != nil {
					c.before(t, b, def.ID)
				}
			}, bulk: func(b *bundle) string {
				j, err := b.eng.BulkRuns(ctx, tenant, c.filter(processID), c.action, "usr_a")
				if err != nil {
					t.Fatal(err)
				}
				return j.ID
			}})
			j := waitJob(t, b, jobID)
			got := map[string]int{"total": j.Total, "done": j.Done, "changed": j.Changed, "errors": j.ErrorCount}
			want := map[string]int{"total": n, "done": n, "changed": n, "errors": 0}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("job's counts (-want +got):\n%s\nerrors: %+v", diff, j.Errors)
			}
			for _, id := range ids {
				b.waitRun(t, id, string(c.after), status(c.after))
			}
			assertNoJobMarks(t, b)
		})
	}
}

// TestFailpointBulkRetryRerunsOnceAfterADay: a bulk retry's page is acted
// on, the engine closes before the page's progress commits, and opens
// again more than IdempotencyWindow later. The page done again reruns no
// run a second time, and counts each rerun once. Before, the reruns' start
// keys had expired and each run of the page was rerun again (its provider
// called again).
func TestFailpointBulkRetryRerunsOnceAfterADay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 120
	clk := clock.NewFake(t0)
	one := func(c *runengine.Config) { c.MaxAttempts = 1 }
	var processID string
	var failed []string
	b, jobID := closedMidPage(t, midPage{clk: clk, prov: &testProvider{failures: 1 << 30}, configure: one, setup: func(b *bundle) {
		def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.flaky","config":{"args":{}}}]`)
		processID = def.ID
		for range n {
			id := b.start(t, def.ID)
			b.waitRun(t, id, "failed", status(runengine.RunFailed))
			failed = append(failed, id)
		}
	}, bulk: func(b *bundle) string {
		j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{ProcessID: processID, Status: runengine.RunFailed}, runengine.JobRetry, "usr_a")
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}, reopened: func() { clk.Advance(runengine.IdempotencyWindow + 1e9) }})
	j := waitJob(t, b, jobID)
	if j.Done != n || j.Changed != n || j.ErrorCount != 0 || len(j.Results) != min(n, runengine.MaxJobErrors) {
		t.Errorf("job done %d, changed %d, errors %d, results %d; want %d, %d, 0, %d", j.Done, j.Changed, j.ErrorCount,
			len(j.Results), n, n, min(n, runengine.MaxJobErrors))
	}
	reruns := map[string][]string{}
	for page := (store.Page{Limit: 100}); ; {
		runs, next, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: processID}, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.RerunOf != "" {
				reruns[r.RerunOf] = append(reruns[r.RerunOf], r.ID)
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	twice := 0
	for _, id := range failed {
		if len(reruns[id]) != 1 {
			twice++
		}
	}
	if twice != 0 || len(reruns) != n {
		t.Errorf("%d of %d runs not rerun exactly once (%d runs rerun)", twice, n, len(reruns))
	}
	for _, r := range j.Results {
		if got := reruns[r.RunID]; len(got) != 1 || got[0] != r.NewRunID {
			t.Errorf("job result %+v; the run's reruns are %v", r, got)
		}
	}
	assertNoJobMarks(t, b)
}

// TestFailpointCancelledJobCutByCloseCounted: a bulk cancel is cancelled
// while its first page is acted on, and the engine closes before the page
// is counted (as a crash would). The next Open counts the runs that page
// changed in the cancelled job (Done and Changed) and leaves no mark of
// them, and does not act on more runs. Before, a cancelled job was never
// looked at again: the page went uncounted and its marks stayed.
func TestFailpointCancelledJobCutByCloseCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 150
	var ids []string
	b, jobID := closedMidPage(t, midPage{clk: clock.NewFake(t0), prov: &testProvider{}, setup: func(b *bundle) {
		def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
		for range n {
			id := b.start(t, def.ID)
			b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
			ids = append(ids, id)
		}
	}, bulk: func(b *bundle) string {
		j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Status: runengine.RunWaiting}, runengine.JobCancel, "usr_a")
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}, held: func(b *bundle, id string) {
		if _, err := b.eng.CancelJob(ctx, tenant, id, "usr_b"); err != nil {
			t.Fatal(err)
		}
	}})
	var j *runengine.Job
	waitFor(t, "the cancelled job counted its page", func() bool {
		var err error
		if j, err = b.eng.GetJob(ctx, tenant, jobID); err != nil {
			t.Fatal(err)
		}
		return j.Done > 0
	})
	got := map[string]any{"status": j.Status, "done": j.Done, "changed": j.Changed, "errors": j.ErrorCount, "by": j.CancelledBy}
	want := map[string]any{"status": runengine.JobCancelled, "done": 100, "changed": 100, "errors": 0, "by": "usr_b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cancelled job (-want +got):\n%s", diff)
	}
	byStatus := map[runengine.RunStatus]int{}
	for _, id := range ids {
		r, err := b.eng.GetRun(ctx, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		byStatus[r.Status]++
	}
	if diff := cmp.Diff(map[runengine.RunStatus]int{runengine.RunCancelled: 100, runengine.RunWaiting: 50}, byStatus); diff != "" {
		t.Errorf("runs by status (-want +got):\n%s", diff)
	}
	waitFor(t, "the job's marks removed", func() bool { return len(jobMarks(t, b)) == 0 })
	err := b.st.View(ctx, func(r store.Reader) error {
		_, err := r.Get(store.Key(store.System, "jobs-running", tenant, jobID))
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the cancelled job is still marked running: %v", err)
	}
}

// assertNoJobMarks checks that no mark of a run a job changed is left once
// the jobs completed.
func assertNoJobMarks(t *testing.T, b *bundle) {
	t.Helper()
	if left := jobMarks(t, b); len(left) != 0 {
		t.Errorf("%d job marks left, e.g. %q", len(left), left[0])
	}
}

// jobMarks are the keys of the marks of runs jobs changed.
func jobMarks(t *testing.T, b *bundle) []string {
	t.Helper()
	var left []string
	err := b.st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "job-run"), KeysOnly: true}, func(k, _ []byte) error {
			left = append(left, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return left
}
