package main

// The console end to end: the example server is built and started as it
// is run (-dev, on a fresh data directory and a free port), and a real
// headless Chromium signs in and works through the people-in-the-loop
// script: complete a task with fields, approve an approval with edited
// arguments, reject one and see its run stop, correct and approve a
// document, and see the cockpit's numbers move. It skips without
// Chromium, except in CI (see browsertest.Require).

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/browsertest"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

// expenseProcess asks a person for the amount, then sends a mail behind
// an approval (a new workspace is supervised: every action asks a
// person).
const expenseProcess = `{"name": "Expense claim", "function": "finance", "trigger": {"type": "manual"},
 "steps": [
  {"key": "review", "type": "human_task", "config": {"title": "Check ${subject.label}",
    "description": "Enter the amount on the receipt and its category.", "due_hours": 24,
    "fields": [{"key": "amount", "label": "Amount", "type": "money", "required": true},
               {"key": "category", "label": "Category", "type": "enum", "options": ["travel", "meals"]},
               {"key": "note", "label": "Note", "type": "text"}]}},
  {"key": "pay", "type": "execute", "capability": "email.send",
   "config": {"args": {"to": "payables@example.com", "subject": "Pay ${subject.label}",
                       "body": "Pay ${steps.review.fields.amount} cents."}, "risk": "low"}}]}`

// callbackProcess asks for a call back, with no due time: its tasks sort
// by their run's priority.
const callbackProcess = `{"name": "Call back", "function": "sales", "trigger": {"type": "manual"},
 "steps": [{"key": "call", "type": "human_task", "config": {"title": "Call ${subject.label}"}}]}`

// upload files a document through the API and returns its id; it lands
// in review.
func (c *client) upload(t *testing.T, typeID, name string, file []byte) string {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("type_id", typeID)
	_ = w.WriteField("queue", "payables")
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(file)
	_ = w.Close()
	req, _ := http.NewRequest("POST", c.base+"/v1/docs/documents", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var d record
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &d) != nil || d.Status != "needs_review" {
		t.Fatalf("upload = %d %s", res.StatusCode, b)
	}
	return d.ID
}

