package runengine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestAmountCapApprovalRejectAndApprove(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[
		{"key":"pay","type":"execute","capability":"test.echo","controls":{"amount_cap_cents":10000},
		 "config":{"args":{"amount":"${trigger.data.amount}"},"amount_path":"trigger.data.amount"}}
	]`)
	// Manual runs carry no trigger data: the amount path holds nothing and the step fails clearly.
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "failed", status(runengine.RunFailed))
	if r.Error == nil || *r.Error == "" {
		t.Fatalf("failed run without error: %+v", r)
	}

	ev := b.create(t, `{"type":"event","event":"invoice.received"}`, `[
		{"key":"pay","type":"execute","capability":"test.echo","controls":{"amount_cap_cents":10000},
		 "config":{"args":{"amount":"${trigger.data.amount}"},"amount_path":"trigger.data.amount"}}
	]`)
	started, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "invoice.received", Data: map[string]any{"amount": 25000}}))
	if err != nil || len(started) != 1 {
		t.Fatalf("publish: %v, %d runs", err, len(started))
	}
	first := runID(t, started[0])
	r = b.waitRun(t, first, "waiting on approval", stepStatus("pay", runengine.StepWaitingApproval))
	apr := *r.Steps[0].ApprovalID
	pending, _, err := b.eng.ListApprovals(ctx, tenant, runengine.ApprovalPending, store.Page{})
	if err != nil || len(pending) != 1 || pending[0].ID != apr {
		t.Fatalf("pending approvals = %v, %v", pending, err)
	}
	if _, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: apr, Reason: "too much", Actor: "usr_boss"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, first, "rejected", status(runengine.RunRejected))
	if len(b.prov.keys()) != 0 {
		t.Errorf("a rejected action was called: %v", b.prov.keys())
	}
	if _, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: apr, Approve: true, Actor: "usr_boss"}); !errors.Is(err, errs.Conflict) {
		t.Errorf("deciding twice: %v, want conflict", err)
	}

	started, err = runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "invoice.received", Data: map[string]any{"amount": 30000}}))
	if err != nil || len(started) != 1 {
		t.Fatalf("publish: %v", err)
	}
	second := runID(t, started[0])
	r = b.waitRun(t, second, "waiting on approval", stepStatus("pay", runengine.StepWaitingApproval))
	d, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[0].ApprovalID, Approve: true, Args: map[string]any{"amount": 29000}, Actor: "usr_boss"})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Approval; a.Status != runengine.ApprovalApproved || !a.Edited {
		t.Fatalf("approval = %+v", a)
	}
	r = b.waitRun(t, second, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff(map[string]any{"amount": float64(29000)}, r.Steps[0].Output); diff != "" {
		t.Errorf("output with edited args (-want +got):\n%s", diff)
	}
	_ = ev
	waitFor(t, "gate outcomes", func() bool {
		b.gate.mu.Lock()
		defer b.gate.mu.Unlock()
		return len(b.gate.outcomes) == 2
	})
	b.gate.mu.Lock()
	agreed := []bool{b.gate.outcomes[0].Agreed, b.gate.outcomes[1].Agreed}
	b.gate.mu.Unlock()
	if diff := cmp.Diff([]bool{false, false}, agreed); diff != "" {
		t.Errorf("agreement of a rejection and an edit (-want +got):\n%s", diff)
	}
}

func runID(t *testing.T, r *runengine.Run) string {
	t.Helper()
	if r == nil || r.ID == "" {
		t.Fatalf("no run id in %+v", r)
	}
	return r.ID
}

// runsOf returns the runs an event started.
func runsOf(p *runengine.Published, err error) ([]*runengine.Run, error) {
	if err != nil {
		return nil, err
	}
	return p.Runs, nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, what, cond)
}

func TestSupervisedGateAsksAPerson(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.gate.auto = false
	def := b.create(t, `{"type":"manual"}`, `[{"key":"send","type":"execute","capability":"test.echo","config":{"args":{"x":1}}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting on approval", stepStatus("send", runengine.StepWaitingApproval))
	a, err := b.eng.GetApproval(context.Background(), tenant, *r.Steps[0].ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"x": float64(1)}, a.Args); a.Tool != "test.echo" || diff != "" {
		t.Errorf("approval tool %q args diff %s", a.Tool, diff)
	}
	if _, err := b.eng.Decide(context.Background(), runengine.DecideParams{Tenant: tenant, ApprovalID: a.ID, Approve: true, Actor: "usr_boss"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
}

func TestRequireApprovalAndExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"route","type":"route","controls":{"require_approval":true},
		"config":{"rules":[{"id":"r","when":{"subject.type":"invoice"},"queue":"ap"}],"default":{"queue":"other"}}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting", stepStatus("route", runengine.StepWaitingApproval))
	a, _ := b.eng.GetApproval(context.Background(), tenant, *r.Steps[0].ApprovalID)
	if a.ExpiresAt == nil || !a.ExpiresAt.Equal(t0.Add(7*24*time.Hour)) {
		t.Fatalf("expires_at = %v", a.ExpiresAt)
	}
	b.advance(7*24*time.Hour + time.Second)
	r = b.waitRun(t, id, "rejected by expiry", status(runengine.RunRejected))
	if *r.Error != "approval expired" {
		t.Errorf("error = %q", *r.Error)
	}
	a, _ = b.eng.GetApproval(context.Background(), tenant, a.ID)
	if a.Status != runengine.ApprovalExpired {
		t.Errorf("approval status = %s", a.Status)
	}
}

func TestRetriesKeepTheAttemptKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.prov.failures = 2
	def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.flaky","config":{"args":{}}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting on a retry", func(r *runengine.Run) bool { return r.Steps[0].Attempts == 1 && r.Status == runengine.RunWaiting })
	b.advance(time.Second)
	b.waitRun(t, id, "second retry", func(r *runengine.Run) bool { return r.Steps[0].Attempts == 2 && r.Status == runengine.RunWaiting })
	b.advance(2 * time.Second)
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff([]string{id + "/call/1", id + "/call/2", id + "/call/3"}, b.prov.keys()); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

func TestRetriesGiveUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.prov.failures = 100
	def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.flaky","config":{"args":{}}}]`)
	id := b.start(t, def.ID)
	for i := 1; i < 5; i++ {
		b.waitRun(t, id, "waiting on a retry", func(r *runengine.Run) bool { return r.Steps[0].Attempts == i && r.Status == runengine.RunWaiting })
		b.advance(time.Duration(1<<(i-1)) * time.Second)
	}
	r := b.waitRun(t, id, "failed", status(runengine.RunFailed))
	if want := "step call: provider test.provider: test.flaky: flaky is down (gave up after 5 attempts)"; *r.Steps[0].Error != want {
		t.Errorf("error = %q, want %q", *r.Steps[0].Error, want)
	}
}

