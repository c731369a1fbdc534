package runengine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestPauseHoldsTimersAndResumes pauses a run waiting on a timer: the
// timer that comes due is held, nothing moves, and the resume applies it.
func TestPauseHoldsTimersAndResumes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"pause","type":"wait","config":{"duration":"1h"}},
		{"key":"end","type":"execute","capability":"test.echo","config":{"args":{"ok":true}}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("pause", runengine.StepWaiting))
	if _, err := b.eng.Resume(ctx, tenant, id, "usr_a"); !errors.Is(err, errs.Conflict) {
		t.Errorf("resume of a run not paused: %v", err)
	}
	raw, err := b.eng.Pause(ctx, tenant, id, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, raw); got != runengine.RunPaused {
		t.Errorf("pause answered status %s", got)
	}
	if _, err := b.eng.Pause(ctx, tenant, id, "usr_a"); err != nil {
		t.Errorf("pausing a paused run: %v", err)
	}
	paused, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{Status: runengine.RunPaused}, pageAll)
	if err != nil || len(paused) != 1 || paused[0].ID != id {
		t.Errorf("paused runs = %v (%v)", paused, err)
	}
	b.advance(2 * time.Hour)
	r := b.waitRun(t, id, "holding the timer", func(r *runengine.Run) bool { return r.Paused != nil && len(r.Paused.Timers) == 1 })
	if r.Status != runengine.RunPaused || r.Steps[1].Status != runengine.StepPending || len(b.prov.keys()) != 0 {
		t.Fatalf("a paused run moved: %s, step end %s, calls %v", r.Status, r.Steps[1].Status, b.prov.keys())
	}
	raw, err = b.eng.Resume(ctx, tenant, id, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff([]string{id + "/end/1"}, b.prov.keys()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if _, err := b.eng.Pause(ctx, tenant, id, "usr_a"); !errors.Is(err, errs.Conflict) {
		t.Errorf("pause of a finished run: %v", err)
	}
	_ = raw
}

// TestPausedRunRefusesPeople checks that a paused run's task cannot be
// completed until it resumes, and that a cancel still ends it.
func TestPausedRunRefusesPeople(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting", stepStatus("t", runengine.StepWaitingTask))
	if _, err := b.eng.Pause(ctx, tenant, id, "usr_a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID, Action: "complete", Actor: "usr_a"}); !errors.Is(err, errs.Conflict) {
		t.Errorf("completing a paused run's task: %v", err)
	}
	if _, err := b.eng.Resume(ctx, tenant, id, "usr_a"); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, id, "waiting again", status(runengine.RunWaiting))
	if _, err := b.eng.Pause(ctx, tenant, id, "usr_a"); err != nil {
		t.Fatal(err)
	}
	raw, err := b.eng.Cancel(ctx, runengine.CancelParams{Tenant: tenant, RunID: id, Actor: "usr_a"})
	if err != nil || statusOf(t, raw) != runengine.RunCancelled {
		t.Errorf("cancel of a paused run: %+v %v", raw, err)
	}
}

