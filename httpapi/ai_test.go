package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/ai/aitest"
	"github.com/google/go-cmp/cmp"
)

const aiKey = "sk-live-abcdefghijklmnop"

// aiModel answers the three AI steps of aiEmailProcess like a model would.
func aiModel(r aitest.Request) aitest.Cue {
	switch r.SchemaName() {
	case "classify":
		return aitest.Cue{Content: `{"label":"invoice","confidence":0.91,"reason":"The sender sends an invoice."}`, PromptTokens: 200, CompletionTokens: 20}
	case "extract":
		return aitest.Cue{Content: `{"fields":{"invoice_number":{"quote":"INV-2026-0042"},"total":{"quote":"EUR 1,250.00"}}}`, PromptTokens: 300, CompletionTokens: 30}
	case "draft":
		return aitest.Cue{Content: `{"subject":"Re: Invoice INV-2026-0042","text":"Dear Jane, we received invoice INV-2026-0042 and will pay it on time."}`, PromptTokens: 250, CompletionTokens: 40}
	}
	return aitest.Cue{Status: http.StatusBadRequest}
}

const aiEmailProcess = `{
  "name": "Inbound supplier e-mail",
  "trigger": {"type": "event", "event": "inbox.email.received"},
  "steps": [
    {"key": "triage", "type": "route",
     "config": {"ai": {"text": "${trigger.data.body}", "labels": [
                  {"label": "invoice", "description": "a supplier sends an invoice"},
                  {"label": "other"}]},
                "rules": [{"when": {"label": "invoice", "confidence": {"gte": 0.8}}, "queue": "accounts-payable"}],
                "default": {"queue": "inbox"}}},
    {"key": "read", "type": "intake",
     "config": {"text": "${trigger.data.body}", "ai": true, "fields": [
                  {"key": "invoice_number", "label": "Invoice number", "required": true},
                  {"key": "total", "label": "Total", "type": "money"}]}},
    {"key": "reply", "type": "draft",
     "config": {"title": "Reply to the supplier", "review": false,
                "template": "Confirm to ${trigger.data.from} that invoice ${steps.read.fields.invoice_number} arrived.",
                "ai": {"kind": "reply", "data": "${steps.read.fields}", "tone": "friendly"}}},
    {"key": "send", "type": "execute", "capability": "email.send",
     "config": {"args": {"to": "${trigger.data.from}", "subject": "Re: ${steps.read.fields.invoice_number}",
                         "body": "${steps.reply.text}"}},
     "controls": {"require_approval": true}}
  ]
}`

const supplierEmail = "Hello,\nplease find our invoice attached.\nInvoice number: INV-2026-0042\nTotal: EUR 1,250.00\nBest, Jane"

