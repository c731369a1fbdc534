package httpapi_test

// HTTP tests of the run routes (runs.go): manual starts, runs, cancel,
// events, the cockpit, tasks and approvals, and the interface's own
// example end to end: a supplier invoice triggered by
// docs.document.validated, held above its amount cap, rejected once and
// approved once, with the process edited while a run is in flight.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// runView is a run as GET /v1/process-runs/{id} shows it.
type runView struct {
	ID             string `json:"id"`
	ProcessID      string `json:"process_id"`
	ProcessName    string `json:"process_name"`
	ProcessVersion int    `json:"process_version"`
	Function       string `json:"function"`
	Status         string `json:"status"`
	Subject        struct {
		Type  string `json:"type"`
		Label string `json:"label"`
	} `json:"subject"`
	Trigger struct {
		Type  string  `json:"type"`
		Event *string `json:"event"`
	} `json:"trigger"`
	CurrentStep *string       `json:"current_step"`
	Steps       []runStepView `json:"steps"`
	Overdue     bool          `json:"overdue"`
	StartedAt   string        `json:"started_at"`
	CompletedAt *string       `json:"completed_at"`
	Error       *string       `json:"error"`
}

type runStepView struct {
	Key         string  `json:"key"`
	Type        string  `json:"type"`
	Status      string  `json:"status"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Output      any     `json:"output"`
	Error       *string `json:"error"`
	ApprovalID  *string `json:"approval_id"`
	TaskID      *string `json:"task_id"`
}

// stepKeys lists the run's step keys.
func (r runView) stepKeys() []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Key
	}
	return out
}

// step returns the run's step key.
func (r runView) step(t *testing.T, key string) runStepView {
	t.Helper()
	for _, s := range r.Steps {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("run %s has no step %s: %v", r.ID, key, r.stepKeys())
	return runStepView{}
}

// taskView is a human task (HumanTaskOut).
type taskView struct {
	ID          string           `json:"id"`
	RunID       string           `json:"run_id"`
	ProcessName string           `json:"process_name"`
	StepKey     string           `json:"step_key"`
	Title       string           `json:"title"`
	Description *string          `json:"description"`
	Subject     map[string]any   `json:"subject"`
	Actions     []string         `json:"actions"`
	Fields      []map[string]any `json:"fields"`
	Status      string           `json:"status"`
	Outcome     *string          `json:"outcome"`
	DueAt       *string          `json:"due_at"`
	CreatedAt   string           `json:"created_at"`
	CompletedAt *string          `json:"completed_at"`
}

// approvalView is an approval (ApprovalOut).
type approvalView struct {
	ID        string         `json:"id"`
	RunID     *string        `json:"run_id"`
	AppID     string         `json:"app_id"`
	Tool      string         `json:"tool"`
	Risk      string         `json:"risk"`
	Summary   string         `json:"summary"`
	Args      map[string]any `json:"args"`
	Status    string         `json:"status"`
	CreatedAt string         `json:"created_at"`
	ExpiresAt *string        `json:"expires_at"`
	DecidedBy *string        `json:"decided_by"`
	DecidedAt *string        `json:"decided_at"`
}

// decisionView answers approve and reject.
type decisionView struct {
	Approval approvalView `json:"approval"`
	Run      runView      `json:"run"`
}

// emitView answers POST /v1/events.
type emitView struct {
	EventID string    `json:"event_id"`
	Runs    []runView `json:"runs"`
}

// cockpitView is the Cockpit record.
type cockpitView struct {
	Running         int                       `json:"running"`
	WaitingOnYou    int                       `json:"waiting_on_you"`
	Overdue         int                       `json:"overdue"`
	Completed30d    int                       `json:"completed_30d"`
	MinutesSaved30d int                       `json:"minutes_saved_30d"`
	AgreementRate   *float64                  `json:"agreement_rate"`
	ByFunction      map[string]map[string]int `json:"by_function"`
	RecentRuns      []runView                 `json:"recent_runs"`
	OpenTasks       []taskView                `json:"open_tasks"`
}

// outboxMessage is a message of GET /v1/outbox.
type outboxMessage struct {
	ID             string   `json:"id"`
	To             []string `json:"to"`
	Subject        string   `json:"subject"`
	Body           string   `json:"body"`
	IdempotencyKey string   `json:"idempotency_key"`
}

// createProc creates a process from a ProcessIn body.
func (s *testServer) createProc(t testing.TB, token, body string) processOut {
	t.Helper()
	var p processOut
	s.do(t, "POST", "/v1/processes", token, body).want(t, http.StatusCreated).decode(t, &p)
	return p
}

// startRun starts a run by hand and returns it as the 201 shows it.
func (s *testServer) startRun(t *testing.T, token, processID, label string) runView {
	t.Helper()
	var r runView
	resp := s.do(t, "POST", "/v1/processes/"+processID+"/start", token,
		fmt.Sprintf(`{"subject": {"type": "invoice", "label": %q}}`, label)).want(t, http.StatusCreated)
	resp.decode(t, &r)
	if got, want := resp.Header.Get("Location"), "/api/v1/process-runs/"+r.ID; got != want {
		t.Errorf("start Location = %q, want %q", got, want)
	}
	return r
}

// getRun reads a run.
func (s *testServer) getRun(t *testing.T, token, id string) runView {
	t.Helper()
	var r runView
	s.do(t, "GET", "/v1/process-runs/"+id, token, nil).want(t, http.StatusOK).decode(t, &r)
	return r
}

// tenantOf returns the tenant a token acts for.
func (s *testServer) tenantOf(t *testing.T, token string) string {
	t.Helper()
	p, err := wiring.Of(s.ws.Internal()).Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return p.Tenant
}

// awaitRun waits until cond holds for the run as the API shows it (the
// engine advances runs asynchronously after it answers) and returns it:
// the workspace tells it of each committed change of the run.
func (s *testServer) awaitRun(t *testing.T, token, id, what string, cond func(runView) bool) runView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last runView
	if _, err := s.ws.WaitRunUntil(ctx, s.tenantOf(t, token), id, func(*bas.Run) bool {
		last = s.getRun(t, token, id)
		return cond(last)
	}); err != nil {
		t.Fatalf("run %s never became %s (%v): %+v", id, what, err, last)
	}
	return last
}

func runStatusIs(status string) func(runView) bool {
	return func(r runView) bool { return r.Status == status }
}

// emit posts an event and returns the runs it started. An event of a
// namespace an app owns (docs.*), which POST /v1/events refuses, is
// published on the engine as the app would, in token's tenant.
func (s *testServer) emit(t *testing.T, token, name string, data map[string]any) emitView {
	t.Helper()
	var out emitView
	if strings.HasPrefix(name, "docs.") {
		var me struct {
			TenantID string `json:"tenant_id"`
		}
		s.do(t, "GET", "/v1/auth/me", token, nil).want(t, http.StatusOK).decode(t, &me)
		pub, err := s.ws.Engine().Publish(context.Background(), runengine.PublishParams{Tenant: me.TenantID, Name: name, Data: data})
		if err != nil {
			t.Fatalf("publish %s: %v", name, err)
		}
		raw, _ := json.Marshal(map[string]any{"event_id": pub.Event.ID, "runs": pub.Runs})
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	s.do(t, "POST", "/v1/events", token, map[string]any{"name": name, "data": data}).
		want(t, http.StatusAccepted).decode(t, &out)
	if !strings.HasPrefix(out.EventID, "evt_") {
		t.Errorf("event id %q", out.EventID)
	}
	return out
}

// pages follows X-Next-Cursor from path (which carries its own query) and
// returns the ids of each page.
func (s *testServer) pages(t *testing.T, token, path string) [][]string {
	t.Helper()
	var out [][]string
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	cursor := ""
	for range 100 {
		p := path
		if cursor != "" {
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		resp := s.do(t, "GET", p, token, nil).want(t, http.StatusOK)
		var items []struct {
			ID string `json:"id"`
		}
		resp.decode(t, &items)
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.ID
		}
		out = append(out, ids)
		cursor = resp.Header.Get("X-Next-Cursor")
		if cursor == "" {
			return out
		}
	}
	t.Fatalf("%s: more than 100 pages", path)
	return nil
}

// listIDs returns every id of a list, following cursors.
func (s *testServer) listIDs(t *testing.T, token, path string) []string {
	t.Helper()
	var all []string
	for _, p := range s.pages(t, token, path) {
		all = append(all, p...)
	}
	if all == nil {
		all = []string{}
	}
	return all
}

// runOutbox returns the outbox messages process steps sent (their
// idempotency keys start with a run id), following cursors.
func (s *testServer) runOutbox(t *testing.T, token string) []outboxMessage {
	t.Helper()
	var out []outboxMessage
	cursor := ""
	for range 1000 {
		p := "/v1/outbox?limit=200"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		resp := s.do(t, "GET", p, token, nil).want(t, http.StatusOK)
		var msgs []outboxMessage
		resp.decode(t, &msgs)
		for _, m := range msgs {
			if strings.HasPrefix(m.IdempotencyKey, "run_") {
				out = append(out, m)
			}
		}
		if cursor = resp.Header.Get("X-Next-Cursor"); cursor == "" {
			return out
		}
	}
	t.Fatal("outbox: too many pages")
	return nil
}

// supplierInvoiceV1 is the interface's example: validated supplier
// invoices of at least 10.00 start a run; the validate step checks the
// invoice, the execute step sends the payment instruction through
// email.send (the built-in outbox) and is held for a person above 1,000.00.
const supplierInvoiceV1 = `{
  "name": "Supplier invoice",
  "description": "Checks validated supplier invoices and instructs payables",
  "function": "finance",
  "trigger": {"type": "event", "event": "docs.document.validated",
              "filter": {"doc_type": "supplier_invoice", "amount_cents": {"gte": 1000}}},
  "steps": [
    {"key": "check", "type": "validate",
     "config": {"record": "${trigger.data}", "rules": [
       {"field": "supplier", "check": "required"},
       {"field": "amount_cents", "check": "min", "value": 1}]}},
    {"key": "pay", "type": "execute", "capability": "email.send",
     "config": {"args": {"to": "payables@example.com", "subject": "Pay ${trigger.data.number} (v1)",
                         "body": "Pay ${trigger.data.amount_cents} cents to ${trigger.data.supplier}."},
                "amount_path": "trigger.data.amount_cents"},
     "controls": {"amount_cap_cents": 100000}}
  ]
}`

// supplierInvoiceV2Steps edits the steps: another subject and a route step
// at the end.
const supplierInvoiceV2Steps = `{"steps": [
    {"key": "check", "type": "validate",
     "config": {"record": "${trigger.data}", "rules": [{"field": "supplier", "check": "required"}]}},
    {"key": "pay", "type": "execute", "capability": "email.send",
     "config": {"args": {"to": "payables@example.com", "subject": "Pay ${trigger.data.number} (v2)",
                         "body": "Pay ${trigger.data.amount_cents} cents."},
                "amount_path": "trigger.data.amount_cents"},
     "controls": {"amount_cap_cents": 100000}},
    {"key": "file", "type": "route",
     "config": {"rules": [{"when": {"trigger.data.amount_cents": {"gte": 100000}}, "queue": "large"}],
                "default": {"queue": "standard"}}}
]}`

func invoiceEvent(number string, amount int) map[string]any {
	return map[string]any{"doc_type": "supplier_invoice", "number": number, "supplier": "Acme Tools",
		"amount_cents": amount, "document_id": "doc_" + number}
}

// TestSupplierInvoiceExampleHTTP runs the interface's own example over
// HTTP: an event with a filter starts runs, an execute step above its
// amount cap waits for a person whatever the autonomy gate says, a
// rejection stops the run, an approval completes it, and an edit to the
// process while a run waits leaves that run on its version.
func TestSupplierInvoiceExampleHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_invoices"}`).Token
	proc := s.createProc(t, admin, supplierInvoiceV1)
	const event = "docs.document.validated"

	// Events the filter refuses start nothing.
	for _, data := range []map[string]any{
		{"doc_type": "supplier_invoice", "number": "INV-0", "supplier": "Acme Tools", "amount_cents": 999},
		{"doc_type": "receipt", "number": "R-1", "supplier": "Cafe", "amount_cents": 250000},
		{"doc_type": "supplier_invoice", "number": "INV-00", "supplier": "Acme Tools"},
	} {
		if got := s.emit(t, admin, event, data); len(got.Runs) != 0 {
			t.Fatalf("event %v started %d runs, want none", data, len(got.Runs))
		}
	}
	if got := s.emit(t, admin, "docs.document.received", invoiceEvent("INV-X", 250000)); len(got.Runs) != 0 {
		t.Fatalf("another event started %d runs", len(got.Runs))
	}

	// First invoice: 2,500.00 is above the cap of 1,000.00, so a person decides.
	s.clock.Advance(time.Second)
	started := s.emit(t, admin, event, invoiceEvent("INV-1", 250000))
	if len(started.Runs) != 1 {
		t.Fatalf("event started %d runs, want 1", len(started.Runs))
	}
	first := started.Runs[0]
	if first.ProcessID != proc.ID || first.ProcessVersion != 1 || first.Trigger.Type != "event" ||
		first.Trigger.Event == nil || *first.Trigger.Event != event || first.Function != "finance" {
		t.Errorf("started run = %+v", first)
	}
	first = s.awaitRun(t, admin, first.ID, "waiting on its approval", func(r runView) bool {
		return r.Status == "waiting" && r.step(t, "pay").Status == "waiting_approval"
	})
	if got := first.step(t, "check"); got.Status != "completed" || got.Output == nil {
		t.Errorf("check step = %+v", got)
	}
	if first.CurrentStep == nil || *first.CurrentStep != "pay" {
		t.Errorf("current_step = %v, want pay", first.CurrentStep)
	}
	aprA := first.step(t, "pay").ApprovalID
	if aprA == nil {
		t.Fatalf("pay waits without an approval id: %+v", first.step(t, "pay"))
	}
	var pending []approvalView
	s.do(t, "GET", "/v1/approvals?status=pending", admin, nil).want(t, http.StatusOK).decode(t, &pending)
	if len(pending) != 1 || pending[0].ID != *aprA {
		t.Fatalf("pending approvals = %+v, want %s", pending, *aprA)
	}
	a := pending[0]
	wantArgs := map[string]any{"to": "payables@example.com", "subject": "Pay INV-1 (v1)",
		"body": "Pay 250000 cents to Acme Tools."}
	if diff := cmp.Diff(wantArgs, a.Args); diff != "" {
		t.Errorf("approval args (-want +got):\n%s", diff)
	}
	if a.RunID == nil || *a.RunID != first.ID || a.Tool != "email.send" || a.Status != "pending" ||
		!strings.Contains(a.Summary, "above the cap") || a.ExpiresAt == nil || a.DecidedBy != nil {
		t.Errorf("approval = %+v", a)
	}

	// Rejection stops the run.
	var rejected decisionView
	s.do(t, "POST", "/v1/approvals/"+*aprA+"/reject", admin, `{"reason": "not our supplier"}`).
		want(t, http.StatusOK).decode(t, &rejected)
	if rejected.Approval.Status != "rejected" || rejected.Approval.DecidedBy == nil || rejected.Approval.DecidedAt == nil ||
		rejected.Run.ID != first.ID || rejected.Run.Status != "rejected" {
		t.Errorf("reject answered %+v", rejected)
	}
	first = s.getRun(t, admin, first.ID)
	if first.Status != "rejected" || first.Error == nil || !strings.Contains(*first.Error, "not our supplier") ||
		first.CompletedAt == nil || first.step(t, "pay").Status != "failed" {
		t.Errorf("rejected run = %+v", first)
	}
	if got := s.do(t, "POST", "/v1/approvals/"+*aprA+"/approve", admin, `{}`).want(t, http.StatusConflict).detail(t); got != "approval already rejected" {
		t.Errorf("approving a rejected approval: %q", got)
	}

	// Second invoice: approved, while the process is edited meanwhile.
	s.clock.Advance(time.Second)
	started = s.emit(t, admin, event, invoiceEvent("INV-2", 180000))
	if len(started.Runs) != 1 {
		t.Fatalf("second event started %d runs", len(started.Runs))
	}
	second := s.awaitRun(t, admin, started.Runs[0].ID, "waiting on its approval", func(r runView) bool {
		return r.step(t, "pay").Status == "waiting_approval"
	})
	var edited processOut
	s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, supplierInvoiceV2Steps).want(t, http.StatusOK).decode(t, &edited)
	if edited.Version != 2 || len(edited.Steps) != 3 {
		t.Fatalf("edited process: version %d, %d steps", edited.Version, len(edited.Steps))
	}
	var versions []struct {
		Version int `json:"version"`
	}
	s.do(t, "GET", "/v1/processes/"+proc.ID+"/versions", admin, nil).want(t, http.StatusOK).decode(t, &versions)
	if len(versions) != 2 || versions[0].Version != 1 || versions[1].Version != 2 {
		t.Errorf("versions = %+v", versions)
	}
	var approved decisionView
	s.do(t, "POST", "/v1/approvals/"+*second.step(t, "pay").ApprovalID+"/approve", admin, `{}`).
		want(t, http.StatusOK).decode(t, &approved)
	if approved.Approval.Status != "approved" || approved.Run.ID != second.ID {
		t.Errorf("approve answered %+v", approved)
	}
	second = s.awaitRun(t, admin, second.ID, "completed", runStatusIs("completed"))
	if second.ProcessVersion != 1 {
		t.Errorf("the run moved to version %d; it must keep version 1", second.ProcessVersion)
	}
	if diff := cmp.Diff([]string{"check", "pay"}, second.stepKeys()); diff != "" {
		t.Errorf("steps of the run started on version 1 (-want +got):\n%s", diff)
	}
	pay := second.step(t, "pay")
	out, _ := pay.Output.(map[string]any)
	if pay.Status != "completed" || out["status"] != "queued" || out["message_id"] == nil {
		t.Errorf("pay step = %+v", pay)
	}
	if second.CompletedAt == nil || second.CurrentStep != nil || second.Error != nil {
		t.Errorf("completed run = %+v", second)
	}
	msgs := s.runOutbox(t, admin)
	if len(msgs) != 1 {
		t.Fatalf("outbox holds %d messages of runs, want 1 (the approved one): %+v", len(msgs), msgs)
	}
	want := outboxMessage{ID: fmt.Sprint(out["message_id"]), To: []string{"payables@example.com"},
		Subject: "Pay INV-2 (v1)", Body: "Pay 180000 cents to Acme Tools.", IdempotencyKey: msgs[0].IdempotencyKey}
	if diff := cmp.Diff(want, msgs[0]); diff != "" {
		t.Errorf("sent message (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(msgs[0].IdempotencyKey, second.ID+"/pay/") {
		t.Errorf("idempotency key %q is not run/step/attempt of %s", msgs[0].IdempotencyKey, second.ID)
	}

	// A run started after the edit runs version 2.
	s.clock.Advance(time.Second)
	started = s.emit(t, admin, event, invoiceEvent("INV-3", 120000))
	if len(started.Runs) != 1 {
		t.Fatalf("third event started %d runs", len(started.Runs))
	}
	third := s.awaitRun(t, admin, started.Runs[0].ID, "waiting on its approval", func(r runView) bool {
		return r.Status == "waiting"
	})
	if third.ProcessVersion != 2 || !slices.Equal(third.stepKeys(), []string{"check", "pay", "file"}) {
		t.Errorf("run after the edit: version %d, steps %v", third.ProcessVersion, third.stepKeys())
	}
	var aprC approvalView
	s.do(t, "GET", "/v1/approvals/"+*third.step(t, "pay").ApprovalID, admin, nil).want(t, http.StatusOK).decode(t, &aprC)
	if aprC.Args["subject"] != "Pay INV-3 (v2)" {
		t.Errorf("approval of the v2 run proposes %v", aprC.Args)
	}

	// The cockpit after those runs: one rejected, one completed, one waiting.
	var cp cockpitView
	s.do(t, "GET", "/v1/cockpit", admin, nil).want(t, http.StatusOK).decode(t, &cp)
	recent := make([]string, len(cp.RecentRuns))
	for i, r := range cp.RecentRuns {
		recent[i] = r.ID
	}
	type figures struct {
		Running, WaitingOnYou, Overdue, Completed30d, MinutesSaved30d int
		ByFunction                                                    map[string]map[string]int
		RecentRuns                                                    []string
		OpenTasks                                                     int
	}
	got := figures{cp.Running, cp.WaitingOnYou, cp.Overdue, cp.Completed30d, cp.MinutesSaved30d, cp.ByFunction,
		recent, len(cp.OpenTasks)}
	// The validate step of the completed run ran without a person (10
	// minutes by the documented estimate); the approved step did not.
	wantFig := figures{Running: 1, WaitingOnYou: 1, Overdue: 0, Completed30d: 1, MinutesSaved30d: 10,
		ByFunction: map[string]map[string]int{"finance": {"running": 1, "waiting": 1}},
		RecentRuns: []string{third.ID, second.ID, first.ID}, OpenTasks: 0}
	if diff := cmp.Diff(wantFig, got); diff != "" {
		t.Errorf("cockpit (-want +got):\n%s", diff)
	}
	if cp.AgreementRate != nil && (*cp.AgreementRate < 0 || *cp.AgreementRate > 1) {
		t.Errorf("agreement_rate = %v", *cp.AgreementRate)
	}
	// A member cannot decide approvals: nothing waits on them.
	member := s.newKey(t, admin, `{"name": "clerk", "roles": ["member"]}`)
	s.do(t, "GET", "/v1/cockpit", member.Secret, nil).want(t, http.StatusOK).decode(t, &cp)
	if cp.WaitingOnYou != 0 || cp.Running != 1 || cp.Completed30d != 1 {
		t.Errorf("member's cockpit: waiting_on_you %d, running %d, completed_30d %d", cp.WaitingOnYou, cp.Running, cp.Completed30d)
	}
	// ... and cannot decide one.
	s.do(t, "POST", "/v1/approvals/"+aprC.ID+"/approve", member.Secret, `{}`).want(t, http.StatusForbidden)
}

