package httpapi_test

// The whole life of a process's automation (issue 8), through the run
// engine and HTTP with the fake clock: fully supervised, ramped up by
// agreeing approvals, runs that then go through on their own, an
// exception that lapses by itself, a daily limit reached, the rollback by
// disagreement, and the amount cap and require_approval still winning at
// 100% (interface.md 3, rule 3). Every stage checks the approvals created
// and the audit entries.
//
// Which items run without a person is deterministic (automation.Bucket of
// the item key "<run id>/<step key>"), so the test predicts every run's
// outcome from its id and the percent in force.

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const lifeEvent = "life.invoice.received"

// lifeProcess mails a payment instruction for every invoice through
// email.send (the built-in outbox); invoices above 1,000.00 always wait
// for a person.
const lifeProcess = `{
  "name": "Invoice mail",
  "function": "finance",
  "trigger": {"type": "event", "event": "life.invoice.received"},
  "steps": [
    {"key": "pay", "type": "execute", "capability": "email.send",
     "config": {"args": {"to": "payables@example.com", "subject": "Pay ${trigger.data.number}",
                         "body": "Pay ${trigger.data.amount_cents} cents."},
                "amount_path": "trigger.data.amount_cents"},
     "controls": {"amount_cap_cents": 100000}}
  ]
}`

// lifeGuardedProcess's execute step always requires approval.
const lifeGuardedProcess = `{
  "name": "Contract mail",
  "function": "legal",
  "trigger": {"type": "event", "event": "life.contract.signed"},
  "steps": [
    {"key": "notify", "type": "execute", "capability": "email.send",
     "config": {"args": {"to": "legal@example.com", "subject": "Signed ${trigger.data.number}", "body": "Filed."}},
     "controls": {"require_approval": true}}
  ]
}`

// auditOut is an audit entry as GET /v1/audit shows it.
type auditOut struct {
	Action   string `json:"action"`
	Actor    string `json:"actor"`
	Entity   string `json:"entity"`
	EntityID string `json:"entity_id"`
	Reason   string `json:"reason"`
}

// life drives one workspace through the test and keeps what it expects.
type life struct {
	s     *testServer
	admin string
	proc  string // the invoice process
	n     int    // invoices sent so far
	// judged and agreed count the verdicts on the invoice process.
	judged, agreed int
	// sent holds the subjects the outbox should hold, sorted at checks.
	sent []string
}

// lifeRun is a settled run: completed on its own, or waiting on an approval.
type lifeRun struct {
	ID, Number string
	Run        runView
	Approval   *approvalView
}

// invoice emits an invoice event of amount cents, waits until its run
// completed or waits on a person, and returns it.
func (l *life) invoice(t *testing.T, amount int) lifeRun {
	t.Helper()
	l.n++
	number := fmt.Sprintf("L-%03d", l.n)
	l.s.clock.Advance(time.Second)
	started := l.s.emit(t, l.admin, lifeEvent, map[string]any{"number": number, "amount_cents": amount})
	if len(started.Runs) != 1 || started.Runs[0].ProcessID != l.proc {
		t.Fatalf("invoice %s started %+v, want one run of %s", number, started.Runs, l.proc)
	}
	return l.settleRun(t, started.Runs[0].ID, number)
}

// settleRun waits for run id to complete or wait on an approval.
func (l *life) settleRun(t *testing.T, id, number string) lifeRun {
	t.Helper()
	r := l.s.awaitRun(t, l.admin, id, "settled", func(r runView) bool {
		return r.Status == "completed" || r.Status == "failed" || r.Status == "rejected" ||
			r.Status == "waiting" && r.Steps[len(r.Steps)-1].Status == "waiting_approval"
	})
	out := lifeRun{ID: id, Number: number, Run: r}
	if a := r.Steps[len(r.Steps)-1].ApprovalID; a != nil && r.Status == "waiting" {
		var apr approvalView
		l.s.do(t, "GET", "/v1/approvals/"+*a, l.admin, nil).want(t, http.StatusOK).decode(t, &apr)
		out.Approval = &apr
	}
	return out
}