func TestWaitSLAAndCockpit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"pause","type":"wait","controls":{"sla_hours":1},"config":{"duration":"2h"}},
		{"key":"done","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("pause", runengine.StepWaiting))
	c, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]runengine.FunctionCounts{"finance": {Running: 1, Waiting: 1}}, c.ByFunction); c.Running != 1 || diff != "" {
		t.Errorf("cockpit running %d, by function diff %s", c.Running, diff)
	}
	b.advance(time.Hour)
	r := b.waitRun(t, id, "overdue", func(r *runengine.Run) bool { return r.Overdue })
	overdue, _, _ := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{Overdue: true}, store.Page{})
	if len(overdue) != 1 || overdue[0].ID != r.ID {
		t.Errorf("overdue list = %v", overdue)
	}
	b.advance(time.Hour)
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if r.Overdue {
		t.Error("a completed run is still overdue")
	}
	c, err = b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Running != 0 || c.Overdue != 0 || c.Completed30d != 1 || c.MinutesSaved30d != 5 || len(c.RecentRuns) != 1 {
		t.Errorf("cockpit after completion = %+v", c)
	}
	today := r.CompletedAt.UTC().Format("2006-01-02")
	if len(c.Daily) != 30 || c.Daily[29] != (runengine.DayCount{Date: today, Completed: 1, MinutesSaved: 5}) ||
		c.Daily[0].Date != r.CompletedAt.UTC().Add(-29*24*time.Hour).Format("2006-01-02") || c.Daily[28].Completed != 0 {
		t.Errorf("cockpit daily series = %+v", c.Daily)
	}
}

func TestEventTriggerFilterAndWaitForEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.create(t, `{"type":"event","event":"docs.document.validated","filter":{"fields.total":{"gt":1000}}}`, `[
		{"key":"reply","type":"wait","config":{"event":"supplier.replied","filter":{"invoice":"${trigger.data.number}"},"timeout":"24h"}}
	]`)
	small, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "docs.document.validated", Data: map[string]any{"number": "A", "fields": map[string]any{"total": 10}}}))
	if err != nil || len(small) != 0 {
		t.Fatalf("a filtered-out event started %d runs (%v)", len(small), err)
	}
	big, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "docs.document.validated", Data: map[string]any{"number": "B", "fields": map[string]any{"total": 5000}}}))
	if err != nil || len(big) != 1 {
		t.Fatalf("publish: %d runs, %v", len(big), err)
	}
	id := runID(t, big[0])
	b.waitRun(t, id, "waiting for the reply", stepStatus("reply", runengine.StepWaiting))
	// A reply for another invoice does not wake it; the right one does.
	if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "supplier.replied", Data: map[string]any{"invoice": "A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: "ten_other", Name: "supplier.replied", Data: map[string]any{"invoice": "B"}}); err != nil {
		t.Fatal(err)
	}
	r, _ := b.eng.GetRun(ctx, tenant, id)
	if r.Status != runengine.RunWaiting {
		t.Fatalf("woken by the wrong event: %s", r.Status)
	}
	if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "supplier.replied", Data: map[string]any{"invoice": "B", "text": "paid"}}); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	out := r.Steps[0].Output.(map[string]any)
	if out["timed_out"] != false || out["data"].(map[string]any)["text"] != "paid" {
		t.Errorf("wait output = %v", out)
	}
}

