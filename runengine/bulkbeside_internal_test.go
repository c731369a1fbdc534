package runengine

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/store/clock"
)

// TestBulkRunChangedBesideTheJob: a bulk job reads a page of runs, then
// acts on each in turn. A run someone resumed, paused or cancelled in
// between (by hand, or a process's resume job beside a bulk resume) is
// unchanged, as a run already so when read is, not one of the job's errors
// (a pause of a paused run is no error; before, the job counted it as
// changed). Before, the
// job listed "run is not paused" and "run already ended" errors: a bulk
// resume racing a process's resume reported a third of 300 runs failed.
func TestBulkRunChangedBesideTheJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, memStore(t), clk, Config{})
	t.Cleanup(func() { eng.Close() })
	const raw = `{"name":"Task","trigger":{"type":"manual"},"steps":[{"key":"t","type":"human_task","config":{"title":"Check"}}]}`
	def, first := startNew(t, eng, procs, "ten_a", raw)
	second, err := eng.Start(ctx, StartParams{Tenant: "ten_a", ProcessID: def.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first.ID, second.ID} {
		if _, err := eng.WaitRunUntil(ctx, "ten_a", id, func(r *Run) bool { return r.Status == RunWaiting }); err != nil {
			t.Fatal(err)
		}
	}

	// The job read first paused; it is resumed before the job reaches it.
	read, err := eng.Pause(ctx, "ten_a", first.ID, "usr_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Resume(ctx, "ten_a", first.ID, "usr_b"); err != nil {
		t.Fatal(err)
	}
	for _, byProcess := range []bool{false, true} {
		if changed, _, err := eng.applyBulk("ten_a", "job_test", read, JobResume, "usr_job", byProcess); changed || err != nil {
			t.Errorf("resume (by process %v) of a run resumed beside the job: changed %v, error %v; want unchanged", byProcess, changed, err)
		}
	}

	// The job read second waiting; it is paused before the job reaches it
	// (then resumed for what follows).
	read, err = eng.GetRun(ctx, "ten_a", second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Pause(ctx, "ten_a", second.ID, "usr_b"); err != nil {
		t.Fatal(err)
	}
	if changed, _, err := eng.applyBulk("ten_a", "job_test", read, JobPause, "usr_job", false); changed || err != nil {
		t.Errorf("pause of a run paused beside the job: changed %v, error %v; want unchanged", changed, err)
	}
	if _, err := eng.Resume(ctx, "ten_a", second.ID, "usr_b"); err != nil {
		t.Fatal(err)
	}

	// The job read second waiting; it is cancelled before the job reaches it.
	read, err = eng.GetRun(ctx, "ten_a", second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Cancel(ctx, CancelParams{Tenant: "ten_a", RunID: second.ID, Actor: "usr_b"}); err != nil {
		t.Fatal(err)
	}
	if changed, _, err := eng.applyBulk("ten_a", "job_test", read, JobCancel, "usr_job", false); changed || err != nil {
		t.Errorf("cancel of a run cancelled beside the job: changed %v, error %v; want unchanged", changed, err)
	}
	// A finished run is still the resume's error.
	cancelled, err := eng.GetRun(ctx, "ten_a", second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := eng.applyBulk("ten_a", "job_test", cancelled, JobResume, "usr_job", false); err == nil {
		t.Error("resume of a cancelled run: no error")
	}
}