// TestPauseProcessQueuesRuns pauses a process: a new run starts paused, a
// waiting run pauses at a person's action, and the process's resume
// resumes both through a job.
func TestPauseProcessQueuesRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}},
		{"key":"end","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	waiting := b.start(t, def.ID)
	r := b.waitRun(t, waiting, "waiting", stepStatus("t", runengine.StepWaitingTask))
	p, err := b.eng.PauseProcess(ctx, tenant, def.ID)
	if err != nil || !p.Paused {
		t.Fatalf("pause process: %+v %v", p, err)
	}
	queued := b.start(t, def.ID)
	q := b.waitRun(t, queued, "paused", status(runengine.RunPaused))
	if q.Steps[0].Status != runengine.StepPending {
		t.Errorf("a queued run's first step is %s", q.Steps[0].Status)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID, Action: "complete", Actor: "usr_a"}); !errors.Is(err, errs.Conflict) {
		t.Errorf("completing a task of a paused process: %v", err)
	}
	b.waitRun(t, waiting, "paused", status(runengine.RunPaused))
	if _, err := b.eng.Resume(ctx, tenant, queued, "usr_a"); !errors.Is(err, errs.Conflict) {
		t.Errorf("resuming a run of a paused process: %v", err)
	}
	p, err = b.eng.ResumeProcess(ctx, tenant, def.ID, "usr_a")
	if err != nil || p.Paused || p.Job == nil || p.Job.Total != 2 {
		t.Fatalf("resume process: %+v %v", p, err)
	}
	job := waitJob(t, b, p.Job.ID)
	if job.Done != 2 || job.Changed != 2 || job.ErrorCount != 0 {
		t.Errorf("resume job = %+v", job)
	}
	b.waitRun(t, waiting, "waiting again", status(runengine.RunWaiting))
	q = b.waitRun(t, queued, "waiting on its task", stepStatus("t", runengine.StepWaitingTask))
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *q.Steps[0].TaskID, Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, queued, "completed", status(runengine.RunCompleted))
}

// TestBulkJobs cancels and retries runs over a filter.
func TestBulkJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	var ids []string
	for range 3 {
		id := b.start(t, def.ID)
		b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
		ids = append(ids, id)
	}
	if _, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{}, runengine.JobCancel, "usr_a"); !errors.Is(err, errs.Invalid) {
		t.Errorf("a job without a filter: %v", err)
	}
	j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{ProcessID: def.ID}, runengine.JobPause, "usr_a")
	if err != nil || j.Total != 3 || j.Status != runengine.JobRunning {
		t.Fatalf("bulk pause: %+v %v", j, err)
	}
	if j := waitJob(t, b, j.ID); j.Changed != 3 {
		t.Errorf("bulk pause = %+v", j)
	}
	j, err = b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Status: runengine.RunPaused}, runengine.JobCancel, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, b, j.ID)
	if j.Done != 3 || j.Changed != 3 || j.ErrorCount != 0 {
		t.Errorf("bulk cancel = %+v", j)
	}
	for _, id := range ids {
		b.waitRun(t, id, "cancelled", status(runengine.RunCancelled))
	}
	// Resuming cancelled runs is an error per run, listed on the job.
	j, err = b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{ProcessID: def.ID}, runengine.JobResume, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, b, j.ID)
	if j.ErrorCount != 3 || len(j.Errors) != 3 || j.Errors[0].Error != "run already cancelled" {
		t.Errorf("bulk resume of cancelled runs = %+v", j)
	}
}