// TestRunRoutesStatuses covers the statuses of every run route on the
// common paths: start, read, list, cancel, tasks and approvals.
func TestRunRoutesStatuses(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_runs"}`).Token
	viewer := s.newKey(t, admin, `{"name": "reader", "roles": ["viewer"]}`).Secret

	review := s.createProc(t, admin, `{"name": "Review", "function": "operations", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at ${subject.label}",
	     "actions": ["accept", "refuse"], "fields": [{"key": "note", "label": "Note", "required": true}]}},
	    {"key": "after", "type": "route", "config": {"rules": [{"when": {"steps.look.outcome": "accept"}, "queue": "done"}],
	     "default": {"queue": "redo"}}}]}`)

	// Start: 201 with the run and its Location; the human task is open.
	r := s.startRun(t, admin, review.ID, "INV-7")
	if r.Status != "waiting" || r.ProcessVersion != 1 || r.Trigger.Type != "manual" || r.Subject.Label != "INV-7" ||
		!strings.HasPrefix(r.ID, "run_") || !strings.HasSuffix(r.StartedAt, "Z") {
		t.Errorf("started run = %+v", r)
	}
	look := r.step(t, "look")
	if look.Status != "waiting_task" || look.TaskID == nil {
		t.Fatalf("look step = %+v", look)
	}
	var task taskView
	s.do(t, "GET", "/v1/tasks/"+*look.TaskID, admin, nil).want(t, http.StatusOK).decode(t, &task)
	if task.Title != "Look at INV-7" || task.Status != "open" || task.RunID != r.ID || task.StepKey != "look" ||
		task.ProcessName != "Review" || task.Outcome != nil || task.CompletedAt != nil ||
		!slices.Equal(task.Actions, []string{"accept", "refuse"}) || task.Subject["label"] != "INV-7" {
		t.Errorf("task = %+v", task)
	}
	// A viewer reads but cannot start, work or cancel.
	s.do(t, "GET", "/v1/process-runs/"+r.ID, viewer, nil).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/processes/"+review.ID+"/start", viewer, `{"subject": {"type": "a", "label": "b"}}`).want(t, http.StatusForbidden)
	s.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", viewer, `{"action": "accept", "fields": {"note": "x"}}`).want(t, http.StatusForbidden)
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/cancel", viewer, nil).want(t, http.StatusForbidden)
	s.do(t, "GET", "/v1/process-runs/"+r.ID, "", nil).want(t, http.StatusUnauthorized)

	// Completing the task: 200 with the task; the run goes on and completes.
	var done taskView
	s.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", admin, `{"action": "accept", "fields": {"note": "fine"}}`).
		want(t, http.StatusOK).decode(t, &done)
	if done.Status != "completed" || done.Outcome == nil || *done.Outcome != "accept" || done.CompletedAt == nil {
		t.Errorf("completed task = %+v", done)
	}
	r = s.awaitRun(t, admin, r.ID, "completed", runStatusIs("completed"))
	if diff := cmp.Diff(map[string]any{"outcome": "accept", "fields": map[string]any{"note": "fine"}},
		withoutKey(r.step(t, "look").Output, "completed_by")); diff != "" {
		t.Errorf("look output (-want +got):\n%s", diff)
	}
	if q := r.step(t, "after").Output.(map[string]any)["queue"]; q != "done" {
		t.Errorf("route queue = %v", q)
	}
	// Conflicts: a completed task, a finished run.
	if got := s.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", admin, `{"action": "accept", "fields": {"note": "again"}}`).
		want(t, http.StatusConflict).detail(t); got != "task already completed" {
		t.Errorf("completing twice: %q", got)
	}
	if got := s.do(t, "POST", "/v1/process-runs/"+r.ID+"/cancel", admin, nil).want(t, http.StatusConflict).detail(t); got != "run already completed" {
		t.Errorf("cancelling a completed run: %q", got)
	}

	// Cancel: 200 with the cancelled run; its open task is cancelled too.
	s.clock.Advance(time.Second)
	r2 := s.startRun(t, admin, review.ID, "INV-8")
	var cancelled runView
	s.do(t, "POST", "/v1/process-runs/"+r2.ID+"/cancel", admin, nil).want(t, http.StatusOK).decode(t, &cancelled)
	if cancelled.Status != "cancelled" || cancelled.CompletedAt == nil || cancelled.Error == nil {
		t.Errorf("cancelled run = %+v", cancelled)
	}
	s.do(t, "GET", "/v1/tasks/"+*r2.step(t, "look").TaskID, admin, nil).want(t, http.StatusOK).decode(t, &task)
	if task.Status != "cancelled" {
		t.Errorf("task of a cancelled run is %s", task.Status)
	}
	s.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", admin, `{"action": "accept", "fields": {"note": "late"}}`).want(t, http.StatusConflict)
	s.do(t, "POST", "/v1/process-runs/"+r2.ID+"/cancel", admin, nil).want(t, http.StatusConflict)

	// A disabled or archived process starts nothing (409); an unknown one is 404.
	s.do(t, "PATCH", "/v1/processes/"+review.ID, admin, `{"enabled": false}`).want(t, http.StatusOK)
	if got := s.do(t, "POST", "/v1/processes/"+review.ID+"/start", admin, `{"subject": {"type": "a", "label": "b"}}`).
		want(t, http.StatusConflict).detail(t); got != "process is disabled" {
		t.Errorf("start of a disabled process: %q", got)
	}
	s.do(t, "PATCH", "/v1/processes/"+review.ID, admin, `{"enabled": true}`).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/processes/"+review.ID, admin, nil).want(t, http.StatusNoContent)
	if got := s.do(t, "POST", "/v1/processes/"+review.ID+"/start", admin, `{"subject": {"type": "a", "label": "b"}}`).
		want(t, http.StatusConflict).detail(t); got != "process is archived" {
		t.Errorf("start of an archived process: %q", got)
	}
	s.do(t, "POST", "/v1/processes/prc_01JNKX7Z0000000000000000/start", admin, `{"subject": {"type": "a", "label": "b"}}`).want(t, http.StatusNotFound)
	for _, p := range []string{"/v1/process-runs/run_01JNKX7Z0000000000000000", "/v1/tasks/tsk_01JNKX7Z0000000000000000",
		"/v1/approvals/apr_01JNKX7Z0000000000000000"} {
		s.do(t, "GET", p, admin, nil).want(t, http.StatusNotFound)
	}
	// The list holds both runs, newest first.
	if diff := cmp.Diff([]string{r2.ID, r.ID}, s.listIDs(t, admin, "/v1/process-runs")); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// withoutKey returns a copy of a decoded object without key.
func withoutKey(v any, key string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, val := range m {
		if k != key {
			out[k] = val
		}
	}
	return out
}

// approvalProcess makes every run wait on an approval whatever the gate
// says: the route step requires one.
const approvalProcess = `{"name": "Approve routing", "function": "finance", "trigger": {"type": "manual"},
  "steps": [{"key": "route", "type": "route", "controls": {"require_approval": true},
    "config": {"rules": [{"when": {"subject.type": "invoice"}, "queue": "ap"}], "default": {"queue": "other"}}}]}`

// TestRunRoutesOtherTenant checks that runs, tasks, approvals and
// processes of another tenant are 404 on every run route, and that
// nothing of theirs changes.
func TestRunRoutesOtherTenant(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	a := s.devLogin(t, `{"tenant_id": "ten_a"}`).Token
	b := s.devLogin(t, `{"tenant_id": "ten_b"}`).Token

	taskProc := s.createProc(t, b, `{"name": "B task", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Do it"}}]}`)
	aprProc := s.createProc(t, b, approvalProcess)
	rt := s.startRun(t, b, taskProc.ID, "B-1")
	ra := s.startRun(t, b, aprProc.ID, "B-2")
	taskID, aprID := *rt.step(t, "t").TaskID, *ra.step(t, "route").ApprovalID

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/processes/" + taskProc.ID + "/start", `{"subject": {"type": "a", "label": "b"}}`},
		{"POST", "/v1/processes/" + taskProc.ID + "/start", `{"subject": {}}`}, // 404 before 422
		{"GET", "/v1/process-runs/" + rt.ID, ""},
		{"POST", "/v1/process-runs/" + rt.ID + "/cancel", ""},
		{"GET", "/v1/tasks/" + taskID, ""},
		{"POST", "/v1/tasks/" + taskID + "/complete", `{"action": "complete"}`},
		{"POST", "/v1/tasks/" + taskID + "/complete", `{"malformed": `},
		{"GET", "/v1/approvals/" + aprID, ""},
		{"POST", "/v1/approvals/" + aprID + "/approve", `{}`},
		{"POST", "/v1/approvals/" + aprID + "/reject", `{"reason": "no"}`},
		{"POST", "/v1/approvals/" + aprID + "/reject", `[1, 2`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		resp := s.do(t, c.method, c.path, a, body)
		if resp.Status != http.StatusNotFound {
			t.Errorf("%s %s as another tenant: %d, want 404: %s", c.method, c.path, resp.Status, resp.Body)
			continue
		}
		if d := resp.detail(t); !strings.HasSuffix(d, "not found") {
			t.Errorf("%s %s: detail %q", c.method, c.path, d)
		}
	}
	// Lists and the cockpit of A show nothing of B's.
	for _, p := range []string{"/v1/process-runs", "/v1/tasks", "/v1/approvals", "/v1/process-runs?process_id=" + taskProc.ID} {
		if got := s.listIDs(t, a, p); len(got) != 0 {
			t.Errorf("%s as tenant A: %v", p, got)
		}
	}
	var cp cockpitView
	s.do(t, "GET", "/v1/cockpit", a, nil).want(t, http.StatusOK).decode(t, &cp)
	if cp.Running != 0 || cp.WaitingOnYou != 0 || len(cp.RecentRuns) != 0 || len(cp.OpenTasks) != 0 {
		t.Errorf("tenant A's cockpit shows B's work: %+v", cp)
	}
	// Events of A start none of B's processes.
	if got := s.emit(t, a, "docs.document.validated", invoiceEvent("A-1", 5000)); len(got.Runs) != 0 {
		t.Errorf("A's event started %d runs", len(got.Runs))
	}
	// B's records are as they were.
	if r := s.getRun(t, b, rt.ID); r.Status != "waiting" {
		t.Errorf("B's run is %s", r.Status)
	}
	var apr approvalView
	s.do(t, "GET", "/v1/approvals/"+aprID, b, nil).want(t, http.StatusOK).decode(t, &apr)
	if apr.Status != "pending" {
		t.Errorf("B's approval is %s", apr.Status)
	}
	s.do(t, "GET", "/v1/cockpit", b, nil).want(t, http.StatusOK).decode(t, &cp)
	if cp.Running != 2 || cp.WaitingOnYou != 2 || len(cp.RecentRuns) != 2 || len(cp.OpenTasks) != 1 {
		t.Errorf("B's cockpit: %+v", cp)
	}
}

// violationList returns "loc:type" of each item of a 422, sorted.
func violationList(t *testing.T, r *testResponse) []string {
	t.Helper()
	got := violationsOf(t, r)
	sort.Strings(got)
	return got
}

// TestRunRoutesValidation checks the 422s of the run routes: every
// violation of a request at once, located in body or query.
func TestRunRoutesValidation(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_valid"}`).Token
	proc := s.createProc(t, admin, `{"name": "Check", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Check", "actions": ["accept", "refuse"],
	    "fields": [{"key": "note", "label": "Note", "required": true},
	               {"key": "amount", "label": "Amount", "type": "number"}]}}]}`)
	r := s.startRun(t, admin, proc.ID, "X-1")
	taskID := *r.step(t, "t").TaskID

	long := strings.Repeat("x", 201)
	cases := []struct {
		name, method, path string
		body               any
		want               []string
	}{
		{"start without subject", "POST", "/v1/processes/" + proc.ID + "/start", `{}`,
			[]string{"body.subject:missing"}},
		{"start with a bad subject", "POST", "/v1/processes/" + proc.ID + "/start",
			`{"subject": {"type": "", "label": ` + fmt.Sprintf("%q", long) + `}}`,
			[]string{"body.subject.label:string_too_long", "body.subject.type:string_too_short"}},
		{"start with wrong types", "POST", "/v1/processes/" + proc.ID + "/start", `{"subject": {"type": 1}}`,
			[]string{"body.subject.label:missing", "body.subject.type:type_error"}},
		{"start with malformed JSON", "POST", "/v1/processes/" + proc.ID + "/start", `{"subject": `,
			[]string{"body:json_invalid"}},
		{"runs with bad filters", "GET", "/v1/process-runs?status=lost&overdue=maybe", nil,
			[]string{"query.overdue:type_error", "query.status:enum"}},
		{"runs with a bad limit", "GET", "/v1/process-runs?limit=201", nil, []string{"query.limit:less_than_equal"}},
		{"run wait of zero", "GET", "/v1/process-runs/" + r.ID + "?wait=0", nil, []string{"query.wait:greater_than_equal"}},
		{"run wait past 60 s", "GET", "/v1/process-runs/" + r.ID + "?wait=61", nil, []string{"query.wait:less_than_equal"}},
		{"run wait not a number", "GET", "/v1/process-runs/" + r.ID + "?wait=1.5", nil, []string{"query.wait:type_error"}},
		{"run wait empty", "GET", "/v1/process-runs/" + r.ID + "?wait=", nil, []string{"query.wait:type_error"}},
		{"tasks with a bad status", "GET", "/v1/tasks?status=done", nil, []string{"query.status:enum"}},
		{"tasks by assignee without status", "GET", "/v1/tasks?assignee=me", nil, []string{"query.assignee:value_error"}},
		{"approvals with a bad status", "GET", "/v1/approvals?status=maybe", nil, []string{"query.status:enum"}},
		{"approvals with a bad limit", "GET", "/v1/approvals?limit=0", nil, []string{"query.limit:greater_than_equal"}},
		{"event without a name", "POST", "/v1/events", `{"data": {"a": 1}}`, []string{"body.name:missing"}},
		{"event with a bad name and data", "POST", "/v1/events", `{"name": "Docs Validated!", "data": [1]}`,
			[]string{"body.data:type_error", "body.name:string_pattern_mismatch"}},
		{"complete with a bad action and fields", "POST", "/v1/tasks/" + taskID + "/complete",
			`{"action": "maybe", "fields": {"amount": "ten", "color": "red"}}`,
			[]string{"body.action:enum", "body.fields.amount:type_error", "body.fields.color:extra_forbidden", "body.fields.note:missing"}},
		{"complete without action", "POST", "/v1/tasks/" + taskID + "/complete", `{"fields": {}}`,
			[]string{"body.action:missing"}},
		{"reject with a long reason", "POST", "/v1/approvals/%s/reject", map[string]any{"reason": strings.Repeat("r", 2001)},
			[]string{"body.reason:string_too_long"}},
		{"approve with args not an object", "POST", "/v1/approvals/%s/approve", `{"args": [1]}`,
			[]string{"body.args:type_error"}},
	}
	aprProc := s.createProc(t, admin, approvalProcess)
	ra := s.startRun(t, admin, aprProc.ID, "X-2")
	aprID := *ra.step(t, "route").ApprovalID
	for _, c := range cases {
		path := c.path
		if strings.Contains(path, "%s") {
			path = fmt.Sprintf(path, aprID)
		}
		resp := s.do(t, c.method, path, admin, c.body)
		if resp.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %s %s: status %d, want 422: %s", c.name, c.method, path, resp.Status, resp.Body)
			continue
		}
		if diff := cmp.Diff(c.want, violationList(t, resp)); diff != "" {
			t.Errorf("%s: violations (-want +got):\n%s", c.name, diff)
		}
	}
	// None of it changed anything.
	if got := s.listIDs(t, admin, "/v1/process-runs"); len(got) != 2 {
		t.Errorf("runs after invalid requests: %v", got)
	}
	var task taskView
	s.do(t, "GET", "/v1/tasks/"+taskID, admin, nil).want(t, http.StatusOK).decode(t, &task)
	var apr approvalView
	s.do(t, "GET", "/v1/approvals/"+aprID, admin, nil).want(t, http.StatusOK).decode(t, &apr)
	if task.Status != "open" || apr.Status != "pending" {
		t.Errorf("after invalid requests: task %s, approval %s", task.Status, apr.Status)
	}
}