// wantAuto checks that r ran without a person: completed, no approval,
// its mail sent.
func (l *life) wantAuto(t *testing.T, r lifeRun) {
	t.Helper()
	pay := r.Run.step(t, "pay")
	out, _ := pay.Output.(map[string]any)
	if r.Run.Status != "completed" || pay.ApprovalID != nil || out["message_id"] == nil {
		t.Fatalf("invoice %s (bucket %d) did not run on its own: %+v", r.Number, lifeBucket(r.ID), r.Run)
	}
	l.sent = append(l.sent, "Pay "+r.Number)
}

// wantApproval checks that r waits on a pending approval whose summary
// holds reason.
func (l *life) wantApproval(t *testing.T, r lifeRun, reason string) approvalView {
	t.Helper()
	if r.Approval == nil {
		t.Fatalf("invoice %s (bucket %d) waits on no approval, want one for %q: %+v", r.Number, lifeBucket(r.ID), reason, r.Run)
	}
	a := *r.Approval
	if a.Status != "pending" || a.Tool != "email.send" || a.RunID == nil || *a.RunID != r.ID ||
		!strings.Contains(a.Summary, reason) {
		t.Fatalf("approval of invoice %s = %+v, want a pending one for %q", r.Number, a, reason)
	}
	return a
}

// approve approves a unchanged (args nil) or with args, waits for the run
// to complete, and records the verdict on the invoice process.
func (l *life) approve(t *testing.T, a approvalView, number string, args map[string]any) {
	t.Helper()
	body := map[string]any{}
	subject := "Pay " + number
	if args != nil {
		body["args"] = args
		subject, _ = args["subject"].(string)
	}
	l.s.do(t, "POST", "/v1/approvals/"+a.ID+"/approve", l.admin, body).want(t, http.StatusOK)
	l.s.awaitRun(t, l.admin, *a.RunID, "completed", runStatusIs("completed"))
	l.sent = append(l.sent, subject)
	l.judged++
	if args == nil {
		l.agreed++
	}
}

// reject rejects a and records the disagreement.
func (l *life) reject(t *testing.T, a approvalView, reason string) {
	t.Helper()
	var d decisionView
	l.s.do(t, "POST", "/v1/approvals/"+a.ID+"/reject", l.admin, map[string]any{"reason": reason}).
		want(t, http.StatusOK).decode(t, &d)
	if d.Run.Status != "rejected" {
		t.Fatalf("rejected approval %s left run %+v", a.ID, d.Run)
	}
	l.judged++
}

// settings reads the invoice process's automation settings.
func (l *life) settings(t *testing.T) automationOut {
	t.Helper()
	var v automationOut
	l.s.do(t, "GET", "/v1/processes/"+l.proc+"/automation", l.admin, nil).want(t, http.StatusOK).decode(t, &v)
	return v
}

// settle waits until the gate observed every verdict (Observe runs after
// the decision's commit) and returns the settings then.
func (l *life) settle(t *testing.T) automationOut {
	t.Helper()
	return awaitAgreement(t, l.s, l.admin, l.proc, l.judged)
}

