package runengine_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// counterReads is a Badger store that counts the reads of counter keys
// made through View (Gets of one, Scans whose prefix is in them).
type counterReads struct {
	*badgerstore.Store
	n atomic.Int64
}

func (s *counterReads) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(countingReader{r, s}) })
}

type countingReader struct {
	store.Reader
	s *counterReads
}

// countPart is the encoded part every counter key holds after its tenant.
var countPart = store.Key("count")

func (r countingReader) Get(key []byte) ([]byte, error) {
	if bytes.Contains(key, countPart) {
		r.s.n.Add(1)
	}
	return r.Reader.Get(key)
}

func (r countingReader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	if bytes.Contains(opts.Prefix, countPart) {
		r.s.n.Add(1)
	}
	return r.Reader.Scan(opts, fn)
}

func openCounted(t *testing.T, clk *clock.Fake) (*bundle, *counterReads) {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := &counterReads{Store: st}
	return open(t, cs, clk, &testProvider{}, &autoGate{auto: true}), cs
}

// cockpitViewers are the viewers the tests read cockpits for.
var cockpitViewers = []runengine.Viewer{
	{},
	{Assignees: []string{"usr_ann", "ann@example.com"}, CanWork: true, CanDecide: true},
	{Assignees: []string{"usr_bob"}},
}

// counterFigures are a cockpit's figures that come from counters.
func counterFigures(c *runengine.Cockpit) *runengine.Cockpit {
	f := *c
	f.RecentRuns, f.OpenTasks, f.AgreementRate = nil, nil, nil
	return &f
}

