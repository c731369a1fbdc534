package automation_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const tenant = "t1"

type bundle struct {
	t      *testing.T
	st     store.Store
	clock  *clock.Fake
	svc    *automation.Service
	access *access.Service
	seen   map[string]bool // audit entries already returned by newAudit
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// setup opens a store with workspace t1 (four-eyes as asked) whose known
// processes are prc_1, prc_2 and prc_life.
func setup(t *testing.T, fourEyes bool) *bundle {
	t.Helper()
	return setupWith(t, fourEyes, false)
}

// setupWith is setup with the gate told whether other processes write the
// store (automation.Config.Shared).
func setupWith(t *testing.T, fourEyes, shared bool) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fc := clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	acc := access.New(access.Config{Store: st, Clock: fc})
	if _, _, err := acc.CreateWorkspace(context.Background(), access.NewWorkspace{
		ID: tenant, Name: "Acme", OwnerEmail: "owner@example.com", FourEyes: fourEyes,
	}); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"prc_1": true, "prc_2": true, "prc_life": true}
	svc := automation.New(automation.Config{
		Store: st, Clock: fc, Changes: acc, Shared: shared,
		ProcessExists: func(_ context.Context, _, id string) error {
			if !known[id] {
				return errs.NotFoundf("process not found")
			}
			return nil
		},
	})
	acc.RegisterChangeKind(automation.ChangeKind, svc.ApplyChangeTx, access.DecidedWith(access.PermAutomationManage))
	return &bundle{t: t, st: st, clock: fc, svc: svc, access: acc, seen: map[string]bool{}}
}

func parse(t *testing.T, body string) automation.Patch {
	t.Helper()
	p, err := automation.ParsePatch([]byte(body))
	if err != nil {
		t.Fatalf("ParsePatch(%s): %v", body, err)
	}
	return p
}

// patch applies body to the workspace (processID "") or a process as u1.
func (b *bundle) patch(processID, body string) *automation.Result {
	b.t.Helper()
	b.clock.Advance(time.Second)
	var (
		res *automation.Result
		err error
	)
	if processID == "" {
		res, err = b.svc.UpdateWorkspace(context.Background(), tenant, "u1", parse(b.t, body))
	} else {
		res, err = b.svc.UpdateProcess(context.Background(), tenant, processID, "u1", parse(b.t, body))
	}
	if err != nil {
		b.t.Fatalf("patch %s %s: %v", processID, body, err)
	}
	return res
}