// TestAIEmailProcess: an e-mail comes in, ai.classify routes it, ai.extract
// pulls the invoice number with its evidence, ai.draft writes the reply,
// and the send waits for a person's approval as any execute does.
func TestAIEmailProcess(t *testing.T) {
	t.Parallel()
	model := aitest.New(aiKey)
	defer model.Close()
	model.Respond = aiModel
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_ai"}`).Token

	// Before a connection, the connector says so in /v1/connections.
	if got := aiConnStatus(t, s, admin); got != "not_configured" {
		t.Errorf("status before a connection = %q", got)
	}
	s.do(t, "PUT", "/v1/ai/connection", admin, map[string]any{"base_url": model.BaseURL(), "model": "gpt-test",
		"api_key": aiKey, "monthly_token_budget": 100000}).want(t, http.StatusCreated)
	if got := aiConnStatus(t, s, admin); got != "connected" {
		t.Errorf("status with a connection = %q", got)
	}
	for _, c := range []string{"ai.classify", "ai.extract", "ai.draft"} {
		s.do(t, "PUT", "/v1/capabilities/"+c+"/binding", admin, `{"provider_id": "connector.openai"}`).want(t, http.StatusOK)
	}
	s.createProc(t, admin, aiEmailProcess)
	started := s.emit(t, admin, "inbox.email.received", map[string]any{"from": "jane@acme.example", "body": supplierEmail})
	if len(started.Runs) != 1 {
		t.Fatalf("started %d runs", len(started.Runs))
	}
	run := s.awaitRun(t, admin, started.Runs[0].ID, "waiting on the send's approval", func(r runView) bool {
		return r.Status == "failed" || r.step(t, "send").Status == "waiting_approval"
	})
	if run.Status == "failed" {
		t.Fatalf("run failed: %v", *run.Error)
	}
	meta := func(prompt, completion float64) map[string]any {
		return map[string]any{"provider": "connector.openai", "model": "gpt-test", "attempts": 1.0,
			"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}
	}
	wantTriage := map[string]any{"queue": "accounts-payable", "owner": "", "priority": "normal", "matched_rule": "rules.0",
		"classification": map[string]any{"label": "invoice", "confidence": 0.91, "reason": "The sender sends an invoice."},
		"ai":             meta(200, 20)}
	if d := cmp.Diff(wantTriage, run.step(t, "triage").Output); d != "" {
		t.Errorf("triage output (-want +got):\n%s", d)
	}
	at := float64(strings.Index(supplierEmail, "INV-2026-0042"))
	tot := float64(strings.Index(supplierEmail, "EUR 1,250.00"))
	wantRead := map[string]any{
		"fields": map[string]any{"invoice_number": "INV-2026-0042", "total": 125000.0},
		"extracted": map[string]any{
			"invoice_number": map[string]any{"value": "INV-2026-0042", "text": "INV-2026-0042", "page": 1.0, "start": at, "end": at + 13},
			"total":          map[string]any{"value": 125000.0, "text": "EUR 1,250.00", "page": 1.0, "start": tot, "end": tot + 12},
		},
		"problems": []any{}, "missing": []any{}, "ai": meta(300, 30)}
	if d := cmp.Diff(wantRead, run.step(t, "read").Output); d != "" {
		t.Errorf("read output (-want +got):\n%s", d)
	}
	reply := "Dear Jane, we received invoice INV-2026-0042 and will pay it on time."
	wantReply := map[string]any{"text": reply, "outcome": nil, "edited": false, "ai": meta(250, 40)}
	if d := cmp.Diff(wantReply, run.step(t, "reply").Output); d != "" {
		t.Errorf("reply output (-want +got):\n%s", d)
	}
	// The model saw the brief with its references resolved, and the data.
	reqs := model.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[2].Text(), "Confirm to jane@acme.example that invoice INV-2026-0042 arrived.") ||
		!strings.Contains(reqs[2].Text(), `"total": 125000`) {
		t.Errorf("requests: %d; draft prompt %q", len(reqs), reqs[len(reqs)-1].Text())
	}
	if p := model.Problems(); len(p) > 0 {
		t.Errorf("malformed requests: %v", p)
	}

	// The send waits for a person, with the AI's text as the body.
	var pending []approvalView
	s.do(t, "GET", "/v1/approvals?status=pending", admin, nil).want(t, http.StatusOK).decode(t, &pending)
	if len(pending) != 1 || pending[0].Tool != "email.send" || pending[0].Args["body"] != reply {
		t.Fatalf("pending approvals = %+v", pending)
	}
	if got := len(s.runOutbox(t, admin)); got != 0 {
		t.Fatalf("%d messages sent before approval", got)
	}
	s.do(t, "POST", "/v1/approvals/"+pending[0].ID+"/approve", admin, `{}`).want(t, http.StatusOK)
	s.awaitRun(t, admin, run.ID, "completed", runStatusIs("completed"))

	// Usage per tenant and per call.
	var usage struct {
		Calls       int64 `json:"calls"`
		TotalTokens int64 `json:"total_tokens"`
		Budget      int64 `json:"budget"`
	}
	s.do(t, "GET", "/v1/ai/usage?month=2025-03", admin, nil).want(t, http.StatusOK).decode(t, &usage)
	if usage.Calls != 3 || usage.TotalTokens != 840 || usage.Budget != 100000 {
		t.Errorf("usage = %+v", usage)
	}
	var calls []struct {
		ID         string  `json:"id"`
		Capability string  `json:"capability"`
		RunID      *string `json:"run_id"`
		StepKey    *string `json:"step_key"`
		Status     string  `json:"status"`
	}
	s.do(t, "GET", "/v1/ai/calls", admin, nil).want(t, http.StatusOK).decode(t, &calls)
	var got []string
	for _, c := range calls {
		if c.RunID == nil || *c.RunID != run.ID || c.Status != "succeeded" {
			t.Errorf("call %+v", c)
		}
		got = append(got, c.Capability+"@"+*c.StepKey)
	}
	if d := cmp.Diff([]string{"ai.draft@reply", "ai.extract@read", "ai.classify@triage"}, got); d != "" {
		t.Errorf("calls, newest first (-want +got):\n%s", d)
	}
	s.do(t, "GET", "/v1/ai/calls/"+calls[0].ID, admin, nil).want(t, http.StatusOK)
	other := s.devLogin(t, `{"tenant_id": "ten_other"}`).Token
	s.do(t, "GET", "/v1/ai/calls/"+calls[0].ID, other, nil).want(t, http.StatusNotFound)
	var none []any
	s.do(t, "GET", "/v1/ai/calls", other, nil).want(t, http.StatusOK).decode(t, &none)
	if len(none) != 0 {
		t.Errorf("another tenant sees %d calls", len(none))
	}
}