// TestUnheardEventsReachLaterListeners checks that events no process or
// run listens to are skipped, and that a listener added after a skip gets
// the next ones.
func TestUnheardEventsReachLaterListeners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const done = "process.run.completed"
	first := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	b.waitRun(t, b.start(t, first.ID), "completed", status(runengine.RunCompleted))
	if b.eng.Heard(tenant, done) {
		t.Fatalf("%s heard with no listener", done)
	}
	follower := b.create(t, `{"type":"event","event":"process.run.completed","filter":{"process_id":"`+first.ID+`"}}`,
		`[{"key":"note","type":"execute","capability":"test.echo","config":{"args":{"after":"${trigger.data.run_id}"}}}]`)
	if !b.eng.Heard(tenant, done) || b.eng.Heard("ten_other", done) {
		t.Fatalf("heard after a trigger: %v here, %v in another tenant", b.eng.Heard(tenant, done), b.eng.Heard("ten_other", done))
	}
	id := b.start(t, first.ID)
	waitFor(t, "the follower's run", func() bool {
		rs, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: follower.ID}, store.Page{})
		return err == nil && len(rs) == 1 && rs[0].Status == runengine.RunCompleted &&
			rs[0].Steps[0].Output.(map[string]any)["after"] == id
	})
	// A run waiting for an event makes it heard.
	if b.eng.Heard(tenant, "supplier.replied") {
		t.Fatal("supplier.replied heard with no listener")
	}
	waiter := b.create(t, `{"type":"manual"}`, `[{"key":"reply","type":"wait","config":{"event":"supplier.replied","timeout":"24h"}}]`)
	b.waitRun(t, b.start(t, waiter.ID), "waiting", stepStatus("reply", runengine.StepWaiting))
	if !b.eng.Heard(tenant, "supplier.replied") {
		t.Error("supplier.replied not heard while a run waits for it")
	}
}

func TestCronStartsRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"schedule","cron":"*/15 * * * *","timezone":"Europe/Berlin"}`,
		`[{"key":"tick","type":"execute","capability":"test.echo","config":{"args":{"at":"${trigger.data.fired_at}"}}}]`)
	list := func() []*runengine.Run {
		rs, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	// A minute short of the first tick, then the tick, then the next one:
	// exactly one run per tick, each fired at its tick's time (a run
	// started early would show as a third run or a wrong fired_at).
	b.advance(14 * time.Minute)
	b.advance(time.Minute)
	waitFor(t, "first scheduled run", func() bool { return len(list()) >= 1 })
	b.advance(15 * time.Minute)
	waitFor(t, "second scheduled run", func() bool { return len(list()) >= 2 })
	var got []string
	for _, r := range list() {
		got = append(got, string(r.Trigger.Type)+" "+fmt.Sprint(r.Trigger.Data["fired_at"]))
	}
	want := []string{"schedule 2026-03-02T09:30:00Z", "schedule 2026-03-02T09:15:00Z"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scheduled runs, newest first (-want +got):\n%s", diff)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting", stepStatus("t", runengine.StepWaitingTask))
	if _, err := b.eng.Cancel(ctx, runengine.CancelParams{Tenant: tenant, RunID: id, Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	task, _ := b.eng.GetTask(ctx, tenant, *r.Steps[0].TaskID)
	if task.Status != runengine.TaskCancelled {
		t.Errorf("task of a cancelled run is %s", task.Status)
	}
	if _, err := b.eng.Cancel(ctx, runengine.CancelParams{Tenant: tenant, RunID: id, Actor: "usr_a"}); !errors.Is(err, errs.Conflict) {
		t.Errorf("cancel twice: %v", err)
	}
}

// TestResumeAfterReopen closes the engine and the store mid-run and opens
// them again: a timer whose time passed while closed fires, and a task
// opened before is completed after.
func TestResumeAfterReopen(t *testing.T) {
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
	def := b.create(t, `{"type":"manual"}`, `[{"key":"pause","type":"wait","config":{"duration":"1h"}},
		{"key":"task","type":"human_task","config":{"title":"Check"}},
		{"key":"end","type":"execute","capability":"test.echo","config":{"args":{"ok":true}}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("pause", runengine.StepWaiting))
	b.eng.Close()
	b.st.Close()

	clk.Advance(2 * time.Hour) // the timer's time passes while closed
	b = openAt()
	r := b.waitRun(t, id, "waiting on the task", stepStatus("task", runengine.StepWaitingTask))
	b.eng.Close()
	b.st.Close()

	b = openAt()
	if _, err := b.eng.CompleteTask(context.Background(), runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[1].TaskID, Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff([]string{id + "/end/1"}, prov.keys()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestHeardAfterReopen checks that a reopened engine finds the listeners
// in the store: event triggers and runs waiting for events.
func TestHeardAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	openAt := func() *bundle {
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return open(t, st, clk, &testProvider{}, &autoGate{auto: true})
	}
	b := openAt()
	b.create(t, `{"type":"event","event":"crm.deal.won"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	waiter := b.create(t, `{"type":"manual"}`, `[{"key":"reply","type":"wait","config":{"event":"supplier.replied","timeout":"24h"}}]`)
	b.waitRun(t, b.start(t, waiter.ID), "waiting", stepStatus("reply", runengine.StepWaiting))
	b.eng.Close()
	b.st.Close()

	b = openAt()
	for name, want := range map[string]bool{"crm.deal.won": true, "supplier.replied": true, "crm.deal.lost": false} {
		if got := b.eng.Heard(tenant, name); got != want {
			t.Errorf("Heard(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestTaskCreateCapability(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.reg.Register(b.eng.Provider()); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"ask","type":"execute","capability":"task.create",
		"config":{"args":{"title":"Call ${subject.label}","actions":["done"]}}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	taskID, _ := r.Steps[0].Output.(map[string]any)["task_id"].(string)
	ctx := context.Background()
	task, err := b.eng.GetTask(ctx, tenant, taskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Call INV-1" || task.RunID != id || task.Status != runengine.TaskOpen {
		t.Errorf("task = %+v", task)
	}
	c, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{CanWork: true}, nil)
	if err != nil || c.WaitingOnYou != 1 {
		t.Fatalf("waiting on you = %d, %v", c.WaitingOnYou, err)
	}
	// The run does not wait on it, but a person can still complete it.
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "done", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	c, _ = b.eng.Cockpit(ctx, tenant, runengine.Viewer{CanWork: true}, nil)
	if c.WaitingOnYou != 0 {
		t.Errorf("waiting on you after completion = %d", c.WaitingOnYou)
	}
}

// mailProvider fills email.send and counts what it sent per idempotency key.
type mailProvider struct {
	mu   sync.Mutex
	sent map[string]json.RawMessage
}

func (p *mailProvider) Info() capability.Info {
	return capability.Info{ID: "test.mail", Name: "Mail", Kind: capability.KindBuiltin, Capabilities: []string{"email.send"}}
}

func (p *mailProvider) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sent == nil {
		p.sent = map[string]json.RawMessage{}
	}
	p.sent[c.IdempotencyKey] = c.Args
	return json.RawMessage(`{"message_id":"msg_1","status":"queued"}`), nil
}

func (p *mailProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sent)
}

func TestFollowUpRemindsUntilReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mp := &mailProvider{}
	if err := b.reg.Register(mp); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"chase","type":"follow_up","config":{"to":"ap@supplier.example",
		"subject":"Invoice ${subject.label}","body":"Please pay.","every":"48h","max_reminders":3,
		"until_event":"payment.received","filter":{"invoice":"${subject.label}"}}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("chase", runengine.StepWaiting))
	if mp.count() != 1 {
		t.Fatalf("sent %d reminders at start", mp.count())
	}
	b.advance(48 * time.Hour)
	waitFor(t, "second reminder", func() bool { return mp.count() == 2 })
	// The reply comes once the second reminder's result is applied: a reply
	// that ends the step while that call is in flight drops its result, and
	// the step counts the reminders whose results it took.
	b.waitRun(t, id, "second reminder applied", func(r *runengine.Run) bool {
		return r.Steps[0].Reminders() == 2 && r.Steps[0].Status == runengine.StepWaiting
	})
	if _, err := b.eng.Publish(context.Background(), runengine.PublishParams{Tenant: tenant, Name: "payment.received", Data: map[string]any{"invoice": "INV-1"}}); err != nil {
		t.Fatal(err)
	}
	r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	out := r.Steps[0].Output.(map[string]any)
	if out["replied"] != true || out["reminders_sent"] != float64(2) {
		t.Errorf("output = %v", out)
	}
	mp.mu.Lock()
	_, ok := mp.sent[id+"/chase/reminder-2/1"]
	mp.mu.Unlock()
	if !ok {
		t.Errorf("reminder keys = %v", mp.sent)
	}
}

func TestFollowUpGivesUpAfterMax(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mp := &mailProvider{}
	if err := b.reg.Register(mp); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"chase","type":"follow_up","config":{"to":"a@b.example",
		"subject":"s","body":"b","every":"1h","max_reminders":2}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("chase", runengine.StepWaiting))
	b.advance(time.Hour)
	waitFor(t, "second reminder", func() bool { return mp.count() == 2 })
	// The stored run says waiting before the reminder's result is applied;
	// wait for the applied result, or the clock moves before the next timer.
	b.waitRun(t, id, "waiting again", func(r *runengine.Run) bool {
		return r.Steps[0].Reminders() == 2 && r.Steps[0].Status == runengine.StepWaiting
	})
	b.advance(time.Hour)
	r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if out := r.Steps[0].Output.(map[string]any); out["replied"] != false || out["reminders_sent"] != float64(2) {
		t.Errorf("output = %v", out)
	}
}

func TestMonitorChecksUntilTheConditionHolds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.prov.failures = 0
	// test.echo returns its args: the condition holds once ${subject.label} is INV-1.
	def := b.create(t, `{"type":"manual"}`, `[{"key":"watch","type":"monitor","capability":"test.echo",
		"config":{"args":{"label":"${subject.label}"},"condition":{"value.label":"INV-2"},"interval":"1h","timeout":"3h"}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("watch", runengine.StepWaiting))
	for i := 0; i < 2; i++ {
		b.advance(time.Hour)
		// Wait for the check's result to be applied (not just the call made),
		// so the next timer is set from this hour, not the next.
		b.waitRun(t, id, "checked", func(r *runengine.Run) bool {
			return r.Steps[0].Checks() == i+2 && r.Status == runengine.RunWaiting
		})
	}
	b.advance(time.Hour)
	r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if out := r.Steps[0].Output.(map[string]any); out["held"] != false || out["checks"] != float64(4) {
		t.Errorf("output = %v", out)
	}
}

func TestDraftReviewedByAPerson(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"reply","type":"draft","config":{"title":"Reply",
		"template":"Dear supplier, invoice ${subject.label} is approved."}}]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting", stepStatus("reply", runengine.StepWaitingTask))
	task, _ := b.eng.GetTask(context.Background(), tenant, *r.Steps[0].TaskID)
	if *task.Description != "Dear supplier, invoice INV-1 is approved." {
		t.Fatalf("draft text = %q", *task.Description)
	}
	if _, err := b.eng.CompleteTask(context.Background(), runengine.CompleteTaskParams{Tenant: tenant, TaskID: task.ID, Action: "approve", Fields: map[string]any{"text": "Dear supplier, INV-1 is paid."}, Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	out := r.Steps[0].Output.(map[string]any)
	if out["text"] != "Dear supplier, INV-1 is paid." || out["edited"] != true || out["outcome"] != "approve" {
		t.Errorf("output = %v", out)
	}
}

// blockProvider fills test.block: each call waits until release is closed
// or, unless it is stubborn, until the call's context ends.
type blockProvider struct {
	release  chan struct{}
	stubborn bool
	calls    atomic.Int32
}

func (p *blockProvider) Info() capability.Info {
	return capability.Info{ID: "test.blocker", Name: "Blocker", Kind: capability.KindBuiltin, Capabilities: []string{"test.block"}}
}

func (p *blockProvider) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.block", Name: "Block", Description: "Waits for the test.", Args: obj, Result: obj}}
}

func (p *blockProvider) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	p.calls.Add(1)
	if p.stubborn {
		<-p.release
		return json.RawMessage(`{}`), nil
	}
	select {
	case <-p.release:
		return json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestListRunsByStatus lists runs of each status, running ones from the
// active index, page by page and tenant by tenant.
func TestListRunsByStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	blocker := &blockProvider{release: make(chan struct{})}
	if err := b.reg.Register(blocker); err != nil {
		t.Fatal(err)
	}
	startIn := func(ten, processID string) string {
		raw, err := b.eng.Start(ctx, runengine.StartParams{Tenant: ten, ProcessID: processID, Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}})
		if err != nil {
			t.Fatal(err)
		}
		b.advance(time.Millisecond) // ids made at one instant would sort at random
		return runID(t, raw)
	}
	task := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	block := b.create(t, `{"type":"manual"}`, `[{"key":"wait","type":"execute","capability":"test.block","config":{"args":{}}}]`)
	echo := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	otherBlock, err := b.procs.Create(ctx, "ten_other", "usr_a", process.ProcessIn{Name: "Other", Function: "ops",
		Trigger: process.Trigger{Type: process.TriggerManual},
		Steps:   []process.Step{{Key: "wait", Type: process.StepExecute, Capability: "test.block", Config: json.RawMessage(`{"args":{}}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	waiting := startIn(tenant, task.ID)
	running1 := startIn(tenant, block.ID)
	running2 := startIn(tenant, block.ID)
	completed := startIn(tenant, echo.ID)
	otherRunning := startIn("ten_other", otherBlock.ID)
	b.waitRun(t, completed, "completed", status(runengine.RunCompleted))
	b.waitRun(t, waiting, "waiting", status(runengine.RunWaiting))
	waitFor(t, "three blocked calls", func() bool { return blocker.calls.Load() == 3 })

	list := func(ten string, st runengine.RunStatus, p store.Page) ([]string, string) {
		rs, next, err := b.eng.ListRuns(ctx, ten, runengine.RunQuery{Status: st}, p)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			if r.Status != st {
				t.Errorf("%s list holds a %s run", st, r.Status)
			}
			got = append(got, r.ID)
		}
		return got, next
	}
	first, cursor := list(tenant, runengine.RunRunning, store.Page{Limit: 1})
	second, end := list(tenant, runengine.RunRunning, store.Page{Limit: 1, Cursor: cursor})
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"running, page 1", first, []string{running2}},
		{"running, page 2", second, []string{running1}},
		{"waiting", must(list(tenant, runengine.RunWaiting, store.Page{})), []string{waiting}},
		{"completed", must(list(tenant, runengine.RunCompleted, store.Page{})), []string{completed}},
		{"other tenant running", must(list("ten_other", runengine.RunRunning, store.Page{})), []string{otherRunning}},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if end != "" {
		t.Errorf("the last page of running runs has a next cursor %q", end)
	}
	close(blocker.release)
	b.waitRun(t, running1, "completed", status(runengine.RunCompleted))
	b.waitRun(t, running2, "completed", status(runengine.RunCompleted))
	if got := must(list(tenant, runengine.RunRunning, store.Page{})); len(got) != 0 {
		t.Errorf("running after the calls returned: %v", got)
	}
	if diff := cmp.Diff([]string{completed, running2, running1}, must(list(tenant, runengine.RunCompleted, store.Page{}))); diff != "" {
		t.Errorf("completed (-want +got):\n%s", diff)
	}
}

func must[T any](v T, _ string) T { return v }

// TestConcurrentDecisionsConflict sends two completions of one task, and
// two decisions of one approval, at once: one wins, the other is told the
// task or approval was already settled, and the record keeps the winner.
func TestConcurrentDecisionsConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	taskDef := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check","actions":["approve","reject"]}}]`)
	aprDef := b.create(t, `{"type":"manual"}`, `[{"key":"pay","type":"execute","capability":"test.echo","controls":{"require_approval":true},"config":{"args":{}}}]`)
	for round := range 20 {
		id := b.start(t, taskDef.ID)
		r := b.waitRun(t, id, "waiting", stepStatus("check", runengine.StepWaitingTask))
		taskID := *r.Steps[0].TaskID
		results := make([]error, 2)
		var wg sync.WaitGroup
		for i, action := range []string{"approve", "reject"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, results[i] = b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: action, Actor: "usr_" + action})
			}()
		}
		testwait.Wait(t, &wg, "both completions returned")
		won := checkOneWins(t, fmt.Sprintf("task round %d", round), results)
		task, err := b.eng.GetTask(ctx, tenant, taskID)
		if want := []string{"approve", "reject"}[won]; err != nil || task.Outcome == nil || *task.Outcome != want {
			t.Errorf("task round %d: %+v, %v; want outcome %s", round, task, err, want)
		}

		id = b.start(t, aprDef.ID)
		r = b.waitRun(t, id, "waiting", stepStatus("pay", runengine.StepWaitingApproval))
		aprID := *r.Steps[0].ApprovalID
		for i, approve := range []bool{true, false} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, results[i] = b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: aprID, Approve: approve, Actor: fmt.Sprintf("usr_%d", i)})
			}()
		}
		testwait.Wait(t, &wg, "both decisions returned")
		won = checkOneWins(t, fmt.Sprintf("approval round %d", round), results)
		a, err := b.eng.GetApproval(ctx, tenant, aprID)
		if want := []runengine.ApprovalStatus{runengine.ApprovalApproved, runengine.ApprovalRejected}[won]; err != nil || a.Status != want {
			t.Errorf("approval round %d: status %s, %v; want %s", round, a.Status, err, want)
		}
	}
}

