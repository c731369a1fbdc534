package runengine_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// countTap counts the events the engine would hand to webhooks.
type countTap struct {
	mu sync.Mutex
	n  int
}

func (c *countTap) Wants(string, string) bool { return true }

func (c *countTap) Tap(*runengine.Event) (func(store.Txn) error, func()) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return nil, nil
}

func (c *countTap) Kick() {}

func (c *countTap) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// sideEffects is what a what-if must leave as it is.
type sideEffects struct {
	Calls, Sent, Runs, Tasks, Approvals, Events int
}

func snapshotEffects(t *testing.T, b *bundle, mail *mailProvider, tap *countTap) sideEffects {
	t.Helper()
	ctx := context.Background()
	rs, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{}, store.Page{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := b.eng.ListTasks(ctx, tenant, runengine.TaskQuery{}, store.Page{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range []runengine.ApprovalStatus{runengine.ApprovalPending, runengine.ApprovalApproved, runengine.ApprovalRejected} {
		as, _, err := b.eng.ListApprovals(ctx, tenant, s, store.Page{Limit: 200})
		if err != nil {
			t.Fatal(err)
		}
		n += len(as)
	}
	return sideEffects{Calls: len(b.prov.keys()), Sent: mail.count(), Runs: len(rs), Tasks: len(ts), Approvals: n,
		Events: tap.count()}
}

// TestWhatIfRaisedAmountCap decides five runs of a payment process by hand
// (one ran on its own), raises the process's amount cap in a new version,
// and replays it over them: the report says where the candidate would
// have paid on its own against what people decided, and the replay made
// no call, sent nothing and wrote no run, task, approval or event.
func TestWhatIfRaisedAmountCap(t *testing.T) {
	t.Parallel()
	mail, tap := &mailProvider{}, &countTap{}
	b := openChanged(t, func(c *runengine.Config) { c.Tap = tap }, mail)
	ctx := context.Background()
	steps := func(cap int) string {
		return `[
		{"key":"notify","type":"execute","capability":"email.send","config":{"args":{"to":"ap@example.com","subject":"Invoice","body":"An invoice came."}}},
		{"key":"pay","type":"execute","capability":"test.echo","controls":{"amount_cap_cents":` + strconv.Itoa(cap) + `},
		 "config":{"args":{"amount":"${trigger.data.amount}"},"amount_path":"trigger.data.amount"}}]`
	}
	def := b.create(t, `{"type":"event","event":"invoice.received"}`, steps(10000))
	type decision struct {
		amount  int
		approve bool
		edit    map[string]any
	}
	ids := map[int]string{}
	for _, d := range []decision{{5000, false, nil}, {25000, false, nil}, {30000, true, nil},
		{40000, true, map[string]any{"amount": 39000}}, {20000, true, nil}} {
		started, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "invoice.received",
			Data: map[string]any{"amount": d.amount}}))
		if err != nil || len(started) != 1 {
			t.Fatalf("publish: %v", err)
		}
		id := runID(t, started[0])
		ids[d.amount] = id
		if d.amount <= 10000 {
			if r := b.waitRun(t, id, "finished", func(r *runengine.Run) bool { return r.Finished() }); r.Status != runengine.RunCompleted {
				t.Fatalf("run %s: %v", r.Status, *r.Error)
			}
			continue
		}
		r := b.waitRun(t, id, "waiting on approval", stepStatus("pay", runengine.StepWaitingApproval))
		if _, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[1].ApprovalID,
			Approve: d.approve, Args: d.edit, Actor: "usr_boss"}); err != nil {
			t.Fatal(err)
		}
		b.waitRun(t, id, "finished", func(r *runengine.Run) bool { return r.Finished() })
	}
	in, err := process.DecodeIn([]byte(`{"name":"Test process","function":"finance","trigger":{"type":"event","event":"invoice.received"},"steps":` + steps(35000) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.procs.Update(ctx, tenant, "usr_test", def.ID, process.ProcessPatch{Steps: in.Steps}); err != nil {
		t.Fatal(err)
	}
	before := snapshotEffects(t, b, mail, tap)

	job, err := b.eng.WhatIf(ctx, tenant, runengine.WhatIfParams{ProcessID: def.ID}, "usr_analyst")
	if err != nil {
		t.Fatal(err)
	}
	if job.Type != runengine.JobWhatIf || job.Total != 5 {
		t.Errorf("job = %+v", job)
	}
	j := waitJob(t, b, job.ID)
	f := func(v float64) *float64 { return &v }
	want := &runengine.WhatIfReport{
		ProcessID: def.ID, Version: 2, Runs: 5, Cases: 4, Compared: 3, Agreed: 2, Deferred: 1, AgreementRate: f(2.0 / 3),
		Steps: []runengine.WhatIfStep{{StepKey: "pay", Compared: 3, Agreed: 2, Deferred: 1, AgreementRate: f(2.0 / 3)}},
		Differences: []runengine.WhatIfDifference{{RunID: ids[25000], StepKey: "pay",
			Human:     runengine.WhatIfAnswer{Decision: "approved", Args: map[string]any{"amount": 25000.0}},
			Candidate: runengine.WhatIfAnswer{Decision: "executed", Args: map[string]any{"amount": 25000.0}}}},
		DifferenceCount: 1, Incomplete: 1, SendsSuppressed: 4,
	}
	want.Differences[0].Human.Decision = "rejected"
	if diff := cmp.Diff(want, j.Result); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if j.Done != 5 || j.Total != 5 || j.Status != runengine.JobCompleted {
		t.Errorf("job progress = %d/%d %s", j.Done, j.Total, j.Status)
	}
	var last *runengine.WhatIfSummary
	if err := b.st.View(ctx, func(r store.Reader) error {
		var err error
		last, err = runengine.LatestWhatIf(r, tenant, def.ID)
		return err
	}); err != nil || last == nil || last.JobID != job.ID || last.Version != 2 || *last.AgreementRate != 2.0/3 || last.Compared != 3 {
		t.Errorf("latest what-if = %+v, %v", last, err)
	}
	if diff := cmp.Diff(before, snapshotEffects(t, b, mail, tap)); diff != "" {
		t.Errorf("the what-if had side effects (-before +after):\n%s", diff)
	}
}

// TestWhatIfBounds checks the what-if's parameters.
func TestWhatIfBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	for _, c := range []struct {
		name string
		p    runengine.WhatIfParams
		want error
	}{
		{"limit 1", runengine.WhatIfParams{ProcessID: def.ID, Limit: 1}, nil},
		{"limit max", runengine.WhatIfParams{ProcessID: def.ID, Limit: runengine.MaxWhatIfLimit}, nil},
		{"limit above", runengine.WhatIfParams{ProcessID: def.ID, Limit: runengine.MaxWhatIfLimit + 1}, errs.Invalid},
		{"limit below", runengine.WhatIfParams{ProcessID: def.ID, Limit: -1}, errs.Invalid},
		{"version 1", runengine.WhatIfParams{ProcessID: def.ID, Version: 1}, nil},
		{"version 2", runengine.WhatIfParams{ProcessID: def.ID, Version: 2}, errs.Invalid},
		{"no process", runengine.WhatIfParams{ProcessID: "prc_none"}, errs.NotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			job, err := b.eng.WhatIf(ctx, tenant, c.p, "usr")
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if err == nil {
				if j := waitJob(t, b, job.ID); j.Result == nil || j.Result.Cases != 0 {
					t.Errorf("report = %+v", j.Result)
				}
			}
		})
	}
	if _, err := b.eng.WhatIf(ctx, "ten_other", runengine.WhatIfParams{ProcessID: def.ID}, "usr"); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's process: %v", err)
	}
}