func (b *bundle) view(processID string) *automation.View {
	b.t.Helper()
	var (
		v   *automation.View
		err error
	)
	if processID == "" {
		v, err = b.svc.Workspace(context.Background(), tenant)
	} else {
		v, err = b.svc.Process(context.Background(), tenant, processID)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *bundle) decide(processID, key string) runengine.GateDecision {
	b.t.Helper()
	b.clock.Advance(time.Second)
	d, err := b.svc.Decide(context.Background(), runengine.GateRequest{
		Tenant: tenant, ProcessID: processID, RunID: "run_" + key, StepKey: "pay", Capability: "payment.request", ItemKey: key,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return d
}

func (b *bundle) observe(processID string, agreed bool) {
	b.t.Helper()
	b.clock.Advance(time.Second)
	if err := b.svc.Observe(context.Background(), runengine.Outcome{
		Tenant: tenant, ProcessID: processID, RunID: "run_x", StepKey: "pay", Agreed: agreed, Actor: "u2",
	}); err != nil {
		b.t.Fatal(err)
	}
}

// newAudit returns the automation audit entries written since the last
// call, oldest first, as "action actor entity_id: reason".
func (b *bundle) newAudit() []string {
	b.t.Helper()
	var entries []*audit.Entry
	err := b.st.View(context.Background(), func(r store.Reader) error {
		var err error
		entries, _, err = audit.List(r, tenant, audit.Query{Entity: "automation"}, store.Page{Limit: 200})
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if b.seen[e.ID] {
			continue
		}
		b.seen[e.ID] = true
		out = append(out, fmt.Sprintf("%s %s %s: %s", e.Action, e.Actor, e.EntityID, e.Reason))
	}
	return out
}

func inside(key string, percent int) bool { return automation.Bucket("auto", key) < percent }

// TestLife drives one process's gate through its whole life: supervised,
// ramped up by agreement, an exception that lapses, a daily limit, and a
// rollback by disagreement.
func TestLife(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	const proc = "prc_life"
	b.patch("", `{"auto_ramp": true, "ramp_min_decisions": 5, "rollback_min_decisions": 5, "sample_percent": 20}`)
	if diff := cmp.Diff([]string{"automation.updated u1 workspace: "}, b.newAudit()); diff != "" {
		t.Errorf("audit of the settings (-want +got):\n%s", diff)
	}

	// 1. Fully supervised: percent 0, nothing runs alone.
	for i := range 20 {
		d := b.decide(proc, fmt.Sprintf("item%d", i))
		if want := (runengine.GateDecision{Reason: "supervised: automation is at 0%"}); d != want {
			t.Fatalf("supervised item %d: %+v, want %+v", i, d, want)
		}
	}
	if got := b.view(proc).AutomaticToday; got != 0 {
		t.Errorf("automatic today = %d, want 0", got)
	}

	// 2. Agreement ramps it up a step per 5 agreeing verdicts, to the default
	// max_percent of 50 and no further.
	for _, want := range []int{10, 25, 50, 50} {
		for range 5 {
			b.observe(proc, true)
		}
		if got := b.view(proc).Percent; got != want {
			t.Fatalf("percent after agreement = %d, want %d", got, want)
		}
	}
	want := []string{
		"automation.ramped system prc_life: agreement 1.00 over the last 5 decisions is at least 0.90: percent 0 -> 10",
		"automation.ramped system prc_life: agreement 1.00 over the last 5 decisions is at least 0.90: percent 10 -> 25",
		"automation.ramped system prc_life: agreement 1.00 over the last 5 decisions is at least 0.90: percent 25 -> 50",
	}
	if diff := cmp.Diff(want, b.newAudit()); diff != "" {
		t.Errorf("audit of the ramp (-want +got):\n%s", diff)
	}
	autos := 0
	for i := 100; i < 200; i++ {
		key := fmt.Sprintf("item%d", i)
		d := b.decide(proc, key)
		wantAuto := inside(key, 50)
		wantSample := wantAuto && automation.Bucket("sample", key) < 20
		if d.Auto != wantAuto || d.Sample != wantSample {
			t.Fatalf("%s at 50%%: %+v, want auto %v sample %v", key, d, wantAuto, wantSample)
		}
		if d.Auto {
			autos++
		}
	}
	if autos < 30 || autos > 70 {
		t.Errorf("%d of 100 items ran alone at 50%%", autos)
	}
	if v := b.view(proc); v.AutomaticToday != autos || v.EffectivePercent != 50 {
		t.Errorf("view: automatic today %d (want %d), effective %d%% (want 50)", v.AutomaticToday, autos, v.EffectivePercent)
	}

	// 3. An exception runs every item alone for two days, then lapses by
	// itself.
	b.patch("", `{"exception_percent": 100, "exception_days": 2, "exception_reason": "quarter end"}`)
	if v := b.view(proc); v.EffectivePercent != 100 || *v.ExceptionReason != "quarter end" {
		t.Errorf("during the exception: effective %d%%, reason %v", v.EffectivePercent, v.ExceptionReason)
	}
	for i := 200; i < 230; i++ {
		if d := b.decide(proc, fmt.Sprintf("item%d", i)); !d.Auto || !strings.Contains(d.Reason, "quarter end") {
			t.Fatalf("item%d during the exception: %+v", i, d)
		}
	}
	b.clock.Advance(48 * time.Hour)
	outsideKey := ""
	for i := 230; outsideKey == ""; i++ {
		key := fmt.Sprintf("item%d", i)
		d := b.decide(proc, key)
		if d.Auto != inside(key, 50) {
			t.Fatalf("%s after the exception: %+v", key, d)
		}
		if !d.Auto {
			outsideKey = key
		}
	}
	want = []string{
		"automation.updated u1 workspace: ",
		"automation.exception_lapsed system workspace: the exception of 100% (quarter end) ended at 2025-03-03T09:",
	}
	got := b.newAudit()
	if len(got) == 2 && strings.HasPrefix(got[1], want[1]) {
		got[1] = want[1]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit of the exception (-want +got):\n%s", diff)
	}
	if v := b.view(proc); v.ExceptionPercent != nil || v.EffectivePercent != 50 {
		t.Errorf("after the exception: %+v", v)
	}

	// 4. A daily limit: 3 more automatic actions today, then approvals.
	today := b.view("").AutomaticToday
	b.patch("", fmt.Sprintf(`{"daily_limit": %d}`, today+3))
	allowed, refused := 0, 0
	for i := 300; refused < 3; i++ {
		key := fmt.Sprintf("item%d", i)
		d := b.decide(proc, key)
		switch {
		case !inside(key, 50):
			if d.Auto {
				t.Fatalf("%s outside the bucket ran alone", key)
			}
		case allowed < 3:
			if !d.Auto {
				t.Fatalf("%s refused before the limit: %+v", key, d)
			}
			allowed++
		default:
			wantReason := fmt.Sprintf("supervised: the workspace's daily limit of %d automatic actions is reached", today+3)
			if d != (runengine.GateDecision{Reason: wantReason}) {
				t.Fatalf("%s over the limit: %+v", key, d)
			}
			refused++
		}
	}
	if got := b.view("").AutomaticToday; got != today+3 {
		t.Errorf("automatic today = %d, want the limit %d", got, today+3)
	}
	// The next UTC day starts a new count.
	b.clock.Set(time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC))
	for i := 400; ; i++ {
		key := fmt.Sprintf("item%d", i)
		if d := b.decide(proc, key); inside(key, 50) {
			if !d.Auto {
				t.Fatalf("%s on a new day: %+v", key, d)
			}
			break
		}
	}
	b.newAudit()

	// 5. Disagreement rolls it back: 4 of the last 5 agree (0.8) keeps it,
	// 3 of 5 (0.6, below 0.7) drops it to 0% and pauses it.
	b.observe(proc, false)
	if v := b.view(proc); v.Percent != 50 || v.Paused {
		t.Fatalf("after one disagreement: percent %d paused %v", v.Percent, v.Paused)
	}
	b.observe(proc, false)
	v := b.view(proc)
	reason := "rolled back: agreement 0.60 over the last 5 decisions is below 0.70"
	if v.Percent != 0 || !v.Paused || v.PausedReason == nil || *v.PausedReason != reason || v.EffectivePercent != 0 {
		t.Fatalf("after the rollback: %+v", v)
	}
	if diff := cmp.Diff([]string{"automation.rolled_back system prc_life: " + reason}, b.newAudit()); diff != "" {
		t.Errorf("audit of the rollback (-want +got):\n%s", diff)
	}
	if d := b.decide(proc, outsideKey+"-again"); d.Auto || d.Reason != "supervised: automation is paused: "+reason {
		t.Errorf("after the rollback: %+v", d)
	}
	// A retry of an item decided before the rollback keeps its answer.
	if d := b.decide(proc, "item100"); d.Auto != inside("item100", 50) {
		t.Errorf("retry of item100 changed its answer: %+v", d)
	}
	// Paused, agreement does not ramp it again.
	for range 5 {
		b.observe(proc, true)
	}
	if v := b.view(proc); v.Percent != 0 || !v.Paused {
		t.Errorf("paused process ramped: %+v", v)
	}
	if got := b.newAudit(); len(got) != 0 {
		t.Errorf("audit while paused: %v", got)
	}
	// A person resumes it at 10%; the verdicts before do not count against
	// it again.
	b.patch(proc, `{"paused": false, "percent": 10}`)
	b.observe(proc, false)
	b.observe(proc, false)
	if v := b.view(proc); v.Percent != 10 || v.Paused || v.PausedReason != nil {
		t.Errorf("resumed process: %+v", v)
	}
	if diff := cmp.Diff([]string{"automation.updated u1 prc_life: "}, b.newAudit()); diff != "" {
		t.Errorf("audit of the resumption (-want +got):\n%s", diff)
	}
	ag := b.view(proc).Agreement
	if ag == nil || ag.Items != 29 || len(ag.ByRule) != 1 || ag.ByRule[0].RuleID != "pay" || ag.ByRule[0].Disagree != 4 {
		t.Errorf("agreement = %+v", ag)
	}
}

func TestInheritance(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	v := b.view("prc_1")
	if v.Percent != 0 || v.MaxPercent != 50 || v.SamplePercent != 10 || v.RampMinDecisions != 20 || v.RollbackMinDecisions != 10 ||
		v.RampMinAgreement != 0.9 || v.RollbackAgreement != 0.7 || v.DailyLimit != nil || v.Scope != "process" || *v.ProcessID != "prc_1" {
		t.Errorf("defaults: %+v", v)
	}
	all := []string{"auto_ramp", "paused", "paused_reason", "percent", "max_percent", "sample_percent", "daily_limit",
		"exception_percent", "exception_until", "exception_reason", "ramp_min_agreement", "ramp_min_decisions",
		"rollback_agreement", "rollback_min_decisions", "ramp_min_what_if"}
	if diff := cmp.Diff(all, v.Inherited); diff != "" {
		t.Errorf("inherited (-want +got):\n%s", diff)
	}

	b.patch("", `{"percent": 20, "max_percent": 80, "daily_limit": 100}`)
	b.patch("prc_1", `{"percent": 60, "sample_percent": 0}`)
	v = b.view("prc_1")
	if v.Percent != 60 || v.MaxPercent != 80 || v.SamplePercent != 0 || *v.DailyLimit != 100 || v.UpdatedBy == nil || *v.UpdatedBy != "u1" {
		t.Errorf("process: %+v", v)
	}
	if cmp.Equal(v.Inherited, all) || contains(v.Inherited, "percent") || !contains(v.Inherited, "max_percent") {
		t.Errorf("inherited = %v", v.Inherited)
	}
	if v := b.view("prc_2"); v.Percent != 20 {
		t.Errorf("prc_2 percent = %d, want the workspace's 20", v.Percent)
	}
	// Lowering the workspace's max_percent caps what processes run alone.
	b.patch("", `{"max_percent": 30}`)
	if v := b.view("prc_1"); v.Percent != 60 || v.EffectivePercent != 30 {
		t.Errorf("capped: percent %d, effective %d", v.Percent, v.EffectivePercent)
	}
	// Lowering a level's own max_percent pulls its own percent down.
	b.patch("prc_1", `{"max_percent": 40}`)
	if v := b.view("prc_1"); v.Percent != 40 || v.EffectivePercent != 40 {
		t.Errorf("own max: percent %d, effective %d", v.Percent, v.EffectivePercent)
	}
	// A percent above max_percent is refused.
	_, err := b.svc.UpdateProcess(context.Background(), tenant, "prc_1", "u1", parse(t, `{"percent": 41}`))
	if diff := cmp.Diff([]string{"percent:value_error"}, violations(err)); diff != "" {
		t.Errorf("percent above max (-want +got):\n%s", diff)
	}
	// null clears the process's own value: it inherits again.
	b.patch("prc_1", `{"percent": null, "max_percent": null}`)
	if v := b.view("prc_1"); v.Percent != 20 || !contains(v.Inherited, "percent") {
		t.Errorf("cleared: %+v", v)
	}
	// A workspace pause stops every process, whatever it says.
	b.patch("prc_1", `{"paused": false}`)
	b.patch("", `{"paused": true, "paused_reason": "audit week"}`)
	if v := b.view("prc_1"); !v.Paused || *v.PausedReason != "audit week" || v.EffectivePercent != 0 {
		t.Errorf("workspace pause: %+v", v)
	}
	if d := b.decide("prc_1", "x"); d.Auto || d.Reason != "supervised: automation is paused: audit week" {
		t.Errorf("decision under a workspace pause: %+v", d)
	}
	// Unknown processes are not found.
	if _, err := b.svc.Process(context.Background(), tenant, "prc_nope"); !errors.Is(err, errs.NotFound) {
		t.Errorf("unknown process: %v", err)
	}
	if _, err := b.svc.UpdateProcess(context.Background(), tenant, "prc_nope", "u1", parse(t, `{}`)); !errors.Is(err, errs.NotFound) {
		t.Errorf("unknown process: %v", err)
	}
	// Another tenant shares nothing.
	other, err := b.svc.Workspace(context.Background(), "t2")
	if err != nil || other.Percent != 0 || other.Paused {
		t.Errorf("t2: %+v, %v", other, err)
	}
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func TestDailyLimitOfAProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 50}`)
	b.patch("prc_1", `{"daily_limit": 0}`)
	for i := range 40 {
		key := fmt.Sprintf("k%d", i)
		if d := b.decide("prc_1", key); d.Auto {
			t.Fatalf("prc_1 with a daily limit of 0 ran %s alone", key)
		}
		if d := b.decide("prc_2", key); d.Auto != inside(key, 50) {
			t.Fatalf("prc_2 is not limited by prc_1's limit: %s %+v", key, d)
		}
	}
}

// TestConcurrentDecisions decides 320 items from 64 goroutines at once, each
// item twice, under a daily limit: the limit holds exactly, both answers of
// an item agree, and each item is counted once.
func TestConcurrentDecisions(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 100, "max_percent": 100, "daily_limit": 30}`)
	const items = 320
	answers := make([][2]runengine.GateDecision, items)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1) - 1
				if n >= 2*items {
					return
				}
				i := int(n % items)
				d, err := b.svc.Decide(context.Background(), runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1",
					RunID: fmt.Sprintf("run_%d", i), StepKey: "pay", ItemKey: fmt.Sprintf("k%d", i)})
				if err != nil {
					t.Error(err)
					return
				}
				answers[i][n/items] = d
			}
		}()
	}
	testwait.Wait(t, &wg, "the concurrent gate calls returned")
	auto := 0
	for i, a := range answers {
		if a[0] != a[1] {
			t.Errorf("item %d answered twice differently: %+v", i, a)
		}
		if a[0].Auto {
			auto++
		}
	}
	if auto != 30 {
		t.Errorf("%d automatic actions under a daily limit of 30", auto)
	}
	if d := b.decide("prc_1", "one-more"); d.Auto {
		t.Errorf("an item past the limit ran alone: %+v", d)
	}
}

