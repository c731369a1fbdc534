package runengine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"

	"github.com/google/go-cmp/cmp"
)

// schedEngine opens an engine with cfg's settings over st at clk's time,
// with a process service of its own (a reopened engine gets a new one).
// It is closed when the test ends unless the test closed it.
func schedEngine(t *testing.T, st store.Store, clk *clock.Fake, cfg Config) (*Engine, *process.Service) {
	t.Helper()
	eng, procs := engineOn(t, st, clk, cfg)
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng, procs
}

// scheduled makes a process of tenant that runs every quarter hour and
// waits a day in its one step.
func scheduled(t *testing.T, procs *process.Service, tenant string) *process.Definition {
	t.Helper()
	in, err := process.DecodeIn([]byte(`{"name":"Quarterly","trigger":{"type":"schedule","cron":"*/15 * * * *","timezone":"UTC"},
		"steps":[{"key":"wait","type":"wait","config":{"duration":"24h"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := procs.Create(context.Background(), tenant, "usr", in)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// firedAt lists the fired_at of the runs of tenant's process, oldest first.
func firedAt(t *testing.T, eng *Engine, tenant, processID string) []string {
	t.Helper()
	rs, _, err := eng.ListRuns(context.Background(), tenant, RunQuery{ProcessID: processID}, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for i := len(rs) - 1; i >= 0; i-- {
		out = append(out, fmt.Sprint(rs[i].Trigger.Data["fired_at"]))
	}
	return out
}

// gateLine is how many wait at the start gate's door for tenant.
func gateLine(g *startGate, tenant string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.tenants[tenant]; s != nil {
		return len(s.waiters)
	}
	return 0
}

// TestScheduleWaitsAtTheDoor: a schedule's tick is a start of its tenant
// at the start gate (MaxStartingPerTenant here). With the tenant's one
// slot taken by a start in progress, its tick waits in line and starts no
// run, while another tenant's tick of the same moment starts its run
// (the scheduler does not wait at the door); the tick's run starts once
// the slot is free, and leaves the slot when its start is durable. A tick
// in line when the engine closes is not lost: it fires when it opens again.
func TestScheduleWaitsAtTheDoor(t *testing.T) {
	t.Parallel()
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, st, clk, Config{MaxStartingPerTenant: 1})
	a, b := scheduled(t, procs, "ten_a"), scheduled(t, procs, "ten_b")
	g := eng.starting
	ctx := context.Background()
	if err := g.enter(ctx, "ten_a"); err != nil { // a start of ten_a in progress
		t.Fatal(err)
	}
	clk.Advance(15 * time.Minute)
	testwait.Until(t, "ten_b's tick started its run", func() bool { return len(firedAt(t, eng, "ten_b", b.ID)) == 1 })
	testwait.Until(t, "ten_a's tick waits at the door", func() bool { return gateLine(g, "ten_a") == 1 })
	if got := firedAt(t, eng, "ten_a", a.ID); len(got) != 0 {
		t.Fatalf("ten_a's tick started %v past its taken slot", got)
	}
	g.leave("ten_a")
	testwait.Until(t, "ten_a's tick started its run once the slot was free", func() bool {
		return len(firedAt(t, eng, "ten_a", a.ID)) == 1
	})
	testwait.Until(t, "the tick's start left its slot", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.tenants) == 0 && g.busy == 0
	})
	if diff := cmp.Diff([]string{"2026-03-02T09:15:00Z"}, firedAt(t, eng, "ten_a", a.ID)); diff != "" {
		t.Errorf("ten_a's runs (-want +got):\n%s", diff)
	}

	// The next tick waits in line, and the engine closes.
	if err := g.enter(ctx, "ten_a"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(15 * time.Minute)
	testwait.Until(t, "ten_a's second tick waits at the door", func() bool { return gateLine(g, "ten_a") == 1 })
	g.leave("ten_a") // hands the slot to the tick, racing the close: either way one run
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	eng, _ = schedEngine(t, st, clk, Config{MaxStartingPerTenant: 1})
	testwait.Until(t, "the tick in line at the close fired after the reopen", func() bool {
		return len(firedAt(t, eng, "ten_a", a.ID)) == 2
	})
	want := []string{"2026-03-02T09:15:00Z", "2026-03-02T09:30:00Z"}
	if diff := cmp.Diff(want, firedAt(t, eng, "ten_a", a.ID)); diff != "" {
		t.Errorf("ten_a's runs after the reopen (-want +got):\n%s", diff)
	}
}

// TestScheduleFairAtTheDoor: with the default fair cap only
// (FairStartingPerTenant), a tenant's ticks beyond the cap wait in line
// while another tenant is active, and all start in the end, one run each.
func TestScheduleFairAtTheDoor(t *testing.T) {
	t.Parallel()
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, st, clk, Config{FairStartingPerTenant: 1})
	const n = 5
	var defs []*process.Definition
	for range n {
		defs = append(defs, scheduled(t, procs, "ten_fan"))
	}
	g := eng.starting
	ctx := context.Background()
	// Another tenant is active: it has a start in progress.
	if err := g.enter(ctx, "ten_quiet"); err != nil {
		t.Fatal(err)
	}
	// ten_fan's own start in progress holds its one fair slot.
	if err := g.enter(ctx, "ten_fan"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(15 * time.Minute)
	testwait.Until(t, "ten_fan's ticks wait at the door", func() bool { return gateLine(g, "ten_fan") == n })
	for _, d := range defs {
		if got := firedAt(t, eng, "ten_fan", d.ID); len(got) != 0 {
			t.Fatalf("a tick started %v past the fair cap", got)
		}
	}
	g.leave("ten_fan")
	for _, d := range defs {
		testwait.Until(t, "each tick started its run", func() bool { return len(firedAt(t, eng, "ten_fan", d.ID)) == 1 })
	}
	g.leave("ten_quiet")
}

// TestPausedScheduleHoldsOneTick: a paused process's schedule starts no
// run while the process is paused, through a restart; its resume starts
// one run, of the first tick held, and the schedule goes on from then (the
// ticks missed meanwhile are not made up, as after a server was down).
func TestPausedScheduleHoldsOneTick(t *testing.T) {
	t.Parallel()
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, st, clk, Config{})
	def := scheduled(t, procs, "ten_a")
	ctx := context.Background()
	if _, err := eng.PauseProcess(ctx, "ten_a", def.ID); err != nil {
		t.Fatal(err)
	}
	held := func(eng *Engine) bool {
		eng.sched.mu.Lock()
		defer eng.sched.mu.Unlock()
		_, ok := eng.sched.heldTicks[pausedRef{"ten_a", def.ID}]
		return ok
	}
	clk.Advance(15 * time.Minute)
	testwait.Until(t, "the paused process's tick is held", func() bool { return held(eng) })
	clk.Advance(30 * time.Minute) // 09:45: the ticks of 09:30 and 09:45 pass
	if got := firedAt(t, eng, "ten_a", def.ID); len(got) != 0 {
		t.Fatalf("the paused process's schedule started runs %v", got)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	eng, _ = schedEngine(t, st, clk, Config{})
	testwait.Until(t, "the tick is held again after the reopen", func() bool { return held(eng) })
	if got := firedAt(t, eng, "ten_a", def.ID); len(got) != 0 {
		t.Fatalf("the paused process's schedule started runs %v after the reopen", got)
	}
	if _, err := eng.ResumeProcess(ctx, "ten_a", def.ID, "usr"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the resume started the held tick's run", func() bool { return len(firedAt(t, eng, "ten_a", def.ID)) == 1 })
	clk.Advance(15 * time.Minute) // 10:00
	testwait.Until(t, "the schedule went on", func() bool { return len(firedAt(t, eng, "ten_a", def.ID)) == 2 })
	want := []string{"2026-03-02T09:15:00Z", "2026-03-02T10:00:00Z"}
	if diff := cmp.Diff(want, firedAt(t, eng, "ten_a", def.ID)); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	rs, _, err := eng.ListRuns(ctx, "ten_a", RunQuery{ProcessID: def.ID}, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Status != RunWaiting {
			t.Errorf("run of %v is %s, want waiting (not paused)", r.Trigger.Data["fired_at"], r.Status)
		}
	}
	if held(eng) {
		t.Error("a tick is still held after the resume")
	}
}

// rerunAtOneSlot opens an engine whose start gate lets one start of a
// tenant in at once (MaxStartingPerTenant 1), with ten_a's process of one
// wait step and a run of it cancelled, which can be rerun from "wait".
func rerunAtOneSlot(t *testing.T) (*Engine, *process.Definition, *Run) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, memStore(t), clk, Config{MaxStartingPerTenant: 1})
	def, r := startNew(t, eng, procs, "ten_a", `{"name":"Wait","trigger":{"type":"manual"},
		"steps":[{"key":"wait","type":"wait","config":{"duration":"24h"}}]}`)
	if _, err := eng.Cancel(context.Background(), CancelParams{Tenant: "ten_a", RunID: r.ID}); err != nil {
		t.Fatal(err)
	}
	return eng, def, r
}

// TestRerunPassesTheDoor: a rerun is a start by hand: it waits at the
// start gate as Start does.
func TestRerunPassesTheDoor(t *testing.T) {
	t.Parallel()
	eng, _, r := rerunAtOneSlot(t)
	ctx := context.Background()
	g := eng.starting
	if err := g.enter(ctx, "ten_a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Rerun(ctx, "ten_a", r.ID, "wait", "usr")
		done <- err
	}()
	testwait.Until(t, "the rerun waits at the door", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the rerun went past the taken slot: %v", err)
		default:
		}
		return gateLine(g, "ten_a") == 1
	})
	g.leave("ten_a")
	if err := testwait.Recv(t, done, "the rerun once the slot was free"); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(ctx)
	if err := g.enter(ctx, "ten_a"); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := eng.Rerun(gone, "ten_a", r.ID, "wait", "usr")
		done <- err
	}()
	testwait.Until(t, "the second rerun waits at the door", func() bool { return gateLine(g, "ten_a") == 1 })
	cancel()
	if err := testwait.Recv(t, done, "the cancelled rerun"); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled rerun: %v, want context.Canceled", err)
	}
	g.leave("ten_a")
}

// TestRerunKeyAfterTheDoor: a keyed rerun (a bulk retry's) and a Start
// with the same key take the tenant's door and the key in one order, the
// door first. Here the Start waits at the door, the rerun behind it; once
// the one slot is free the Start takes it, then the key. Had the rerun
// taken the key before waiting at the door, the Start would wait for the
// key while holding the slot the rerun waits for, and neither would ever
// return. Both answer with the Start's run: the key started it first.
func TestRerunKeyAfterTheDoor(t *testing.T) {
	t.Parallel()
	eng, def, r := rerunAtOneSlot(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the engine closes: a stalled call returns
	g := eng.starting
	if err := g.enter(ctx, "ten_a"); err != nil {
		t.Fatal(err)
	}
	const job = "job_1"
	key := "bulk/" + job + "/" + r.ID // the key rerun gives a bulk job's rerun
	type answer struct {
		who string
		id  string
		err error
	}
	answers := make(chan answer, 2)
	go func() {
		run, err := eng.Start(ctx, StartParams{Tenant: "ten_a", ProcessID: def.ID, IdempotencyKey: key})
		a := answer{who: "start", err: err}
		if run != nil {
			a.id = run.ID
		}
		answers <- a
	}()
	testwait.Until(t, "the start waits at the door", func() bool { return gateLine(g, "ten_a") == 1 })
	go func() {
		run, err := eng.rerun(ctx, "ten_a", r.ID, "wait", "usr", job)
		a := answer{who: "rerun", err: err}
		if run != nil {
			a.id = run.ID
		}
		answers <- a
	}()
	testwait.Until(t, "the rerun waits at the door", func() bool { return gateLine(g, "ten_a") == 2 })
	g.leave("ten_a")
	got := map[string]answer{}
	for range 2 {
		a := testwait.Recv(t, answers, "the start and the rerun answered")
		if a.err != nil {
			t.Fatalf("%s: %v", a.who, a.err)
		}
		got[a.who] = a
	}
	if got["start"].id == "" || got["rerun"].id != got["start"].id {
		t.Errorf("the start made %q, the rerun answered %q; want the start's run for both", got["start"].id, got["rerun"].id)
	}
}

// TestHeldTicksLeaveRoom: ticks held for paused processes do not count
// toward the keys in flight, so with more paused schedules than the
// scheduler hands out at once (maxDueInflight, 4 here), another tenant's
// timer still fires; and every held tick starts its run on resume.
// Before, each held tick stayed in flight: the scheduler stopped handing
// out any due key until resumes.
func TestHeldTicksLeaveRoom(t *testing.T) {
	t.Parallel()
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := engineOn(t, st, clk, Config{})
	eng.sched.limit = 4
	ctx := context.Background()
	if err := eng.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var paused []*process.Definition
	for range eng.sched.limit + 1 {
		def := scheduled(t, procs, "ten_a")
		if _, err := eng.PauseProcess(ctx, "ten_a", def.ID); err != nil {
			t.Fatal(err)
		}
		paused = append(paused, def)
	}
	_, r := startNew(t, eng, procs, "ten_b", `{"name":"Short wait","trigger":{"type":"manual"},
		"steps":[{"key":"wait","type":"wait","config":{"duration":"20m"}}]}`)
	heldN := func() int { _, held := SchedHeld(eng); return held }
	clk.Advance(15 * time.Minute) // 09:15: every paused schedule's tick is due
	testwait.Until(t, "the paused schedules' ticks are held", func() bool { return heldN() == len(paused) })
	clk.Advance(10 * time.Minute) // 09:25: ten_b's timer is due
	testwait.Until(t, "the other tenant's timer fires", func() bool {
		got, err := eng.GetRun(ctx, "ten_b", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == RunCompleted
	})
	// The timer's key is let go once its commit is told, just after the
	// run reads completed.
	testwait.Until(t, "no key in flight while only held ticks are due", func() bool {
		inflight, _ := SchedHeld(eng)
		return inflight == 0
	})
	for _, def := range paused {
		if _, err := eng.ResumeProcess(ctx, "ten_a", def.ID, "usr"); err != nil {
			t.Fatal(err)
		}
	}
	for _, def := range paused {
		testwait.Until(t, "the resume started the held tick's run", func() bool { return len(firedAt(t, eng, "ten_a", def.ID)) == 1 })
		if diff := cmp.Diff([]string{"2026-03-02T09:15:00Z"}, firedAt(t, eng, "ten_a", def.ID)); diff != "" {
			t.Errorf("runs of %s (-want +got):\n%s", def.ID, diff)
		}
	}
	if n := heldN(); n != 0 {
		t.Errorf("%d ticks still held after the resumes", n)
	}
}

// TestHeldTickForgottenWithItsSchedule: the tick held for a paused
// process is forgotten (heldTicks, heldKeys) when a change of the process
// deletes it: archived, disabled, or its schedule replaced by a manual
// trigger. Before, it stayed in memory until a resume, which an archived
// process never has.
func TestHeldTickForgottenWithItsSchedule(t *testing.T) {
	t.Parallel()
	off, manual := false, process.Trigger{Type: process.TriggerManual}
	for _, test := range []struct {
		name   string
		change func(ctx context.Context, procs *process.Service, id string) error
	}{
		{"archived", func(ctx context.Context, procs *process.Service, id string) error {
			return procs.Archive(ctx, "ten_a", "usr", id)
		}},
		{"disabled", func(ctx context.Context, procs *process.Service, id string) error {
			_, _, err := procs.Update(ctx, "ten_a", "usr", id, process.ProcessPatch{Enabled: &off})
			return err
		}},
		{"manual", func(ctx context.Context, procs *process.Service, id string) error {
			_, _, err := procs.Update(ctx, "ten_a", "usr", id, process.ProcessPatch{Trigger: &manual})
			return err
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
			eng, procs := schedEngine(t, memStore(t), clk, Config{})
			def := scheduled(t, procs, "ten_a")
			ctx := context.Background()
			if _, err := eng.PauseProcess(ctx, "ten_a", def.ID); err != nil {
				t.Fatal(err)
			}
			held := func() (ticks, keys int) {
				eng.sched.mu.Lock()
				defer eng.sched.mu.Unlock()
				return len(eng.sched.heldTicks), len(eng.sched.heldKeys)
			}
			clk.Advance(15 * time.Minute)
			testwait.Until(t, "the paused process's tick is held", func() bool { n, k := held(); return n == 1 && k == 1 })
			if err := test.change(ctx, procs, def.ID); err != nil {
				t.Fatal(err)
			}
			if n, k := held(); n != 0 || k != 0 {
				t.Errorf("after the change, %d held ticks and %d held keys; want none", n, k)
			}
		})
	}
}