func aiConnStatus(t *testing.T, s *testServer, token string) string {
	t.Helper()
	var conns []struct {
		Provider string `json:"provider"`
		Status   string `json:"status"`
	}
	s.do(t, "GET", "/v1/connections?limit=200", token, nil).want(t, http.StatusOK).decode(t, &conns)
	for _, c := range conns {
		if c.Provider == "connector.openai" {
			return c.Status
		}
	}
	t.Fatalf("connector.openai is not in /v1/connections: %+v", conns)
	return ""
}

func TestAIConnectionRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_a"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_b"}`).Token

	s.do(t, "GET", "/v1/ai/connection", admin, nil).want(t, http.StatusNotFound)
	// Every violation at once, nothing stored.
	r := s.do(t, "PUT", "/v1/ai/connection", admin, map[string]any{"base_url": "ftp://x", "model": "",
		"timeout_seconds": 601, "max_retries": 11, "warn_percent": 0, "redact_patterns": []string{"ssn"},
		"monthly_token_budget": 1000000000001, "redact_fields": make([]string, 51)}).want(t, http.StatusUnprocessableEntity)
	var verr struct {
		Detail []struct {
			Loc []any `json:"loc"`
		} `json:"detail"`
	}
	r.decode(t, &verr)
	var locs []string
	for _, d := range verr.Detail {
		b, _ := json.Marshal(d.Loc)
		locs = append(locs, string(b))
	}
	for _, want := range []string{`["body","model"]`, `["body","timeout_seconds"]`, `["body","max_retries"]`,
		`["body","warn_percent"]`, `["body","redact_patterns",0]`, `["body","monthly_token_budget"]`, `["body","redact_fields"]`} {
		if !strings.Contains(strings.Join(locs, " "), want) {
			t.Errorf("no violation at %s: %v", want, locs)
		}
	}
	s.do(t, "GET", "/v1/ai/connection", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "PUT", "/v1/ai/connection", admin, map[string]any{"base_url": "ftp://x", "model": "m"}).want(t, http.StatusUnprocessableEntity)

	// Just inside the bounds.
	fifty := make([]string, 50)
	for i := range fifty {
		fifty[i] = "field_" + strings.Repeat("x", i+1)
	}
	body := map[string]any{"base_url": "http://localhost:11434/v1", "model": "llama3.2", "api_key": aiKey,
		"timeout_seconds": 600, "max_retries": 10, "warn_percent": 100, "monthly_token_budget": 1000000000000,
		"redact_fields": fifty, "redact_patterns": []string{"email", "phone", "iban", "card"}}
	created := s.do(t, "PUT", "/v1/ai/connection", admin, body).want(t, http.StatusCreated)
	if strings.Contains(string(created.Body), aiKey) {
		t.Errorf("the API key is returned: %s", created.Body)
	}
	var conn map[string]any
	s.do(t, "GET", "/v1/ai/connection", admin, nil).want(t, http.StatusOK).decode(t, &conn)
	if conn["api_key_set"] != true || conn["api_key_last4"] != "mnop" || conn["model"] != "llama3.2" || conn["timeout_seconds"] != 600.0 {
		t.Errorf("connection = %v", conn)
	}
	// Replacing without api_key keeps the key; other tenants see nothing.
	s.do(t, "PUT", "/v1/ai/connection", admin, map[string]any{"base_url": "http://localhost:11434/v1", "model": "qwen"}).want(t, http.StatusOK).decode(t, &conn)
	if conn["api_key_set"] != true || conn["timeout_seconds"] != 60.0 {
		t.Errorf("replaced connection = %v", conn)
	}
	s.do(t, "GET", "/v1/ai/connection", other, nil).want(t, http.StatusNotFound)
	s.do(t, "DELETE", "/v1/ai/connection", other, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/ai/usage?month=2025-13", admin, nil).want(t, http.StatusUnprocessableEntity)
	s.do(t, "GET", "/v1/ai/usage", admin, nil).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/ai/connection", admin, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/ai/connection", admin, nil).want(t, http.StatusNotFound)
}

// TestAIStepRetriesInvalidAnswersAndStopsAtTheBudget: an invalid answer
// fails the step's attempt and the run retries it; once the month's budget
// is used up, the next AI step fails the run with a clear error.
func TestAIStepRetriesInvalidAnswersAndStopsAtTheBudget(t *testing.T) {
	t.Parallel()
	model := aitest.New("")
	defer model.Close()
	model.Respond = aiModel
	model.Push(aitest.Cue{Content: `{"label":"spam","confidence":2,"reason":"?"}`, PromptTokens: 60, CompletionTokens: 0})
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_budget"}`).Token
	s.do(t, "PUT", "/v1/ai/connection", admin, map[string]any{"base_url": model.BaseURL(), "model": "m",
		"monthly_token_budget": 250, "warn_percent": 50}).want(t, http.StatusCreated)
	s.createProc(t, admin, aiEmailProcess)
	started := s.emit(t, admin, "inbox.email.received", map[string]any{"from": "jane@acme.example", "body": supplierEmail})
	run := s.awaitRun(t, admin, started.Runs[0].ID, "retrying the triage", func(r runView) bool {
		return r.step(t, "triage").Error != nil || r.Status == "failed"
	})
	if e := run.step(t, "triage").Error; e == nil || !strings.Contains(*e, "answer is invalid") || run.Status == "failed" {
		t.Fatalf("triage after an invalid answer: %+v", run)
	}
	s.clock.Advance(time.Hour) // the retry's timer
	run = s.awaitRun(t, admin, run.ID, "failed at the budget", runStatusIs("failed"))
	// 60 (invalid) + 220 (classify) = 280 >= 250: the extract is refused.
	if run.step(t, "triage").Status != "completed" || run.step(t, "read").Status != "failed" || run.Error == nil ||
		!strings.Contains(*run.Error, "monthly AI token budget is used up: 280 of 250 tokens used in 2025-03") {
		t.Fatalf("run = %+v", run)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d requests; the refused call must not reach the model", n)
	}
	var usage struct {
		WarnedAt    *string `json:"warned_at"`
		ExhaustedAt *string `json:"exhausted_at"`
	}
	s.do(t, "GET", "/v1/ai/usage?month=2025-03", admin, nil).want(t, http.StatusOK).decode(t, &usage)
	if usage.WarnedAt == nil || usage.ExhaustedAt == nil {
		t.Errorf("usage = %+v", usage)
	}
}