// TestWhatIfPeopleSteps replays a process whose runs a person's task and
// two approvers decided: where the candidate asks people too, the
// decisions are deferred and the replay answers as they did (both
// approvers' votes, a rejection); where it acts alone, it is compared.
func TestWhatIfPeopleSteps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	steps := func(controls string) string {
		return `[{"key":"check","type":"human_task","config":{"title":"Check"}},
		{"key":"pay","type":"execute","capability":"test.echo","config":{"args":{"amount":5}},"controls":` + controls + `}]`
	}
	def := b.create(t, `{"type":"manual"}`, steps(`{"require_approval":true,"approvals_required":2}`))
	ids := map[bool]string{}
	for _, approve := range []bool{true, false} {
		id := b.start(t, def.ID)
		ids[approve] = id
		r := b.waitRun(t, id, "waiting on the task", stepStatus("check", runengine.StepWaitingTask))
		if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID, Action: "complete", Actor: "usr_a"}); err != nil {
			t.Fatal(err)
		}
		r = b.waitRun(t, id, "waiting on the approval", stepStatus("pay", runengine.StepWaitingApproval))
		for _, who := range []string{"usr_b", "usr_c"}[:map[bool]int{true: 2, false: 1}[approve]] {
			if _, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[1].ApprovalID, Approve: approve, Actor: who}); err != nil {
				t.Fatal(err)
			}
		}
		b.waitRun(t, id, "finished", func(r *runengine.Run) bool { return r.Finished() })
	}
	calls := len(b.prov.keys())
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name     string
		controls string
		want     *runengine.WhatIfReport
	}{
		{"asks as before", `{"require_approval":true,"approvals_required":2,"sla_hours":4}`, &runengine.WhatIfReport{
			Version: 2, Runs: 2, Cases: 2, Deferred: 4,
			Steps:       []runengine.WhatIfStep{{StepKey: "check", Deferred: 2}, {StepKey: "pay", Deferred: 2}},
			Differences: []runengine.WhatIfDifference{}}},
		{"pays alone", `{}`, &runengine.WhatIfReport{
			Version: 3, Runs: 2, Cases: 2, Compared: 2, Agreed: 1, Deferred: 2, AgreementRate: f(0.5),
			Steps: []runengine.WhatIfStep{{StepKey: "check", Deferred: 2}, {StepKey: "pay", Compared: 2, Agreed: 1, AgreementRate: f(0.5)}},
			Differences: []runengine.WhatIfDifference{{RunID: ids[false], StepKey: "pay",
				Human:     runengine.WhatIfAnswer{Decision: "rejected", Args: map[string]any{"amount": 5.0}},
				Candidate: runengine.WhatIfAnswer{Decision: "executed", Args: map[string]any{"amount": 5.0}}}},
			DifferenceCount: 1, Incomplete: 1}},
	} {
		in := mustIn(t, `{"name":"Test process","function":"finance","trigger":{"type":"manual"},"steps":`+steps(c.controls)+`}`)
		if _, _, err := b.procs.Update(ctx, tenant, "usr_test", def.ID, process.ProcessPatch{Steps: in.Steps}); err != nil {
			t.Fatal(err)
		}
		job, err := b.eng.WhatIf(ctx, tenant, runengine.WhatIfParams{ProcessID: def.ID}, "usr_analyst")
		if err != nil {
			t.Fatal(err)
		}
		c.want.ProcessID = def.ID
		if diff := cmp.Diff(c.want, waitJob(t, b, job.ID).Result); diff != "" {
			t.Errorf("%s: report (-want +got):\n%s", c.name, diff)
		}
	}
	if n := len(b.prov.keys()); n != calls {
		t.Errorf("the what-ifs made %d calls", n-calls)
	}
}