// checkCockpit checks that tenant's cockpit, for each viewer, holds the
// counter figures, open tasks and recent runs the store holds, once the
// commits in flight landed, and that reading it read no counter from the
// store (once a first cockpit read them).
func checkCockpit(t *testing.T, b *bundle, cs *counterReads, tenant, what string) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil); err != nil {
		t.Fatal(err)
	}
	var diff string
	defer func() {
		if t.Failed() && diff != "" {
			t.Logf("the cockpit %s (-store +memory):\n%s", what, diff)
		}
	}()
	testwait.Until(t, "the cockpit "+what+" as the store has it", func() bool {
		for _, v := range cockpitViewers {
			before := cs.n.Load()
			got, err := b.eng.Cockpit(ctx, tenant, v, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := cs.n.Load() - before; n != 0 {
				t.Fatalf("the cockpit %s read %d counters from the store", what, n)
			}
			want, err := b.eng.CockpitFromStore(ctx, tenant, v)
			if err != nil {
				t.Fatal(err)
			}
			if diff = cmp.Diff(counterFigures(want), counterFigures(got), cmpopts.EquateEmpty()); diff != "" {
				return false
			}
			open, _, err := b.eng.ListTasks(ctx, tenant, runengine.TaskQuery{Status: runengine.TaskOpen}, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if diff = cmp.Diff(taskIDs(open), taskIDs(got.OpenTasks), cmpopts.EquateEmpty()); diff != "" {
				diff = "open tasks: " + diff
				return false
			}
			recent, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{}, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if diff = cmp.Diff(runStates(recent), runStates(got.RecentRuns), cmpopts.EquateEmpty()); diff != "" {
				diff = "recent runs: " + diff
				return false
			}
		}
		return true
	})
}

// TestCockpitCountersFollowCommits reads a cockpit once, then changes
// every counter it shows (runs started, waiting, overdue, completed; tasks
// opened, assigned and completed; approvals asked and decided): each later
// cockpit shows what the store holds without reading a counter from it.
func TestCockpitCountersFollowCommits(t *testing.T) {
	t.Parallel()
	b, cs := openCounted(t, clock.NewFake(t0))
	ctx := context.Background()
	if _, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil); err != nil {
		t.Fatal(err)
	}
	checkCockpit(t, b, cs, tenant, "of no run")

	task := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	wait := b.create(t, `{"type":"manual"}`, `[{"key":"pause","type":"wait","controls":{"sla_hours":1},"config":{"duration":"2h"}},
		{"key":"done","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	b.create(t, `{"type":"event","event":"invoice.received"}`, `[
		{"key":"pay","type":"execute","capability":"test.echo","controls":{"amount_cap_cents":10000},
		 "config":{"args":{"amount":"${trigger.data.amount}"},"amount_path":"trigger.data.amount"}}]`)

	first, second := b.start(t, task.ID), b.start(t, task.ID)
	r1 := b.waitRun(t, first, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	b.waitRun(t, second, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	checkCockpit(t, b, cs, tenant, "with two open tasks")

	if _, err := b.eng.AssignTask(ctx, runengine.AssignTaskParams{Tenant: tenant, TaskID: *r1.Steps[0].TaskID, Assignee: "usr_ann", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	checkCockpit(t, b, cs, tenant, "with a task assigned")

	waiting := b.start(t, wait.ID)
	b.waitRun(t, waiting, "waiting", stepStatus("pause", runengine.StepWaiting))
	checkCockpit(t, b, cs, tenant, "with a run waiting")
	b.advance(time.Hour)
	b.waitRun(t, waiting, "overdue", func(r *runengine.Run) bool { return r.Overdue })
	checkCockpit(t, b, cs, tenant, "with a run overdue")
	b.advance(time.Hour)
	b.waitRun(t, waiting, "completed", status(runengine.RunCompleted))
	checkCockpit(t, b, cs, tenant, "with a run completed")

	started, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "invoice.received", Data: map[string]any{"amount": 25000}}))
	if err != nil || len(started) != 1 {
		t.Fatalf("publish: %v, %d runs", err, len(started))
	}
	asked := runID(t, started[0])
	r := b.waitRun(t, asked, "waiting on approval", stepStatus("pay", runengine.StepWaitingApproval))
	checkCockpit(t, b, cs, tenant, "with an approval pending")
	if _, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[0].ApprovalID, Approve: true, Actor: "usr_boss"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, asked, "completed", status(runengine.RunCompleted))
	checkCockpit(t, b, cs, tenant, "with the approval decided")

	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r1.Steps[0].TaskID, Action: "complete", Actor: "usr_ann"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, first, "completed", status(runengine.RunCompleted))
	checkCockpit(t, b, cs, tenant, "with a task completed")
	if _, err := b.eng.Cancel(ctx, runengine.CancelParams{Tenant: tenant, RunID: second, Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	checkCockpit(t, b, cs, tenant, "with a run cancelled")
	c, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Running != 0 || c.Completed30d != 3 {
		t.Errorf("cockpit at the end: %d running, %d completed; want 0, 3", c.Running, c.Completed30d)
	}
}

// TestCockpitCountersApartByTenant: one tenant's commits never change
// another's cockpit, read before or after them.
func TestCockpitCountersApartByTenant(t *testing.T) {
	t.Parallel()
	b, cs := openCounted(t, clock.NewFake(t0))
	ctx := context.Background()
	const other = "ten_other"
	in, err := process.DecodeIn([]byte(`{"name":"Other","function":"sales","trigger":{"type":"manual"},
		"steps":[{"key":"check","type":"human_task","config":{"title":"Check"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	otherDef, err := b.procs.Create(ctx, other, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil); err != nil { // held before the other's runs
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	mine := b.start(t, def.ID)
	b.waitRun(t, mine, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	for range 3 {
		r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: other, ProcessID: otherDef.ID, Actor: "usr_test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.eng.WaitRunUntil(ctx, other, r.ID, stepStatus("check", runengine.StepWaitingTask)); err != nil {
			t.Fatal(err)
		}
	}
	checkCockpit(t, b, cs, tenant, "of the first tenant")
	checkCockpit(t, b, cs, other, "of the other tenant")
	want := map[string]map[string]runengine.FunctionCounts{
		tenant: {"finance": {Running: 1, Waiting: 1}},
		other:  {"sales": {Running: 3, Waiting: 3}},
	}
	for ten, byFunction := range want {
		c, err := b.eng.Cockpit(ctx, ten, runengine.Viewer{CanWork: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(byFunction, c.ByFunction); diff != "" || c.WaitingOnYou != byFunction[tenantFunction(ten)].Waiting {
			t.Errorf("%s: waiting on you %d; by function (-want +got):\n%s", ten, c.WaitingOnYou, diff)
		}
	}
}

func tenantFunction(ten string) string {
	if ten == tenant {
		return "finance"
	}
	return "sales"
}

// TestCockpitCountersAcrossDays moves the clock across day changes and
// past the 30-day window: the daily series held in memory moves with it,
// the days it leaves are dropped, and a clock set back reads the days it
// did not hold.
func TestCockpitCountersAcrossDays(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 2, 23, 0, 0, 0, time.UTC))
	back := &backClock{Fake: clk}
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := &counterReads{Store: st}
	b := openWith(t, cs, clk, &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) { c.Clock = back })
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	run := func() {
		t.Helper()
		b.waitRun(t, b.start(t, def.ID), "completed", status(runengine.RunCompleted))
	}
	run()
	checkCockpit(t, b, cs, tenant, "on the first day")
	b.advance(2 * time.Hour) // the next day
	checkCockpit(t, b, cs, tenant, "on the next day, before a run")
	run()
	run()
	checkCockpit(t, b, cs, tenant, "on the next day")
	c, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Daily[28].Completed != 1 || c.Daily[29].Completed != 2 || c.Completed30d != 3 {
		t.Errorf("daily series on the next day: %+v", c.Daily[27:])
	}
	b.advance(29 * 24 * time.Hour) // the first day leaves the window
	checkCockpit(t, b, cs, tenant, "29 days later")
	if c, err = b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil); err != nil || c.Completed30d != 2 {
		t.Errorf("29 days later: %d completed, %v; want 2", c.Completed30d, err)
	}
	run()
	b.advance(24 * time.Hour)
	checkCockpit(t, b, cs, tenant, "30 days later")
	if c, err = b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil); err != nil || c.Completed30d != 1 {
		t.Errorf("30 days later: %d completed, %v; want 1", c.Completed30d, err)
	}
	back.back.Store(int64(30 * 24 * time.Hour)) // back, to days no longer held
	before := cs.n.Load()
	if c, err = b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil); err != nil || c.Completed30d != 3 {
		t.Errorf("with the clock set back to %v: %d completed, %v; want 3", back.Now(), c.Completed30d, err)
	}
	if cs.n.Load() == before {
		t.Error("with the clock set back, the days no longer held were not read again")
	}
	checkCockpit(t, b, cs, tenant, "with the clock set back")
}

// TestCockpitCountersAfterReopen: the counters held in memory are read
// again from the store when the engine opens again, and go on following
// its commits.
func TestCockpitCountersAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	openAt := func() (*bundle, *counterReads) {
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		cs := &counterReads{Store: st}
		return open(t, cs, clk, &testProvider{}, &autoGate{auto: true}), cs
	}
	b, cs := openAt()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	waiting := b.start(t, def.ID)
	b.waitRun(t, waiting, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	checkCockpit(t, b, cs, tenant, "before the reopen")
	b.eng.Close()
	b.st.Close()

	b, cs = openAt()
	checkCockpit(t, b, cs, tenant, "after the reopen")
	b.waitRun(t, b.start(t, def.ID), "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	checkCockpit(t, b, cs, tenant, "after the reopen and a start")
	c, err := b.eng.Cockpit(context.Background(), tenant, runengine.Viewer{CanWork: true}, nil)
	if err != nil || c.Running != 2 || c.WaitingOnYou != 2 {
		t.Fatalf("after the reopen: %d running, %d waiting on you, %v; want 2, 2", c.Running, c.WaitingOnYou, err)
	}
}

// TestCockpitCountersWhileCommitting reads cockpits of tenants first seen
// while runs of theirs start and complete from many goroutines: counters
// read while commits are in flight are neither missed nor counted twice.
func TestCockpitCountersWhileCommitting(t *testing.T) {
	t.Parallel()
	b, cs := openCounted(t, clock.NewFake(t0))
	ctx := context.Background()
	tenants := []string{tenant, "ten_b", "ten_c", "ten_d"}
	defs := map[string]string{}
	for _, ten := range tenants {
		in, err := process.DecodeIn([]byte(`{"name":"Echo","function":"finance","trigger":{"type":"manual"},
			"steps":[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{}}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		def, err := b.procs.Create(ctx, ten, "usr_test", in)
		if err != nil {
			t.Fatal(err)
		}
		defs[ten] = def.ID
	}
	const starters, each = 8, 25
	var wg sync.WaitGroup
	errc := make(chan error, starters)
	for i := range starters {
		ten := tenants[i%len(tenants)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := b.eng.Start(ctx, runengine.StartParams{Tenant: ten, ProcessID: defs[ten], Actor: "usr_test"}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for i := range 40 { // tenants first read, and read again, while the starts commit
		if _, err := b.eng.Cockpit(ctx, tenants[i%len(tenants)], runengine.Viewer{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Wait(t, &wg, "the starts")
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, ten := range tenants {
		testwait.Until(t, "every run of "+ten+" completed", func() bool {
			c, err := b.eng.Cockpit(ctx, ten, runengine.Viewer{}, nil)
			return err == nil && c.Running == 0 && c.Completed30d == starters/len(tenants)*each
		})
		checkCockpit(t, b, cs, ten, "of "+ten+" after the starts")
	}
}

// backClock is a fake clock the test can set back by back nanoseconds, as
// a host's clock may be.
type backClock struct {
	*clock.Fake
	back atomic.Int64
}

func (c *backClock) Now() time.Time { return c.Fake.Now().Add(-time.Duration(c.back.Load())) }

// runStates are the runs' ids and statuses.
func runStates(runs []*runengine.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID+" "+string(r.Status))
	}
	return out
}

func taskIDs(tasks []*runengine.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.ID)
	}
	return out
}