// TestRunListsPaging pages runs, tasks and approvals with ?limit= and
// X-Next-Cursor, newest first, and filters them by status.
func TestRunListsPaging(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_pages", "email": "ann@example.com"}`)
	tok := admin.Token
	taskProc := s.createProc(t, tok, `{"name": "Task", "function": "operations", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Do ${subject.label}", "assignee": "ann@example.com"}}]}`)
	// The same person by user id: assignee=me lists both.
	byIDProc := s.createProc(t, tok, `{"name": "Task by id", "function": "operations", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Do ${subject.label}", "assignee": "`+admin.UserID+`"}}]}`)
	aprProc := s.createProc(t, tok, approvalProcess)

	// Five runs of each, one second apart so that ids order them; the task
	// runs alternate between the two ways of naming the assignee.
	var taskRuns, aprRuns, tasks, approvals []string
	for i := range 5 {
		s.clock.Advance(time.Second)
		proc := taskProc.ID
		if i%2 == 1 {
			proc = byIDProc.ID
		}
		r := s.startRun(t, tok, proc, fmt.Sprintf("T-%d", i))
		taskRuns = append(taskRuns, r.ID)
		tasks = append(tasks, *r.step(t, "t").TaskID)
		s.clock.Advance(time.Second)
		r = s.startRun(t, tok, aprProc.ID, fmt.Sprintf("A-%d", i))
		aprRuns = append(aprRuns, r.ID)
		approvals = append(approvals, *r.step(t, "route").ApprovalID)
	}
	newestFirst := func(ids ...[]string) []string {
		var all []string
		for _, l := range ids {
			all = append(all, l...)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(all)))
		return all
	}
	pageSizes := func(pages [][]string) []int {
		out := make([]int, len(pages))
		for i, p := range pages {
			out[i] = len(p)
		}
		return out
	}
	flat := func(pages [][]string) []string {
		var all []string
		for _, p := range pages {
			all = append(all, p...)
		}
		return all
	}
	for _, c := range []struct {
		path  string
		want  []string
		sizes []int
	}{
		{"/v1/process-runs?limit=3", newestFirst(taskRuns, aprRuns), []int{3, 3, 3, 1}},
		{"/v1/process-runs?limit=5&process_id=" + aprProc.ID, newestFirst(aprRuns), []int{5}},
		{"/v1/process-runs?limit=2&status=waiting", newestFirst(taskRuns, aprRuns), []int{2, 2, 2, 2, 2}},
		{"/v1/tasks?limit=2", newestFirst(tasks), []int{2, 2, 1}},
		{"/v1/tasks?limit=2&status=open&assignee=me", newestFirst(tasks), []int{2, 2, 1}},
		{"/v1/tasks?limit=1&status=open&assignee=me", newestFirst(tasks), []int{1, 1, 1, 1, 1}},
		{"/v1/tasks?limit=5&status=open&assignee=ann@example.com", newestFirst([]string{tasks[0], tasks[2], tasks[4]}), []int{3}},
		{"/v1/approvals?limit=4&status=pending", newestFirst(approvals), []int{4, 1}},
	} {
		pages := s.pages(t, tok, c.path)
		if diff := cmp.Diff(c.want, flat(pages)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
		// A full last page may be followed by an empty one; no page is
		// larger than the limit and none but the last is short.
		sizes := pageSizes(pages)
		if n := len(sizes); n > 1 && sizes[n-1] == 0 {
			sizes = sizes[:n-1]
		}
		if diff := cmp.Diff(c.sizes, sizes); diff != "" {
			t.Errorf("%s page sizes (-want +got):\n%s", c.path, diff)
		}
	}

	// Move some along: complete two tasks, reject one approval, approve one.
	for _, id := range tasks[:2] {
		s.do(t, "POST", "/v1/tasks/"+id+"/complete", tok, `{"action": "complete"}`).want(t, http.StatusOK)
	}
	s.do(t, "POST", "/v1/approvals/"+approvals[0]+"/reject", tok, `{}`).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/approvals/"+approvals[1]+"/approve", tok, `{}`).want(t, http.StatusOK)
	for _, id := range append(slices.Clone(taskRuns[:2]), aprRuns[1]) {
		s.awaitRun(t, tok, id, "completed", runStatusIs("completed"))
	}
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/v1/process-runs?status=completed", newestFirst(taskRuns[:2], aprRuns[1:2])},
		{"/v1/process-runs?status=rejected", aprRuns[:1]},
		{"/v1/process-runs?status=waiting&limit=2", newestFirst(taskRuns[2:], aprRuns[2:])},
		{"/v1/process-runs?status=cancelled", []string{}},
		{"/v1/process-runs?status=waiting&process_id=" + taskProc.ID, newestFirst([]string{taskRuns[2], taskRuns[4]})},
		{"/v1/process-runs?overdue=true", []string{}},
		{"/v1/tasks?status=open&limit=1", newestFirst(tasks[2:])},
		{"/v1/tasks?status=completed", newestFirst(tasks[:2])},
		{"/v1/tasks?status=open&assignee=nobody@example.com", []string{}},
		{"/v1/tasks?status=open&assignee=me&limit=2", newestFirst(tasks[2:])},
		{"/v1/tasks?status=completed&assignee=me", newestFirst(tasks[:2])},
		{"/v1/approvals?status=pending&limit=2", newestFirst(approvals[2:])},
		{"/v1/approvals?status=rejected", approvals[:1]},
		{"/v1/approvals?status=approved", approvals[1:2]},
		{"/v1/approvals", newestFirst(approvals)},
	} {
		if diff := cmp.Diff(c.want, s.listIDs(t, tok, c.path)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
	}
	var opened []taskView
	s.do(t, "GET", "/v1/tasks?status=open&limit=200", tok, nil).want(t, http.StatusOK).decode(t, &opened)
	for _, tk := range opened {
		if tk.Status != "open" {
			t.Errorf("open list holds a %s task", tk.Status)
		}
	}
	if len(opened) != 3 {
		t.Errorf("%d open tasks, want 3", len(opened))
	}
	// The page after the last item is empty with no cursor.
	resp := s.do(t, "GET", "/v1/approvals?status=rejected&limit=1", tok, nil).want(t, http.StatusOK)
	if c := resp.Header.Get("X-Next-Cursor"); c != "" {
		var rest []json.RawMessage
		s.do(t, "GET", "/v1/approvals?status=rejected&limit=1&cursor="+url.QueryEscape(c), tok, nil).
			want(t, http.StatusOK).decode(t, &rest)
		if len(rest) != 0 {
			t.Errorf("page after the only rejected approval: %s", rest)
		}
	}
}

