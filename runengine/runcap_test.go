package runengine_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestRunCap caps the runs in flight: a run started over the cap is saved
// running with its waiting reason and takes no step, a high priority one
// goes first, a cancelled one never runs, and each goes out as a run of
// its tenant (or process) ends; another process's run is not held by a
// process cap.
func TestRunCap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(*runengine.Config)
		want   func(processID string) string
	}{
		{"tenant", func(c *runengine.Config) { c.MaxRunsPerTenant = 1 },
			func(string) string { return "run cap of the tenant: 1 runs in flight" }},
		{"process", func(c *runengine.Config) { c.MaxRunsPerProcess = 1 },
			func(id string) string { return "run cap of process " + id + ": 1 runs in flight" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := &queueProvider{next: make(chan struct{})}
			b := openChanged(t, c.change, q)
			ctx := context.Background()
			steps := `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`
			def := b.create(t, `{"type":"manual"}`, steps)
			start := func(processID, label, priority string) string { return startLabelled(t, b, processID, label, priority) }
			first := start(def.ID, "first", "")
			waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
			normal := start(def.ID, "normal", "")
			high := start(def.ID, "high", runengine.PriorityHigh)
			gone := start(def.ID, "gone", runengine.PriorityHigh)
			reasons := func() map[string]string {
				got := map[string]string{}
				for _, id := range []string{first, normal, high} {
					r, err := b.eng.GetRun(ctx, tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					got[r.Subject.Label] = string(r.Status) + ": " + r.WaitingReason
				}
				return got
			}
			held := "running: " + c.want(def.ID)
			want := map[string]string{"first": "running: ", "normal": held, "high": held}
			if diff := cmp.Diff(want, reasons()); diff != "" {
				t.Errorf("runs while capped (-want +got):\n%s", diff)
			}
			if _, err := b.eng.Cancel(ctx, runengine.CancelParams{Tenant: tenant, RunID: gone}); err != nil {
				t.Fatal(err)
			}
			wantOrder := []string{"first", "high", "normal"}
			if c.name == "process" {
				other := b.create(t, `{"type":"manual"}`, steps)
				start(other.ID, "other", "")
				waitFor(t, "the other process's call", func() bool { return len(q.calls()) == 2 })
				wantOrder = []string{"first", "other", "high", "normal"}
			}
			// Let every call end, one at a time (each release waits for a
			// call to take it): the held runs then call in their order.
			for range wantOrder {
				q.next <- struct{}{}
			}
			b.waitRun(t, normal, "completed", status(runengine.RunCompleted))
			if diff := cmp.Diff(wantOrder, q.calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			want = map[string]string{"first": "completed: ", "normal": "completed: ", "high": "completed: "}
			if diff := cmp.Diff(want, reasons()); diff != "" {
				t.Errorf("runs at the end (-want +got):\n%s", diff)
			}
		})
	}
}

// cappedAtOne sets an engine to run one run per tenant at a time and to
// wait a millisecond for steps in flight when it closes.
func cappedAtOne(c *runengine.Config) { c.MaxRunsPerTenant = 1; c.Grace = time.Millisecond }

// TestRunCapSurvivesRestart closes the engine while a run waits for a
// slot: the next engine on the same store finds it and runs it.
func TestRunCapSurvivesRestart(t *testing.T) {
	t.Parallel()
	q := &queueProvider{next: make(chan struct{})}
	b := openChanged(t, cappedAtOne, q)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
	var ids []string
	for _, label := range []string{"first", "second"} {
		ids = append(ids, startLabelled(t, b, def.ID, label, ""))
	}
	waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
	b.eng.Close()
	// Close stops waiting for a call past its grace period: the first
	// engine's call may still be about to see its cancelled context, and
	// would take a release meant for the next engine's calls.
	waitFor(t, "the first engine's call to return", q.idle)
	reopenChanged(t, b, cappedAtOne)
	for range 2 {
		q.next <- struct{}{}
	}
	for _, id := range ids {
		b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	}
}

// TestRunCapFreedByWaiting caps a tenant at one run running: a run waiting
// for a person frees its slot, so the next run goes at once, and takes one
// again (over the cap) when the person answers.
func TestRunCapFreedByWaiting(t *testing.T) {
	t.Parallel()
	q := &queueProvider{next: make(chan struct{})}
	b := openChanged(t, func(c *runengine.Config) { c.MaxRunsPerTenant = 1 }, q)
	ctx := context.Background()
	human := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}},
	  {"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
	call := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
	start := func(processID, label string) string { return startLabelled(t, b, processID, label, "") }
	waiting := start(human.ID, "waiting")
	b.waitRun(t, waiting, "waiting", status(runengine.RunWaiting))
	next := start(call.ID, "next")
	waitFor(t, "the next run's call", func() bool { return len(q.calls()) == 1 })
	tasks, _, err := b.eng.ListTasks(ctx, tenant, runengine.TaskQuery{}, store.Page{})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks: %v, %v", tasks, err)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: tasks[0].ID, Action: tasks[0].Actions[0], Actor: "usr"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the answered run's call", func() bool { return len(q.calls()) == 2 })
	q.next <- struct{}{}
	q.next <- struct{}{}
	for _, id := range []string{waiting, next} {
		b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	}
	if diff := cmp.Diff([]string{"next", "waiting"}, q.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestRunCapKeptThroughPause caps a tenant at one run running while a run
// holds the slot: a run that had not taken its first step (it waited for
// the slot, or started paused with its process) and is paused, then
// resumed, queues for the slot again, with its waiting reason, and takes
// its first step only when the run holding the slot ends. Before, resumed,
// it went on at once, over the cap.
func TestRunCapKeptThroughPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		// byProcess pauses the run's process before the run starts;
		// otherwise the run is paused once it waits for the slot.
		byProcess bool
	}{{"run paused while waiting for the slot", false}, {"run started paused by its process", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := &queueProvider{next: make(chan struct{})}
			b := openChanged(t, func(c *runengine.Config) { c.MaxRunsPerTenant = 1 }, q)
			steps := `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`
			holder, other := b.create(t, `{"type":"manual"}`, steps), b.create(t, `{"type":"manual"}`, steps)
			start := func(processID, label string) string { return startLabelled(t, b, processID, label, "") }
			first := start(holder.ID, "first")
			waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
			var second string
			var err error
			if c.byProcess {
				if _, err = b.eng.PauseProcess(ctx, tenant, other.ID); err != nil {
					t.Fatal(err)
				}
				second = start(other.ID, "second")
			} else {
				second = start(other.ID, "second")
				if _, err = b.eng.Pause(ctx, tenant, second, "usr"); err != nil {
					t.Fatal(err)
				}
			}
			b.waitRun(t, second, "paused", status(runengine.RunPaused))
			if c.byProcess {
				_, err = b.eng.ResumeProcess(ctx, tenant, other.ID, "usr")
			} else {
				_, err = b.eng.Resume(ctx, tenant, second, "usr")
			}
			if err != nil {
				t.Fatal(err)
			}
			r := b.waitRun(t, second, "resumed", status(runengine.RunRunning))
			type seen struct {
				Reason string
				Step   runengine.StepStatus
			}
			want := seen{"run cap of the tenant: 1 runs in flight", runengine.StepPending}
			if diff := cmp.Diff(want, seen{r.WaitingReason, r.Steps[0].Status}); diff != "" {
				t.Errorf("the resumed run (-want +got):\n%s", diff)
			}
			q.next <- struct{}{}
			b.waitRun(t, first, "completed", status(runengine.RunCompleted))
			q.next <- struct{}{}
			b.waitRun(t, second, "completed", status(runengine.RunCompleted))
			if diff := cmp.Diff([]string{"first", "second"}, q.calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunCapKeptThroughPauseAcrossRestart: a run waiting for its tenant's
// slot when its process is paused, and the engine restarted, pauses as the
// next engine resumes it; resumed with its process, it queues for the slot
// again, and takes its first step only when the run holding the slot ends.
// Before, resumed, it went on at once, over the cap.
func TestRunCapKeptThroughPauseAcrossRestart(t *testing.T) {
	t.Parallel()
	q := &queueProvider{next: make(chan struct{})}
	b := openChanged(t, cappedAtOne, q)
	ctx := context.Background()
	steps := `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`
	holder, other := b.create(t, `{"type":"manual"}`, steps), b.create(t, `{"type":"manual"}`, steps)
	first, second := startLabelled(t, b, holder.ID, "first", ""), startLabelled(t, b, other.ID, "second", "")
	waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
	if _, err := b.eng.PauseProcess(ctx, tenant, other.ID); err != nil {
		t.Fatal(err)
	}
	b.eng.Close()
	waitFor(t, "the first engine's call to return", q.idle)
	eng := reopenChanged(t, b, cappedAtOne)
	b.waitRun(t, second, "paused with its process", status(runengine.RunPaused))
	waitFor(t, "the first run's call made again", func() bool { return len(q.calls()) == 2 })
	if _, err := eng.ResumeProcess(ctx, tenant, other.ID, "usr"); err != nil {
		t.Fatal(err)
	}
	r := b.waitRun(t, second, "resumed", status(runengine.RunRunning))
	type seen struct {
		Reason string
		Step   runengine.StepStatus
	}
	want := seen{"run cap of the tenant: 1 runs in flight", runengine.StepPending}
	if diff := cmp.Diff(want, seen{r.WaitingReason, r.Steps[0].Status}); diff != "" {
		t.Errorf("the resumed run (-want +got):\n%s", diff)
	}
	q.next <- struct{}{}
	b.waitRun(t, first, "completed", status(runengine.RunCompleted))
	q.next <- struct{}{}
	b.waitRun(t, second, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff([]string{"first", "first", "second"}, q.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// startLabelled starts a run of processID with the given priority on b's
// engine, its subject labelled label, and returns its id.
func startLabelled(t *testing.T, b *bundle, processID, label, priority string) string {
	t.Helper()
	r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: processID, Priority: priority,
		Subject: runengine.Subject{Type: "t", Label: label}})
	if err != nil {
		t.Fatal(err)
	}
	return runID(t, r)
}

// reopenChanged opens the next engine on b's store, services and clock,
// its config changed by change, and makes it b's engine; the test closes
// the current one first.
func reopenChanged(t *testing.T, b *bundle, change func(*runengine.Config)) *runengine.Engine {
	t.Helper()
	cfg := runengine.Config{Store: b.st, Clock: b.clk, Capabilities: b.reg, Processes: b.procs, Gate: b.gate}
	change(&cfg)
	eng, err := runengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.eng = eng
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng
}

// oneSlotCaps are the run caps of one slot: the tenant's and the
// process's.
var oneSlotCaps = []struct {
	name   string
	change func(*runengine.Config)
}{
	{"tenant", func(c *runengine.Config) { c.MaxRunsPerTenant = 1 }},
	{"process", func(c *runengine.Config) { c.MaxRunsPerProcess = 1 }},
}

// TestRefusedStartFreesRunCapSlot: a start whose data JSON cannot hold (a
// Go caller's NaN) is refused as ErrInvalid, and the run it would have
// made takes no slot under a run cap: the next start of the tenant (or
// process) takes the slot and makes its call. Before, the refused run kept
// the slot it took, in memory, until the engine closed, and every later
// run waited for it.
func TestRefusedStartFreesRunCapSlot(t *testing.T) {
	t.Parallel()
	for _, c := range oneSlotCaps {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := &queueProvider{next: make(chan struct{})}
			b := openChanged(t, c.change, q)
			ctx := context.Background()
			def := b.create(t, `{"type":"manual"}`,
				`[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
			_, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
				Subject: runengine.Subject{Type: "t", Label: "refused"}, Data: map[string]any{"amount": math.NaN()}})
			if !errors.Is(err, errs.Invalid) {
				t.Fatalf("start with NaN: %v, want ErrInvalid", err)
			}
			r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
				Subject: runengine.Subject{Type: "t", Label: "next"}})
			if err != nil {
				t.Fatal(err)
			}
			if r.WaitingReason != "" {
				t.Fatalf("the next run waits: %q", r.WaitingReason)
			}
			waitFor(t, "the next run's call", func() bool { return len(q.calls()) == 1 })
			q.next <- struct{}{}
			b.waitRun(t, r.ID, "completed", status(runengine.RunCompleted))
			if diff := cmp.Diff([]string{"next"}, q.calls()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