// checkOneWins checks that exactly one of errs is nil and the other a
// conflict, and returns the winner's index.
func checkOneWins(t *testing.T, what string, got []error) int {
	t.Helper()
	switch {
	case got[0] == nil && errors.Is(got[1], errs.Conflict):
		return 0
	case got[1] == nil && errors.Is(got[0], errs.Conflict):
		return 1
	}
	t.Errorf("%s: errors %v, want one success and one conflict", what, got)
	return 0
}

// TestCloseDoesNotWaitForAStuckProvider closes the engine while a provider
// ignores the cancellation of its call: Close returns after its grace
// period.
func TestCloseDoesNotWaitForAStuckProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stuck := &blockProvider{release: make(chan struct{}), stubborn: true}
	defer close(stuck.release)
	if err := b.reg.Register(stuck); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"wait","type":"execute","capability":"test.block","config":{"args":{}}}]`)
	b.start(t, def.ID)
	waitFor(t, "the stubborn call", func() bool { return stuck.calls.Load() == 1 })
	closed := make(chan struct{})
	go func() { b.eng.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close waits for a provider that does not return")
	}
}

// TestCockpitUnassignedFunction: the runs of a process that names no
// function are counted under "unassigned", next to a process that names
// that function itself.
func TestCockpitUnassignedFunction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	steps := `[{"key":"pause","type":"wait","config":{"duration":"2h"}}]`
	var defs []*process.Definition
	for _, fn := range []string{``, `,"function":"unassigned"`} {
		in, err := process.DecodeIn([]byte(`{"name":"Process","trigger":{"type":"manual"},"steps":` + steps + fn + `}`))
		if err != nil {
			t.Fatal(err)
		}
		def, err := b.procs.Create(ctx, tenant, "usr_test", in)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
	}
	for _, def := range defs {
		id := b.start(t, def.ID)
		b.waitRun(t, id, "waiting", stepStatus("pause", runengine.StepWaiting))
	}
	c, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]runengine.FunctionCounts{runengine.UnassignedFunction: {Running: 2, Waiting: 2}}
	if diff := cmp.Diff(want, c.ByFunction); diff != "" {
		t.Errorf("by_function (-want +got):\n%s", diff)
	}
}

// TestLoopGuard: a run never starts a run of a process already in its
// chain, and a chain stops at MaxChainDepth; every cut is an audit entry
// and a process.run.loop_stopped event.
func TestLoopGuard(t *testing.T) {
	t.Parallel()
	type proc struct{ name, after string } // after: the process whose completion starts it; "*" any, "" manual
	type cut struct{ Process, Reason string }
	chain := []proc{{"P0", ""}}
	wantChain := map[string]int{"P0": 1}
	for i := 1; i <= runengine.MaxChainDepth+1; i++ {
		chain = append(chain, proc{fmt.Sprintf("P%d", i), fmt.Sprintf("P%d", i-1)})
		wantChain[fmt.Sprintf("P%d", i)] = 1
	}
	wantChain[fmt.Sprintf("P%d", runengine.MaxChainDepth+1)] = 0
	tests := []struct {
		name     string
		procs    []proc
		start    string
		wantRuns map[string]int
		wantCuts []cut
	}{
		{"itself", []proc{{"Self", "*"}}, "Self", map[string]int{"Self": 1}, []cut{{"Self", runengine.LoopSelf}}},
		{"ping-pong", []proc{{"Ping", "Pong"}, {"Pong", "Ping"}}, "Ping", map[string]int{"Ping": 1, "Pong": 1},
			[]cut{{"Ping", runengine.LoopSelf}}},
		{"too deep", chain, "P0", wantChain, []cut{{fmt.Sprintf("P%d", runengine.MaxChainDepth+1), runengine.LoopDepth}}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			byName := map[string]*process.Definition{}
			for _, p := range test.procs {
				trigger := `{"type":"manual"}`
				switch p.after {
				case "":
				case "*":
					trigger = `{"type":"event","event":"process.run.completed"}`
				default:
					trigger = `{"type":"event","event":"process.run.completed","filter":{"process_name":{"eq":"` + p.after + `"}}}`
				}
				in, err := process.DecodeIn([]byte(`{"name":"` + p.name + `","trigger":` + trigger +
					`,"steps":[{"key":"echo","type":"execute","capability":"test.echo","config":{"args":{}}}]}`))
				if err != nil {
					t.Fatal(err)
				}
				if byName[p.name], err = b.procs.Create(ctx, tenant, "usr_test", in); err != nil {
					t.Fatal(err)
				}
			}
			// The watcher hears every cut (and, started by one, is in
			// the chain: it waits, so it completes nothing).
			watcher := b.create(t, `{"type":"event","event":"`+runengine.EventLoopStopped+`"}`,
				`[{"key":"hold","type":"wait","config":{"event":"never.happens"}}]`)
			first := b.start(t, byName[test.start].ID)

			var entries []*audit.Entry
			deadline := time.Now().Add(10 * time.Second)
			for len(entries) < len(test.wantCuts) {
				if time.Now().After(deadline) {
					t.Fatalf("%d loop cuts recorded, want %d", len(entries), len(test.wantCuts))
				}
				time.Sleep(2 * time.Millisecond)
				entries = nil
				err := b.st.View(ctx, func(r store.Reader) error {
					all, _, err := audit.List(r, tenant, audit.Query{Entity: "process"}, store.Page{Limit: 100})
					for _, e := range all {
						if e.Action == runengine.EventLoopStopped && e.EntityID != watcher.ID {
							entries = append(entries, e)
						}
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			var gotCuts []cut
			for _, e := range entries {
				var data struct{ Reason string }
				if err := json.Unmarshal(e.After, &data); err != nil {
					t.Fatal(err)
				}
				for name, def := range byName {
					if def.ID == e.EntityID {
						gotCuts = append(gotCuts, cut{name, data.Reason})
					}
				}
				if e.Actor != "system" || e.Reason == "" {
					t.Errorf("audit entry %+v", e)
				}
			}
			if diff := cmp.Diff(test.wantCuts, gotCuts); diff != "" {
				t.Errorf("cuts (-want +got):\n%s", diff)
			}
			gotRuns := map[string]int{}
			for name, def := range byName {
				rs, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				gotRuns[name] = len(rs)
				for _, r := range rs {
					if r.ID == first {
						if r.Trigger.Cause != nil {
							t.Errorf("the first run has a cause: %+v", r.Trigger.Cause)
						}
					} else if r.Trigger.Cause == nil || r.Trigger.Cause.RootRunID != first {
						t.Errorf("run %s of %s: cause %+v, want root %s", r.ID, name, r.Trigger.Cause, first)
					}
				}
			}
			if diff := cmp.Diff(test.wantRuns, gotRuns); diff != "" {
				t.Errorf("runs per process (-want +got):\n%s", diff)
			}
			if test.name == "itself" {
				// The cut's event started the watcher, within the chain.
				var rs []*runengine.Run
				for deadline := time.Now().Add(10 * time.Second); len(rs) == 0; {
					if time.Now().After(deadline) {
						t.Fatal("the watcher never started")
					}
					time.Sleep(2 * time.Millisecond)
					var err error
					if rs, _, err = b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: watcher.ID}, store.Page{}); err != nil {
						t.Fatal(err)
					}
				}
				if len(rs) != 1 {
					t.Fatalf("watcher runs %d", len(rs))
				}
				c := rs[0].Trigger.Cause
				want := &runengine.Cause{RunID: first, RootRunID: first, Depth: 0, Processes: []string{byName["Self"].ID}}
				if diff := cmp.Diff(want, c); diff != "" {
					t.Errorf("watcher's cause (-want +got):\n%s", diff)
				}
				if d := rs[0].Trigger.Data; d["reason"] != runengine.LoopSelf || d["process_id"] != byName["Self"].ID || d["run_id"] != first {
					t.Errorf("loop_stopped data %v", d)
				}
			}
		})
	}
}

// emitProvider fills loop.make: it makes a "thing" in the store and emits
// thing.made beside it, as an app does (Engine.Emit in its transaction).
type emitProvider struct {
	st  store.Store
	eng func() *runengine.Engine
}

func (p *emitProvider) Info() capability.Info {
	return capability.Info{ID: "loop.provider", Name: "Loop", Kind: capability.KindBuiltin, Capabilities: []string{"loop.make"}}
}

func (p *emitProvider) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "loop.make", Name: "Make", Description: "Makes a thing.", Args: obj, Result: obj}}
}

func (p *emitProvider) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	err := p.st.Update(ctx, func(tx store.Txn) error {
		if err := tx.Set(store.Key(c.Tenant, "thing", c.IdempotencyKey), nil); err != nil {
			return err
		}
		return wiring.EngineOf(p.eng()).Emit(tx, c.Tenant, "thing.made", map[string]any{"key": c.IdempotencyKey})
	})
	if err != nil {
		return nil, err
	}
	wiring.EngineOf(p.eng()).Kick()
	return json.RawMessage(`{}`), nil
}

// TestLoopGuardThroughAnApp: a run whose step makes an app emit the event
// that triggers its own process does not start itself again: the app's
// event carries the run's chain.
func TestLoopGuardThroughAnApp(t *testing.T) {
	t.Parallel()
	bs, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := store.Hooked(bs)
	var b *bundle
	prov := &emitProvider{st: st, eng: func() *runengine.Engine { return b.eng }}
	clk := clock.NewFake(t0)
	procs := process.NewService(process.Config{Store: st, Clock: clk})
	reg := registry.New(registry.Config{Store: st, Clock: clk})
	if err := reg.Register(prov); err != nil {
		t.Fatal(err)
	}
	eng, err := runengine.New(runengine.Config{Store: st, Clock: clk, Capabilities: reg, Processes: procs,
		Gate: &autoGate{auto: true}, RetryBase: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b = &bundle{st: st, clk: clk, procs: procs, reg: reg, eng: eng}
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Close()
		st.Close()
	})
	ctx := context.Background()
	def := b.create(t, `{"type":"event","event":"thing.made"}`,
		`[{"key":"make","type":"execute","capability":"loop.make","config":{"args":{}}}]`)
	started, err := runsOf(eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "thing.made", Data: map[string]any{"key": "outside"}}))
	if err != nil || len(started) != 1 {
		t.Fatalf("publish: %v, %d runs", err, len(started))
	}
	first := runID(t, started[0])
	var entries []*audit.Entry
	for deadline := time.Now().Add(10 * time.Second); len(entries) == 0; {
		if time.Now().After(deadline) {
			rs, _, _ := eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{Limit: 200})
			t.Fatalf("no loop cut recorded; %d runs", len(rs))
		}
		time.Sleep(2 * time.Millisecond)
		err := st.View(ctx, func(r store.Reader) error {
			all, _, err := audit.List(r, tenant, audit.Query{Entity: "process"}, store.Page{Limit: 10})
			entries = nil
			for _, e := range all {
				if e.Action == runengine.EventLoopStopped {
					entries = append(entries, e)
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var after map[string]any
	if err := json.Unmarshal(entries[0].After, &after); err != nil {
		t.Fatal(err)
	}
	if after["reason"] != runengine.LoopSelf || after["run_id"] != first || entries[0].EntityID != def.ID {
		t.Errorf("cut %v, want self_trigger of run %s", after, first)
	}
	rs, _, err := eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{Limit: 200})
	if err != nil || len(rs) != 1 {
		t.Errorf("%d runs, want 1 (%v)", len(rs), err)
	}
}

// TestTasksCarryTheRunPriority: a task made by a human_task step or by
// task.create carries its run's priority (empty for normal), so that an
// inbox can sort by it.
func TestTasksCarryTheRunPriority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.reg.Register(b.eng.Provider()); err != nil {
		t.Fatal(err)
	}
	step := b.create(t, `{"type":"manual"}`, `[{"key":"look","type":"human_task","config":{"title":"Look"}}]`)
	made := b.create(t, `{"type":"manual"}`, `[{"key":"ask","type":"execute","capability":"task.create",
		"config":{"args":{"title":"Call"}}}]`)
	ctx := context.Background()
	for _, tc := range []struct{ priority, want string }{{"high", "high"}, {"low", "low"}, {"normal", ""}, {"", ""}} {
		for _, def := range []*process.Definition{step, made} {
			r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
				Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test", Priority: tc.priority})
			if err != nil {
				t.Fatal(err)
			}
			var taskID string
			b.waitRun(t, r.ID, "a task", func(r *runengine.Run) bool {
				if id := r.Steps[0].TaskID; id != nil {
					taskID = *id
				} else if out, ok := r.Steps[0].Output.(map[string]any); ok {
					taskID, _ = out["task_id"].(string)
				}
				return taskID != ""
			})
			task, err := b.eng.GetTask(ctx, tenant, taskID)
			if err != nil {
				t.Fatal(err)
			}
			if task.Priority != tc.want {
				t.Errorf("%s run, step %s: task priority = %q, want %q", tc.priority, def.Steps[0].Key, task.Priority, tc.want)
			}
		}
	}
}