// TestRunRoutesBoundsJustInside sends every bounded value of the run routes
// at its limit: each is accepted (the values just outside are in
// TestRunRoutesValidation).
func TestRunRoutesBoundsJustInside(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_bounds"}`).Token
	proc := s.createProc(t, admin, approvalProcess)
	for _, subject := range []map[string]string{
		{"type": "x", "label": "y"},
		{"type": strings.Repeat("t", 200), "label": strings.Repeat("l", 200)},
	} {
		s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", admin, map[string]any{"subject": subject}).want(t, http.StatusCreated)
	}
	for _, limit := range []string{"1", "200"} {
		s.do(t, "GET", "/v1/process-runs?limit="+limit, admin, nil).want(t, http.StatusOK)
		s.do(t, "GET", "/v1/tasks?limit="+limit, admin, nil).want(t, http.StatusOK)
		s.do(t, "GET", "/v1/approvals?limit="+limit, admin, nil).want(t, http.StatusOK)
	}
	name := "a" + strings.Repeat(".b", 99) + "c" // 200 characters
	s.do(t, "POST", "/v1/events", admin, map[string]any{"name": name}).want(t, http.StatusAccepted)
	var pending []approvalView
	s.do(t, "GET", "/v1/approvals?status=pending", admin, nil).want(t, http.StatusOK).decode(t, &pending)
	if len(pending) != 2 {
		t.Fatalf("%d pending approvals, want 2", len(pending))
	}
	s.do(t, "POST", "/v1/approvals/"+pending[0].ID+"/reject", admin,
		map[string]any{"reason": strings.Repeat("r", 2000)}).want(t, http.StatusOK)
}