func TestConsoleEndToEnd(t *testing.T) {
	exe := browsertest.Require(t)
	srv := startServer(t, buildServer(t), filepath.Join(t.TempDir(), "data"), "console-e2e")
	root := strings.TrimSuffix(srv.base, "/api")

	// The data the script works on, made through the API in the tenant
	// the console's development login signs in to.
	var sess struct{ Token string }
	status, raw, _, err := newClient(srv.base, "").call("POST", "/v1/auth/dev-login", map[string]any{})
	if err != nil || status >= 300 || json.Unmarshal(raw, &sess) != nil {
		t.Fatalf("dev-login = %d %s %v", status, raw, err)
	}
	c := newClient(srv.base, sess.Token)
	create := func(def string) string {
		var body map[string]any
		if err := json.Unmarshal([]byte(def), &body); err != nil {
			t.Fatal(err)
		}
		var p record
		c.must(t, "POST", "/v1/processes", body, http.StatusCreated, &p)
		return p.ID
	}
	expense, callback := create(expenseProcess), create(callbackProcess)
	start := func(proc, label, priority string) string {
		var r record
		c.must(t, "POST", "/v1/processes/"+proc+"/start", map[string]any{"subject": map[string]any{"type": "expense", "label": label},
			"priority": priority}, http.StatusCreated, &r)
		return r.ID
	}
	runA, runB := start(expense, "Airport taxi", "normal"), start(expense, "Hotel Lisbon", "normal")
	// Started low first: only the priority puts high before it.
	callLow, callNormal, callHigh := start(callback, "Low caller", "low"), start(callback, "Normal caller", "normal"), start(callback, "High caller", "high")
	type task struct {
		ID       string `json:"id"`
		RunID    string `json:"run_id"`
		Priority string `json:"priority"`
	}
	taskOf := func(run string) task {
		t.Helper()
		for _, x := range all[task](t, c, "/v1/tasks?status=open") {
			if x.RunID == run {
				return x
			}
		}
		t.Fatalf("no open task of run %s", run)
		return task{}
	}
	approvalOf := func(run string) string {
		t.Helper()
		var as []struct {
			ID    string `json:"id"`
			RunID string `json:"run_id"`
		}
		c.must(t, "GET", "/v1/approvals?status=pending", nil, http.StatusOK, &as)
		for _, a := range as {
			if a.RunID == run {
				return a.ID
			}
		}
		t.Fatalf("no pending approval of run %s", run)
		return ""
	}
	taskA, taskB := taskOf(runA).ID, taskOf(runB).ID
	var typ record
	c.must(t, "POST", "/v1/docs/types/from-template", map[string]any{"template_id": "supplier_invoice"}, http.StatusCreated, &typ)
	pdf, err := browsertest.InvoicePDF()
	if err != nil {
		t.Fatal(err)
	}
	docID := c.upload(t, typ.ID, "acme-invoice.pdf", pdf)

	ctx := browsertest.Start(t, exe, 60*time.Second)
	browsertest.FailOnExceptions(t, ctx)
	run := func(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%v\npage text:\n%s\nserver log:\n%s", err, body, srv.tail())
		}
	}
	text := func(t *testing.T, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	eval := func(t *testing.T, js string, out any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
		if err == nil {
			err = json.Unmarshal(v, out)
		}
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
	}
	figure := func(t *testing.T, name string) int {
		t.Helper()
		n, err := strconv.Atoi(text(t, `[data-test=`+name+`] .n`))
		if err != nil {
			t.Fatalf("cockpit figure %s: %v", name, err)
		}
		return n
	}
	li := func(id string) string { return `[data-test=inbox-list] li[data-id="` + id + `"]` }

	t.Run("sign in", func(t *testing.T) {
		run(t, chromedp.Navigate(root+"/"),
			chromedp.WaitVisible(chromedp.CSS(`form[data-test=dev-login] button`)),
			chromedp.Click(chromedp.CSS(`form[data-test=dev-login] button`)),
			chromedp.WaitVisible(chromedp.CSS(li(taskA))))
	})

	t.Run("the inbox sorts by due time, then priority", func(t *testing.T) {
		// The expense tasks are due in 24 hours, the document's review in
		// 2 days; the call backs have no due time: high, normal, low.
		if got := taskOf(callHigh).Priority; got != "high" {
			t.Errorf("the high priority run's task shows priority %q", got)
		}
		want := []string{taskA, taskB, docID, taskOf(callHigh).ID, taskOf(callNormal).ID, taskOf(callLow).ID}
		var got []string
		eval(t, `[...document.querySelectorAll('[data-test=inbox-list] li[data-id]')].map((li) => li.dataset.id)`, &got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("inbox order (-want +got):\n%s", diff)
		}
		var pill string
		eval(t, `document.querySelector('`+li(taskOf(callHigh).ID)+` [data-test=priority]')?.textContent ?? ''`, &pill)
		if pill != "high" {
			t.Errorf("the high priority task's pill = %q, want high", pill)
		}
	})

	var completed0, running0 int
	t.Run("the cockpit before", func(t *testing.T) {
		run(t, chromedp.Navigate(root+"/cockpit"), chromedp.WaitVisible(chromedp.CSS(`[data-test=chart]`)))
		completed0, running0 = figure(t, "completed_30d"), figure(t, "running")
		if running0 != 5 {
			t.Errorf("running = %d, want the 5 runs started", running0)
		}
	})

	// complete fills the expense task's fields in the page and completes
	// it; the approval the run asks for next appears without a reload.
	complete := func(t *testing.T, taskID, amount string) {
		t.Helper()
		run(t, chromedp.Navigate(root+"/inbox"), chromedp.WaitVisible(chromedp.CSS(li(taskID))),
			chromedp.Click(chromedp.CSS(li(taskID))),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=task][data-id="`+taskID+`"] [data-field=amount]`)),
			chromedp.SetValue(chromedp.CSS(`[data-field=amount]`), amount),
			chromedp.SetValue(chromedp.CSS(`[data-field=category]`), "travel"),
			chromedp.SendKeys(chromedp.CSS(`[data-field=note]`), "receipt attached"),
			chromedp.Click(chromedp.CSS(`[data-action=complete]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li[data-id^="apr_"]`)))
	}

	t.Run("complete a task with fields", func(t *testing.T) {
		complete(t, taskA, "42.50")
		var got struct {
			Status string         `json:"status"`
			Values map[string]any `json:"values"`
		}
		c.must(t, "GET", "/v1/tasks/"+taskA, nil, http.StatusOK, &got)
		want := map[string]any{"amount": float64(4250), "category": "travel", "note": "receipt attached"}
		if diff := cmp.Diff(want, got.Values); got.Status != "completed" || diff != "" {
			t.Errorf("task %s, values (-want +got):\n%s", got.Status, diff)
		}
	})

	t.Run("approve with edited args", func(t *testing.T) {
		apr := approvalOf(runA)
		run(t, chromedp.Click(chromedp.CSS(li(apr))),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=approval][data-id="`+apr+`"] [data-arg=subject]`)),
			chromedp.SetValue(chromedp.CSS(`[data-arg=subject]`), "Pay the airport taxi"),
			chromedp.Click(chromedp.CSS(`[data-test=approve]`)),
			chromedp.WaitNotPresent(chromedp.CSS(li(apr))),
			chromedp.Navigate(root+"/runs/"+runA),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=completed]`)))
		tl := text(t, `[data-test=timeline]`)
		for _, want := range []string{"with edited arguments", "Pay the airport taxi"} {
			if !strings.Contains(tl, want) {
				t.Errorf("the timeline lacks %q:\n%s", want, tl)
			}
		}
	})

	t.Run("reject one and the run stops", func(t *testing.T) {
		complete(t, taskB, "180")
		apr := approvalOf(runB)
		run(t, chromedp.Click(chromedp.CSS(li(apr))),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=approval][data-id="`+apr+`"] [data-test=reject]`)),
			chromedp.Click(chromedp.CSS(`[data-test=reject]`)),
			chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=reason]`)),
			chromedp.SendKeys(chromedp.CSS(`dialog [data-test=reason]`), "not a business trip"),
			chromedp.Click(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.WaitNotPresent(chromedp.CSS(li(apr))),
			chromedp.Navigate(root+"/runs/"+runB),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=rejected]`)))
		if tl := text(t, `[data-test=timeline]`); !strings.Contains(tl, "not a business trip") {
			t.Errorf("the timeline lacks the reason:\n%s", tl)
		}
		var r record
		c.must(t, "GET", "/v1/process-runs/"+runB, nil, http.StatusOK, &r)
		if r.Status != "rejected" {
			t.Errorf("run %s is %s, want rejected", runB, r.Status)
		}
	})

	t.Run("correct and approve a document", func(t *testing.T) {
		run(t, chromedp.Navigate(root+"/documents/"+docID),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=issues] [data-rule="required:invoice_number"]`)),
			chromedp.SetValue(chromedp.CSS(`[data-doc-field=invoice_number]`), "INV-7781"),
			chromedp.Click(chromedp.CSS(`[data-test=save-fields]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=doc-approve]:not([disabled])`)),
			chromedp.Click(chromedp.CSS(`[data-test=doc-approve]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`[data-test=doc-approve]`)))
		var d struct {
			Status    string                         `json:"status"`
			Extracted map[string]struct{ Value any } `json:"extracted"`
		}
		c.must(t, "GET", "/v1/docs/documents/"+docID, nil, http.StatusOK, &d)
		if d.Status != "approved" || d.Extracted["invoice_number"].Value != "INV-7781" {
			t.Errorf("document = %+v", d)
		}
	})

	t.Run("the cockpit numbers move", func(t *testing.T) {
		run(t, chromedp.Navigate(root+"/cockpit"), chromedp.WaitVisible(chromedp.CSS(`[data-test=chart]`)))
		if got := figure(t, "completed_30d"); got != completed0+1 {
			t.Errorf("completed_30d = %d, want %d", got, completed0+1)
		}
		if got := figure(t, "running"); got != running0-2 {
			t.Errorf("running = %d, want %d (one completed, one rejected)", got, running0-2)
		}
	})

}