// TestAIDraftReviewed: a reviewed AI draft is the task a person sees; their
// edit is the step's text, and the output keeps the AI record.
func TestAIDraftReviewed(t *testing.T) {
	t.Parallel()
	model := aitest.New("")
	defer model.Close()
	model.Respond = aiModel
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_draft"}`).Token
	s.do(t, "PUT", "/v1/ai/connection", admin, map[string]any{"base_url": model.BaseURL(), "model": "m"}).want(t, http.StatusCreated)
	proc := s.createProc(t, admin, `{"name": "Quote", "trigger": {"type": "manual"}, "steps": [
	  {"key": "reply", "type": "draft", "config": {"title": "Reply", "template": "Reply about ${subject.label}.",
	   "ai": {"kind": "quote", "max_words": 120}}}]}`)
	run := s.startRun(t, admin, proc.ID, "INV-2026-0042")
	drafted := "Dear Jane, we received invoice INV-2026-0042 and will pay it on time."
	run = s.awaitRun(t, admin, run.ID, "waiting for the review", func(r runView) bool {
		return r.Status == "failed" || r.step(t, "reply").TaskID != nil
	})
	out, _ := run.step(t, "reply").Output.(map[string]any)
	if run.Status == "failed" || out["draft"] != drafted || out["ai"] == nil {
		t.Fatalf("run = %+v", run)
	}
	var task taskView
	s.do(t, "GET", "/v1/tasks/"+*run.step(t, "reply").TaskID, admin, nil).want(t, http.StatusOK).decode(t, &task)
	if task.Description == nil || *task.Description != drafted {
		t.Fatalf("task = %+v", task)
	}
	if !strings.Contains(model.Requests()[0].Text(), "Write a quote.") || !strings.Contains(model.Requests()[0].Text(), "At most 120 words.") {
		t.Errorf("prompt %q", model.Requests()[0].Text())
	}
	s.do(t, "POST", "/v1/tasks/"+task.ID+"/complete", admin, `{"action": "approve", "fields": {"text": "Dear Jane, thanks."}}`).want(t, http.StatusOK)
	run = s.awaitRun(t, admin, run.ID, "completed", runStatusIs("completed"))
	out, _ = run.step(t, "reply").Output.(map[string]any)
	if out["text"] != "Dear Jane, thanks." || out["edited"] != true || out["outcome"] != "approve" || out["ai"] == nil {
		t.Errorf("reply output = %v", out)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d requests; the review must not ask the model again", n)
	}
}