// TestRunLongPoll waits for a run over HTTP with GET ?wait=: the answer
// comes when the run ends, or after the wait with the run as it is; another
// tenant's run is a 404 before any wait.
func TestRunLongPoll(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_wait"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_wait_other"}`).Token
	proc := s.createProc(t, admin, `{"name": "Look", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look"}}]}`)
	r := s.startRun(t, admin, proc.ID, "W-1")

	// The shortest wait ends with the run still waiting on its task.
	var got runView
	s.do(t, "GET", "/v1/process-runs/"+r.ID+"?wait=1", admin, nil).want(t, http.StatusOK).decode(t, &got)
	if got.Status != "waiting" {
		t.Fatalf("after a 1 s wait the run is %s, want waiting", got.Status)
	}
	s.do(t, "GET", "/v1/process-runs/"+r.ID+"?wait=60", other, nil).want(t, http.StatusNotFound)

	// A long wait answers once the task's completion ends the run.
	done := make(chan *testResponse, 1)
	go func() { done <- s.do(t, "GET", "/v1/process-runs/"+r.ID+"?wait=60", admin, nil) }()
	s.do(t, "POST", "/v1/tasks/"+*r.step(t, "t").TaskID+"/complete", admin, `{"action": "complete"}`).want(t, http.StatusOK)
	var v runView
	testwait.Recv(t, done, "the long poll answered").want(t, http.StatusOK).decode(t, &v)
	if v.Status != "completed" {
		t.Fatalf("the long poll answered %s, want completed", v.Status)
	}
	// An ended run answers at once, whatever the wait.
	s.do(t, "GET", "/v1/process-runs/"+r.ID+"?wait=60", admin, nil).want(t, http.StatusOK).decode(t, &got)
	if got.Status != "completed" {
		t.Fatalf("ended run: %s", got.Status)
	}
}