// awaitAgreement waits until process id's agreement counts items verdicts.
func awaitAgreement(t *testing.T, s *testServer, token, id string, items int) automationOut {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var v automationOut
		s.do(t, "GET", "/v1/processes/"+id+"/automation", token, nil).want(t, http.StatusOK).decode(t, &v)
		if v.Agreement != nil && v.Agreement.Items == items {
			return v
		}
		if v.Agreement != nil && v.Agreement.Items > items {
			t.Fatalf("process %s has %d verdicts, want %d", id, v.Agreement.Items, items)
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s never reached %d verdicts: %+v", id, items, v.Agreement)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// patch changes the invoice process's automation settings.
func (l *life) patch(t *testing.T, body string) automationOut {
	t.Helper()
	var v automationOut
	l.s.do(t, "PATCH", "/v1/processes/"+l.proc+"/automation", l.admin, body).want(t, http.StatusOK).decode(t, &v)
	return v
}

// audit returns the automation audit entries of actor ("" for all),
// newest first.
func (l *life) audit(t *testing.T, actor string) []auditOut {
	t.Helper()
	path := "/v1/audit?entity=automation&limit=200"
	if actor != "" {
		path += "&actor=" + actor
	}
	var out []auditOut
	l.s.do(t, "GET", path, l.admin, nil).want(t, http.StatusOK).decode(t, &out)
	return out
}

// wantSystem checks the automatic changes so far: "action: reason part"
// of each entry by the system, newest first.
func (l *life) wantSystem(t *testing.T, want ...string) {
	t.Helper()
	entries := l.audit(t, "system")
	if len(entries) != len(want) {
		t.Fatalf("system audit entries = %+v, want %d: %q", entries, len(want), want)
	}
	for i, e := range entries {
		action, part, _ := strings.Cut(want[i], ": ")
		if e.Action != action || e.Actor != "system" || e.Entity != "automation" || e.EntityID != l.proc ||
			!strings.Contains(e.Reason, part) {
			t.Errorf("system audit entry %d = %+v, want %s with a reason holding %q", i, e, action, part)
		}
	}
}

// wantPending checks the pending approvals of the workspace.
func (l *life) wantPending(t *testing.T, want ...string) {
	t.Helper()
	got := l.s.listIDs(t, l.admin, "/v1/approvals?status=pending")
	want = append([]string{}, want...)
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pending approvals (-want +got):\n%s", diff)
	}
}

// wantOutbox checks the mail the runs sent.
func (l *life) wantOutbox(t *testing.T) {
	t.Helper()
	var got []string
	for _, m := range l.s.runOutbox(t, l.admin) {
		got = append(got, m.Subject)
	}
	want := append([]string{}, l.sent...)
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("outbox subjects (-want +got):\n%s", diff)
	}
}

// strOr returns *p, "<nil>" when p is nil.
func strOr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// lifeBucket is the gate's bucket of the invoice process's step of run id.
func lifeBucket(runID string) int { return automation.Bucket("auto", runID+"/pay") }

func TestAutonomyLifeHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_life", "user_id": "ada", "email": "ada@example.com"}`).Token
	l := &life{s: s, admin: admin, proc: s.createProc(t, admin, lifeProcess).ID}

	// Auto-ramp with small windows; no sampling until the exception.
	v := l.patch(t, `{"auto_ramp": true, "sample_percent": 0, "ramp_min_decisions": 5, "ramp_min_agreement": 1.0,
		"rollback_min_decisions": 3, "rollback_agreement": 0.7}`)
	if v.Percent != 0 || v.EffectivePercent != 0 || v.MaxPercent != 50 || !v.AutoRamp || v.RampMinDecisions != 5 {
		t.Fatalf("settings = %+v", v)
	}

	// 1. Fully supervised: every run's execute step waits on an approval.
	var pending []string
	var supervised []lifeRun
	for range 5 {
		r := l.invoice(t, 5000)
		a := l.wantApproval(t, r, "supervised: automation is at 0%")
		pending = append(pending, a.ID)
		supervised = append(supervised, r)
	}
	l.wantPending(t, pending...)
	l.wantOutbox(t)
	if got := l.audit(t, ""); len(got) != 1 || got[0].Action != "automation.updated" || got[0].Actor != "ada" {
		t.Fatalf("audit after the first change = %+v", got)
	}
	// Agreeing with the first four changes nothing; the fifth ramps up.
	for i, r := range supervised {
		l.approve(t, *r.Approval, r.Number, nil)
		v = l.settle(t)
		if want := map[bool]int{false: 0, true: 10}[i == 4]; v.Percent != want || v.EffectivePercent != want {
			t.Fatalf("after %d agreeing approvals: percent %d (effective %d), want %d", i+1, v.Percent, v.EffectivePercent, want)
		}
	}
	l.wantPending(t)
	l.wantOutbox(t)
	l.wantSystem(t, "automation.ramped: percent 0 -> 10")
	if v.Agreement.Overall == nil || *v.Agreement.Overall != 1 || len(v.Agreement.ByRule) != 1 {
		t.Errorf("agreement = %+v", v.Agreement)
	}
	var cp cockpitView
	s.do(t, "GET", "/v1/cockpit", admin, nil).want(t, http.StatusOK).decode(t, &cp)
	if cp.AgreementRate == nil || *cp.AgreementRate != 1 {
		t.Errorf("cockpit agreement_rate = %v, want 1", cp.AgreementRate)
	}

	// 2. Ramped up: items inside the percent run on their own, the others
	// wait and, agreed with, step the percent up to max_percent (50), where
	// it stays.
	autos, atMax := 0, 0
	for i := 0; v.Percent < 50 || atMax < 5 || autos == 0; i++ {
		if i == 100 {
			t.Fatalf("after 100 invoices: percent %d, %d approvals at 50%%, %d automatic", v.Percent, atMax, autos)
		}
		eff := v.EffectivePercent
		r := l.invoice(t, 5000)
		if lifeBucket(r.ID) < eff {
			l.wantAuto(t, r)
			autos++
			continue
		}
		a := l.wantApproval(t, r, fmt.Sprintf("outside the %d%% that run without a person", eff))
		l.wantPending(t, a.ID)
		l.approve(t, a, r.Number, nil)
		if eff == 50 {
			atMax++
		}
		v = l.settle(t)
	}
	if v.Percent != 50 || v.EffectivePercent != 50 {
		t.Fatalf("after the ramp = %+v", v)
	}
	l.wantSystem(t, "automation.ramped: percent 25 -> 50", "automation.ramped: percent 10 -> 25",
		"automation.ramped: percent 0 -> 10")
	l.wantPending(t)
	l.wantOutbox(t)
	v = l.settle(t) // the view read after the last run, which may have run on its own
	if v.AutomaticToday != autos {
		t.Errorf("automatic_today = %d, want %d", v.AutomaticToday, autos)
	}

	// 3. An exception: every item runs on its own for a day, half of them
	// sampled for an after-the-fact review; agreeing with a review is a
	// verdict like an approval.
	exStart := s.clock.Now()
	v = l.patch(t, `{"exception_percent": 100, "exception_days": 1, "exception_reason": "month-end backlog", "sample_percent": 50}`)
	if v.EffectivePercent != 100 || v.ExceptionPercent == nil || *v.ExceptionPercent != 100 || v.ExceptionUntil == nil ||
		*v.ExceptionUntil != exStart.Add(24*time.Hour).UTC().Format(time.RFC3339) {
		t.Fatalf("with the exception = %+v", v)
	}
	var review *taskView
	for i := 0; review == nil; i++ {
		if i == 40 {
			t.Fatal("40 automatic invoices at sample_percent 50 and none sampled")
		}
		r := l.invoice(t, 5000)
		l.wantAuto(t, r)
		autos++
		var tasks []taskView
		s.do(t, "GET", "/v1/tasks?status=open&limit=200", admin, nil).want(t, http.StatusOK).decode(t, &tasks)
		k := slices.IndexFunc(tasks, func(tk taskView) bool { return tk.RunID == r.ID })
		sampled := automation.Bucket("sample", r.ID+"/pay") < 50
		if (k >= 0) != sampled {
			t.Fatalf("invoice %s: review task %v, want %v", r.Number, k >= 0, sampled)
		}
		if sampled {
			review = &tasks[k]
		}
	}
	l.wantPending(t)
	if review.StepKey != "pay" || !slices.Equal(review.Actions, []string{"agree", "disagree"}) {
		t.Errorf("review task = %+v", review)
	}
	s.do(t, "POST", "/v1/tasks/"+review.ID+"/complete", admin, `{"action": "agree"}`).want(t, http.StatusOK)
	l.judged++
	l.agreed++
	v = l.settle(t)
	l.patch(t, `{"sample_percent": 0}`)

	// ... that lapses by itself: the percent is back, and the lapse is in
	// the audit log once the gate saw it.
	s.clock.Advance(24*time.Hour + time.Minute)
	v = l.settings(t)
	if v.ExceptionPercent != nil || v.EffectivePercent != 50 || v.AutomaticToday != 0 {
		t.Fatalf("after the exception = %+v", v)
	}
	r := l.invoice(t, 5000)
	if lifeBucket(r.ID) < 50 {
		l.wantAuto(t, r)
	} else {
		l.approve(t, l.wantApproval(t, r, "outside the 50%"), r.Number, nil)
		l.settle(t)
	}
	l.wantSystem(t, "automation.exception_lapsed: month-end backlog", "automation.ramped: percent 25 -> 50",
		"automation.ramped: percent 10 -> 25", "automation.ramped: percent 0 -> 10")
	l.wantOutbox(t)

	// 4. At 100% the amount cap and require_approval still win (rule 3).
	v = l.patch(t, `{"max_percent": 100, "percent": 100}`)
	if v.EffectivePercent != 100 {
		t.Fatalf("at 100%% = %+v", v)
	}
	l.wantAuto(t, l.invoice(t, 5000))
	capped := l.invoice(t, 250000)
	capApr := l.wantApproval(t, capped, "amount 250000 cents is above the cap of 100000 cents")
	guarded := s.createProc(t, admin, lifeGuardedProcess)
	s.do(t, "PATCH", "/v1/processes/"+guarded.ID+"/automation", admin, `{"max_percent": 100, "percent": 100}`).
		want(t, http.StatusOK)
	s.clock.Advance(time.Second)
	started := s.emit(t, admin, "life.contract.signed", map[string]any{"number": "C-1"})
	if len(started.Runs) != 1 {
		t.Fatalf("contract started %d runs", len(started.Runs))
	}
	contract := s.awaitRun(t, admin, started.Runs[0].ID, "waiting on its approval", func(r runView) bool {
		return r.Status == "waiting" && r.step(t, "notify").Status == "waiting_approval"
	})
	var guardApr approvalView
	s.do(t, "GET", "/v1/approvals/"+*contract.step(t, "notify").ApprovalID, admin, nil).want(t, http.StatusOK).decode(t, &guardApr)
	if guardApr.Status != "pending" || !strings.Contains(guardApr.Summary, "the step requires approval") {
		t.Errorf("require_approval at 100%% = %+v", guardApr)
	}
	l.wantPending(t, capApr.ID, guardApr.ID)

	// 5. A daily limit: two more automatic actions today, then approvals
	// again.
	today := l.settings(t).AutomaticToday
	v = l.patch(t, fmt.Sprintf(`{"daily_limit": %d}`, today+2))
	if v.DailyLimit == nil || *v.DailyLimit != today+2 {
		t.Fatalf("daily limit = %+v", v)
	}
	l.wantAuto(t, l.invoice(t, 5000))
	l.wantAuto(t, l.invoice(t, 5000))
	limitReason := fmt.Sprintf("the process's daily limit of %d automatic actions is reached", today+2)
	var limited []lifeRun
	for range 3 {
		r := l.invoice(t, 5000)
		l.wantApproval(t, r, limitReason)
		limited = append(limited, r)
	}
	l.wantPending(t, capApr.ID, guardApr.ID, limited[0].Approval.ID, limited[1].Approval.ID, limited[2].Approval.ID)
	if v = l.settings(t); v.AutomaticToday != today+2 || v.EffectivePercent != 100 {
		t.Errorf("at the daily limit = %+v", v)
	}
	var wsv automationOut
	s.do(t, "GET", "/v1/automation", admin, nil).want(t, http.StatusOK).decode(t, &wsv)
	if wsv.AutomaticToday != today+2 {
		t.Errorf("workspace automatic_today = %d, want %d", wsv.AutomaticToday, today+2)
	}
	l.wantOutbox(t)

	// 6. Rolled back by disagreement: a rejection and an edit leave the
	// window short (two of three); the third verdict makes agreement 1/3,
	// below 0.7: percent 0, paused, audited.
	l.reject(t, *limited[0].Approval, "wrong supplier")
	if v = l.settle(t); v.Percent != 100 || v.Paused {
		t.Fatalf("after one rejection = %+v", v)
	}
	l.approve(t, *limited[1].Approval, limited[1].Number, map[string]any{"to": "payables@example.com",
		"subject": "Pay " + limited[1].Number + " (corrected)", "body": "Pay 4500 cents."})
	if v = l.settle(t); v.Percent != 100 || v.Paused {
		t.Fatalf("after an edit = %+v", v)
	}
	l.approve(t, *limited[2].Approval, limited[2].Number, nil)
	v = l.settle(t)
	rollback := "rolled back: agreement 0.33 over the last 3 decisions is below 0.70"
	if v.Percent != 0 || !v.Paused || v.PausedReason == nil || *v.PausedReason != rollback || v.EffectivePercent != 0 {
		t.Fatalf("after the rollback: percent %d, effective %d, paused %v, reason %q; want 0, 0, true, %q",
			v.Percent, v.EffectivePercent, v.Paused, strOr(v.PausedReason), rollback)
	}
	l.wantSystem(t, "automation.rolled_back: "+rollback, "automation.exception_lapsed: month-end backlog",
		"automation.ramped: percent 25 -> 50", "automation.ramped: percent 10 -> 25", "automation.ramped: percent 0 -> 10")
	l.wantOutbox(t)
	// Paused: even an item inside every percent waits on a person.
	paused := l.invoice(t, 5000)
	pausedApr := l.wantApproval(t, paused, "supervised: automation is paused: "+rollback)
	l.wantPending(t, capApr.ID, guardApr.ID, pausedApr.ID)

	// A person's approval still runs the action while paused, and is a
	// verdict; nothing ramps or rolls back while paused.
	l.approve(t, capApr, capped.Number, nil)
	l.approve(t, pausedApr, paused.Number, nil)
	v = l.settle(t)
	s.do(t, "POST", "/v1/approvals/"+guardApr.ID+"/approve", admin, `{}`).want(t, http.StatusOK)
	s.awaitRun(t, admin, contract.ID, "completed", runStatusIs("completed"))
	l.sent = append(l.sent, "Signed C-1")
	awaitAgreement(t, s, admin, guarded.ID, 1)
	l.wantPending(t)
	l.wantOutbox(t)
	if v.Percent != 0 || !v.Paused {
		t.Errorf("after approvals while paused = %+v", v)
	}
	if v.Agreement.Overall == nil || math.Abs(*v.Agreement.Overall-float64(l.agreed)/float64(l.judged)) > 1e-9 {
		t.Errorf("process agreement = %v, want %d/%d", v.Agreement.Overall, l.agreed, l.judged)
	}
	l.wantSystem(t, "automation.rolled_back: "+rollback, "automation.exception_lapsed: month-end backlog",
		"automation.ramped: percent 25 -> 50", "automation.ramped: percent 10 -> 25", "automation.ramped: percent 0 -> 10")

	// The cockpit's agreement_rate covers every verdict of the workspace.
	s.do(t, "GET", "/v1/cockpit", admin, nil).want(t, http.StatusOK).decode(t, &cp)
	wantRate := float64(l.agreed+1) / float64(l.judged+1)
	if cp.AgreementRate == nil || math.Abs(*cp.AgreementRate-wantRate) > 1e-9 {
		t.Errorf("cockpit agreement_rate = %v, want %v", cp.AgreementRate, wantRate)
	}

	// Every change by a person is in the audit log too, newest first.
	var people []string
	for _, e := range l.audit(t, "ada") {
		people = append(people, e.Action+" "+e.EntityID)
	}
	wantPeople := []string{
		"automation.updated " + l.proc,     // daily limit
		"automation.updated " + guarded.ID, // the guarded process at 100%
		"automation.updated " + l.proc,     // 100%
		"automation.updated " + l.proc,     // sample_percent 0
		"automation.updated " + l.proc,     // the exception
		"automation.updated " + l.proc,     // auto-ramp on
	}
	if diff := cmp.Diff(wantPeople, people); diff != "" {
		t.Errorf("audit of ada (-want +got):\n%s", diff)
	}
}