func TestFourEyes(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	ctx := context.Background()
	b.newAudit()

	// An empty patch changes and audits nothing.
	b.patch("", `{"break_glass_reason": "nothing to do"}`)
	// Narrowing changes apply at once.
	if res := b.patch("", `{"sample_percent": 20, "ramp_min_decisions": 50}`); res.Change != nil || res.Settings.SamplePercent != 20 {
		t.Fatalf("narrowing change: %+v", res)
	}
	// Widening ones wait for a second person.
	for _, body := range []string{
		`{"percent": 10}`, `{"max_percent": 60}`, `{"exception_percent": 5, "exception_days": 1, "exception_reason": "x"}`,
	} {
		res := b.patch("", body)
		if res.Change == nil || res.Change.Status != access.ChangePending || res.Change.Kind != automation.ChangeKind {
			t.Fatalf("%s: %+v", body, res)
		}
		if res.Settings.Percent != 0 || res.Settings.MaxPercent != 50 || res.Settings.ExceptionPercent != nil {
			t.Errorf("%s applied before approval: %+v", body, res.Settings)
		}
	}
	res := b.patch("prc_1", `{"percent": 20, "paused": true}`)
	if res.Change == nil || !strings.Contains(res.Change.Summary, "raises percent from 0 to 20") {
		t.Fatalf("process change: %+v", res.Change)
	}
	if diff := cmp.Diff([]string{"automation.updated u1 workspace: "}, b.newAudit()); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}

	// The requester cannot approve; a second person can, and it applies.
	u1 := &access.Principal{Tenant: tenant, UserID: "u1", Perms: access.PermissionsOf([]string{access.RoleAdmin})}
	u2 := &access.Principal{Tenant: tenant, UserID: "u2", Perms: access.PermissionsOf([]string{access.RoleAdmin})}
	if _, err := b.access.Approve(ctx, u1, res.Change.ID, ""); !errors.Is(err, errs.Forbidden) {
		t.Errorf("self-approval: %v", err)
	}
	if _, err := b.access.Approve(ctx, u2, res.Change.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	if v := b.view("prc_1"); v.Percent != 20 || !v.Paused {
		t.Errorf("after approval: %+v", v)
	}
	if diff := cmp.Diff([]string{"automation.change_approved u2 prc_1: requested by u1"}, b.newAudit()); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}

	// Unpausing is widening too; break-glass applies it at once, audited
	// with its reason.
	if res := b.patch("prc_1", `{"paused": false}`); res.Change == nil {
		t.Errorf("unpausing applied without a second person")
	}
	res = b.patch("prc_1", `{"paused": false, "break_glass_reason": "payroll run blocked"}`)
	if res.Change != nil || res.Settings.Paused {
		t.Fatalf("break-glass: %+v", res)
	}
	if diff := cmp.Diff([]string{"automation.break_glass u1 prc_1: payroll run blocked"}, b.newAudit()); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	// Clearing or raising a daily limit is widening; lowering is not.
	b.patch("", `{"daily_limit": 10}`)
	if res := b.patch("", `{"daily_limit": 5}`); res.Change != nil {
		t.Errorf("lowering a limit waited: %+v", res.Change)
	}
	for _, body := range []string{`{"daily_limit": 6}`, `{"clear_daily_limit": true}`, `{"daily_limit": null}`} {
		if res := b.patch("", body); res.Change == nil || *res.Settings.DailyLimit != 5 {
			t.Errorf("%s: %+v", body, res)
		}
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 50}`)
	first := map[string]runengine.GateDecision{}
	for i := range 30 {
		key := fmt.Sprintf("k%d", i)
		first[key] = b.decide("prc_1", key)
	}
	n := b.view("prc_1").AutomaticToday
	b.patch("", `{"percent": 0}`)
	for key, want := range first {
		if got := b.decide("prc_1", key); got != want {
			t.Errorf("retry of %s: %+v, want %+v", key, got, want)
		}
	}
	if got := b.view("prc_1").AutomaticToday; got != n {
		t.Errorf("retries were counted: %d, want %d", got, n)
	}
	// Without an item key, run and step make it.
	d, err := b.svc.Decide(context.Background(), runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1", RunID: "run_1", StepKey: "pay"})
	if err != nil || d.Auto {
		t.Errorf("decide without item key: %+v, %v", d, err)
	}
	if _, err := b.svc.Decide(context.Background(), runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1"}); err == nil {
		t.Error("decide without any key: no error")
	}
	if err := b.svc.Observe(context.Background(), runengine.Outcome{Tenant: tenant}); err == nil {
		t.Error("observe without a process: no error")
	}
}

func TestNextStep(t *testing.T) {
	t.Parallel()
	for _, test := range []struct{ percent, max, want int }{
		{0, 100, 10}, {10, 100, 25}, {25, 100, 50}, {50, 100, 75}, {75, 100, 100}, {30, 100, 50},
		{0, 5, 5}, {10, 40, 25}, {25, 40, 40}, {99, 100, 100},
	} {
		if got := automation.NextStep(test.percent, test.max); got != test.want {
			t.Errorf("NextStep(%d, %d) = %d, want %d", test.percent, test.max, got, test.want)
		}
	}
}

// TestNewItemIsNotLookedUp: a request for a New item (the engine's first
// ask of it; nothing can be stored under its key) is decided without
// reading a stored answer, and stores and counts its own; a later request
// for the item gets that stored answer. (Given a stored answer against the
// engine's word, the New request shows that it was not read.)
func TestNewItemIsNotLookedUp(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.patch("", `{"percent": 100, "max_percent": 100}`)
	ctx := context.Background()
	req := runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1", RunID: "run_n", StepKey: "pay",
		Capability: "payment.request", ItemKey: "run_n/pay", New: true}
	first, err := b.svc.Decide(ctx, req)
	if err != nil || !first.Auto {
		t.Fatalf("new item at 100%%: %+v, %v", first, err)
	}
	if n := b.view("prc_1").AutomaticToday; n != 1 {
		t.Errorf("automatic today %d, want 1", n)
	}
	b.patch("", `{"percent": 0}`)
	req.New = false
	if again, err := b.svc.Decide(ctx, req); err != nil || again != first {
		t.Errorf("the item asked again: %+v, %v; want the stored %+v", again, err, first)
	}
	req.New = true
	if fresh, err := b.svc.Decide(ctx, req); err != nil || fresh.Auto {
		t.Errorf("a New request at 0%%: %+v, %v; want decided afresh (supervised), not read", fresh, err)
	}
}