// TestRerunAndRetry reruns a failed run from its failed step, reusing the
// output of the step before it; the original stays as it was.
func TestRerunAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.prov.failures = 5
	def := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{"n":1}}},
		{"key":"two","type":"execute","capability":"test.flaky","config":{"args":{"prev":"${steps.one.n}"}}}]`)
	id := b.start(t, def.ID)
	for i := 1; i < 5; i++ {
		b.waitRun(t, id, "waiting on a retry", func(r *runengine.Run) bool { return r.Steps[1].Attempts == i && r.Status == runengine.RunWaiting })
		b.advance(time.Duration(1<<(i-1)) * time.Second)
	}
	orig := b.waitRun(t, id, "failed", status(runengine.RunFailed))
	if _, err := b.eng.Rerun(ctx, tenant, id, "nope", "usr_a"); !errors.Is(err, errs.Invalid) {
		t.Errorf("rerun from an unknown step: %v", err)
	}
	j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Status: runengine.RunFailed}, runengine.JobRetry, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, b, j.ID)
	if j.Changed != 1 || len(j.Results) != 1 || j.Results[0].RunID != id {
		t.Fatalf("retry job = %+v", j)
	}
	// Five failures in a row opened test.flaky's circuit in the registry:
	// the rerun's first attempt fails at once, without reaching the
	// provider, and waits on the engine's backoff; the cool-down (30s)
	// lets a trial call through, which succeeds.
	b.waitRun(t, j.Results[0].NewRunID, "refused by the open circuit", func(r *runengine.Run) bool {
		return r.Status == runengine.RunWaiting && r.Steps[1].Attempts == 1 && r.Steps[1].Error != nil &&
			strings.Contains(*r.Steps[1].Error, "the circuit of provider test.provider for test.flaky is open after 5 consecutive failures")
	})
	if n := len(b.prov.keys()); n != 6 {
		t.Errorf("the provider got %d calls, want 6 (the open circuit refused the rerun's)", n)
	}
	b.advance(30 * time.Second)
	re := b.waitRun(t, j.Results[0].NewRunID, "completed", status(runengine.RunCompleted))
	if re.RerunOf != id || re.RerunFromStep != "two" || re.Steps[0].StartedAt == nil || !re.Steps[0].StartedAt.Equal(*orig.Steps[0].StartedAt) {
		t.Errorf("rerun = of %q from %q, step one %+v", re.RerunOf, re.RerunFromStep, re.Steps[0])
	}
	if out, _ := json.Marshal(re.Steps[1].Output); string(out) != `{"prev":1}` {
		t.Errorf("step two read step one's reused output as %s", out)
	}
	calls := b.prov.keys()
	if diff := cmp.Diff(re.ID+"/two/2", calls[len(calls)-1]); diff != "" || len(calls) != 7 {
		t.Errorf("calls %v", calls)
	}
	again, _ := b.eng.GetRun(ctx, tenant, id)
	if again.Status != runengine.RunFailed || again.RerunOf != "" {
		t.Errorf("the original changed: %s", again.Status)
	}
	if _, err := b.eng.Retry(ctx, tenant, re.ID, "usr_a"); !errors.Is(err, errs.Conflict) {
		t.Errorf("retry of a completed run: %v", err)
	}
	raw, err := b.eng.Rerun(ctx, tenant, re.ID, "one", "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, runID(t, raw), "completed", status(runengine.RunCompleted))
}

var pageAll = store.Page{}

func statusOf(t *testing.T, r *runengine.Run) runengine.RunStatus {
	t.Helper()
	if r == nil {
		t.Fatal("no run")
	}
	return r.Status
}

func waitJob(t *testing.T, b *bundle, id string) *runengine.Job {
	t.Helper()
	var j *runengine.Job
	waitFor(t, "job "+id+" completed", func() bool {
		var err error
		j, err = b.eng.GetJob(context.Background(), tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Status == runengine.JobCompleted
	})
	return j
}

// TestJobsAndPausesSurviveReopen reopens the engine on a store holding a
// running job and a paused process: the job finishes, and the process is
// still paused.
func TestJobsAndPausesSurviveReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	prov, gate := &testProvider{}, &autoGate{auto: true}
	openAt := func() *bundle {
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return open(t, st, clk, prov, gate)
	}
	b := openAt()
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
	other := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	if _, err := b.eng.PauseProcess(ctx, tenant, other.ID); err != nil {
		t.Fatal(err)
	}
	b.eng.Close()
	b.st.Close()

	st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	jobID, err := runengine.SeedJob(st, tenant, runengine.JobFilter{ProcessID: def.ID}, runengine.JobCancel)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	b = openAt()
	if j := waitJob(t, b, jobID); j.Changed != 1 {
		t.Errorf("job after reopen = %+v", j)
	}
	b.waitRun(t, id, "cancelled", status(runengine.RunCancelled))
	queued := b.start(t, other.ID)
	b.waitRun(t, queued, "paused", status(runengine.RunPaused))
	if p, err := b.eng.ProcessPaused(ctx, tenant, other.ID); err != nil || !p.Paused {
		t.Errorf("process pause after reopen: %+v %v", p, err)
	}
}
