package console_test

// End-to-end tests in a real headless Chromium driven over CDP
// (chromedp): the console and the API on one origin, as examples/server
// serves them. They skip when no Chromium is found, except in CI
// (CI=true), where a missing browser fails. Run with -screenshots to
// write the README's pictures to screenshots/.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/browsertest"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

var screenshots = flag.Bool("screenshots", false, "write the console's screenshots to screenshots/*.png")

// apiCall makes one API call with a bearer token and decodes the answer.
func (s *server) apiCall(t testing.TB, tok, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.srv.URL+"/api"+path, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s = %d %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return res.StatusCode
}

// taskTrail is what a failed check of a task's assignee shows: the task's
// audit entries (each change of its assignee: when, by whom, from what to
// what) and the task read again, so that a change nobody meant (an
// unclaim, a stale write) tells itself apart from a read that went back
// in time (no entry undoes the claim, yet the task reads unclaimed).
func (s *server) taskTrail(t testing.TB, tok, taskID string) string {
	t.Helper()
	var entries []struct {
		At            time.Time
		Actor, Action string
		EntityID      string `json:"entity_id"`
		Before, After json.RawMessage
	}
	s.apiCall(t, tok, "GET", "/v1/audit?entity=task&limit=200", nil, &entries)
	var b strings.Builder
	fmt.Fprintf(&b, "audit of task %s, newest first:\n", taskID)
	for _, e := range entries {
		if e.EntityID == taskID {
			fmt.Fprintf(&b, "  %s %s by %s: %s -> %s\n", e.At.Format(time.RFC3339Nano), e.Action, e.Actor, e.Before, e.After)
		}
	}
	var task json.RawMessage
	s.apiCall(t, tok, "GET", "/v1/tasks/"+taskID, nil, &task)
	fmt.Fprintf(&b, "the task read again: %s", task)
	return b.String()
}

// invoicePDF is a supplier invoice without its number: it lands in review
// with one error.
func invoicePDF(t testing.TB) []byte {
	t.Helper()
	pdf, err := browsertest.InvoicePDF()
	if err != nil {
		t.Fatal(err)
	}
	return pdf
}

func (s *server) upload(t testing.TB, tok, typeID, name string, file []byte) string {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("type_id", typeID)
	_ = w.WriteField("queue", "payables")
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(file)
	_ = w.Close()
	req, _ := http.NewRequest("POST", s.srv.URL+"/api/v1/docs/documents", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var d struct {
		ID     string
		Status string
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 || json.Unmarshal(b, &d) != nil || d.Status != "needs_review" {
		t.Fatalf("upload = %d %s", res.StatusCode, b)
	}
	return d.ID
}

// expenseProcess asks a person for the amount, then sends a mail behind an
// approval (the workspace is supervised: every action asks a person).
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

// markup is a subject label that would run script if the console put
// record text into the page as HTML.
const markup = `<img src=x onerror="window.__xss=1"><script>window.__xss=1</script><b>Taxi</b>`

func TestConsoleInBrowser(t *testing.T) {
	exe := browsertest.Require(t)
	s := newServer(t, true)

	var sess struct{ Token string }
	s.apiCall(t, "", "POST", "/v1/auth/dev-login", map[string]any{}, &sess)
	tok := sess.Token
	var proc struct{ ID string }
	var pbody map[string]any
	_ = json.Unmarshal([]byte(expenseProcess), &pbody)
	s.apiCall(t, tok, "POST", "/v1/processes", pbody, &proc)
	start := func(label string) string {
		var r struct{ ID string }
		s.apiCall(t, tok, "POST", "/v1/processes/"+proc.ID+"/start", map[string]any{"subject": map[string]any{"type": "expense", "label": label}}, &r)
		return r.ID
	}
	runA, runB, runC := start(markup), start("Hotel Lisbon"), start("Team lunch")
	taskOf := func(run string) string {
		var tasks []struct {
			ID    string
			RunID string `json:"run_id"`
		}
		s.apiCall(t, tok, "GET", "/v1/tasks?status=open", nil, &tasks)
		for _, x := range tasks {
			if x.RunID == run {
				return x.ID
			}
		}
		t.Fatalf("no open task for run %s", run)
		return ""
	}
	taskA, taskB := taskOf(runA), taskOf(runB)
	var typ struct{ ID string }
	s.apiCall(t, tok, "POST", "/v1/docs/types/from-template", map[string]any{"template_id": "supplier_invoice"}, &typ)
	docID := s.upload(t, tok, typ.ID, "acme-invoice.pdf", invoicePDF(t))

	ctx := browsertest.Start(t, exe, 90*time.Second)
	browsertest.FailOnExceptions(t, ctx)

	run := func(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%v\npage text:\n%s", err, body)
		}
	}
	shot := func(t *testing.T, name string) {
		t.Helper()
		if !*screenshots {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("screenshots", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("screenshots", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
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
	li := func(id string) string { return `li[data-id="` + id + `"]` }
	// click clicks the first node sel matches, as chromedp.Click does,
	// again when a live update re-rendered the list between the query
	// and the click (the node it found went away: "No node with given id
	// found"), as a person would click the item where it now is.
	click := func(sel string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			var err error
			for range 5 {
				if _, err = chromedp.Click(chromedp.CSS(sel))(ctx, tg); err == nil || !nodeGone(err) {
					break
				}
			}
			return chromedp.Void{}, err
		}
	}

	t.Run("sign in with the development login", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS(`form[data-test=dev-login] button`)),
			chromedp.Click(chromedp.CSS(`form[data-test=dev-login] button`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] `+li(taskA))))
		var cookie string
		eval(t, `document.cookie`, &cookie)
		if cookie != "" {
			t.Errorf("a script can read the cookie: %q", cookie)
		}
		res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
		if err != nil {
			t.Fatal(err)
		}
		cookies := res.Cookies
		if len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict {
			t.Errorf("cookies = %+v", cookies)
		}
	})

	t.Run("the inbox puts the nearest due first", func(t *testing.T) {
		// Tasks are due in 24 hours, the document's review in 2 days.
		var kinds []string
		eval(t, `[...document.querySelectorAll('[data-test=inbox-list] li[data-id]')].map((li) => li.dataset.id.slice(0, 4))`, &kinds)
		if diff := cmp.Diff([]string{"tsk_", "tsk_", "tsk_", "doc_"}, kinds); diff != "" {
			t.Errorf("inbox order (-want +got):\n%s", diff)
		}
	})

	t.Run("the cockpit starts at zero", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/cockpit"), chromedp.WaitVisible(chromedp.CSS(`[data-test=chart]`)))
		if got := text(t, `[data-test=completed_30d] .n`); got != "0" {
			t.Errorf("completed_30d = %q, want 0", got)
		}
		if got := text(t, `[data-test=running] .n`); got != "3" {
			t.Errorf("running = %q, want 3", got)
		}
	})

	t.Run("record text stays text", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(li(taskA))),
			click(li(taskA)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=task][data-id="`+taskA+`"]`)))
		if got := text(t, `[data-test=task-title]`); got != "Check "+markup {
			t.Errorf("task title = %q, want the markup as text", got)
		}
		var xss bool
		eval(t, `window.__xss === 1 || document.querySelectorAll('main img, main b, main script').length > 0`, &xss)
		if xss {
			t.Error("a record's markup became elements or ran")
		}
	})

	t.Run("complete a task with fields", func(t *testing.T) {
		run(t, chromedp.SetValue(chromedp.CSS(`[data-field=amount]`), "42.50"),
			chromedp.SetValue(chromedp.CSS(`[data-field=category]`), "travel"),
			chromedp.SendKeys(chromedp.CSS(`[data-field=note]`), "airport"),
			chromedp.Click(chromedp.CSS(`[data-action=complete]`)),
			// The approval the run asks for next appears without a reload.
			chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li[data-id^="apr_"]`)))
		var task struct {
			Status string
			Values map[string]any
		}
		s.apiCall(t, tok, "GET", "/v1/tasks/"+taskA, nil, &task)
		if task.Status != "completed" || task.Values["amount"] != float64(4250) || task.Values["category"] != "travel" || task.Values["note"] != "airport" {
			t.Errorf("task = %+v", task)
		}
	})

	approvalOf := func(t *testing.T, run string) string {
		var as []struct {
			ID    string
			RunID string `json:"run_id"`
		}
		s.apiCall(t, tok, "GET", "/v1/approvals?status=pending", nil, &as)
		for _, a := range as {
			if a.RunID == run {
				return a.ID
			}
		}
		t.Fatalf("no pending approval for run %s", run)
		return ""
	}

	t.Run("approve with edited args", func(t *testing.T) {
		aprA := approvalOf(t, runA)
		run(t, click(li(aprA)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=approval][data-id="`+aprA+`"] [data-arg=subject]`)))
		shot(t, "inbox")
		run(t, chromedp.SetValue(chromedp.CSS(`[data-arg=subject]`), "Pay the airport taxi"),
			chromedp.Click(chromedp.CSS(`[data-test=approve]`)),
			chromedp.WaitNotPresent(chromedp.CSS(li(aprA))))
		run(t, chromedp.Navigate(s.srv.URL+"/runs/"+runA),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=completed]`)))
		tl := text(t, `[data-test=timeline]`)
		for _, want := range []string{"with edited arguments", "Pay the airport taxi", "by usr_demo"} {
			if !strings.Contains(tl, want) {
				t.Errorf("timeline lacks %q:\n%s", want, tl)
			}
		}
		shot(t, "run")
	})

	t.Run("reject by keyboard and the run stops", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(li(taskB))),
			click(li(taskB)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=task][data-id="`+taskB+`"]`)),
			chromedp.Focus(chromedp.CSS(`main`)),
			chromedp.KeyEvent("c"),
			// A required field is missing: the API's 422 is shown beside it.
			chromedp.WaitVisible(chromedp.CSS(`.fielderr`)),
			chromedp.SetValue(chromedp.CSS(`[data-field=amount]`), "180"),
			chromedp.Focus(chromedp.CSS(`main`)),
			chromedp.KeyEvent("c"),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li[data-id^="apr_"]`)))
		aprB := approvalOf(t, runB)
		run(t, click(li(aprB)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=approval][data-id="`+aprB+`"]`)),
			chromedp.Focus(chromedp.CSS(`main`)),
			chromedp.KeyEvent("r"),
			chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=reason]`)),
			// CDP sends the key's character apart from its keydown, so it
			// lands in the reason box that the keydown opened; a browser
			// does not type it there.
		)
		var cleared bool
		eval(t, `(document.querySelector('dialog [data-test=reason]').value = '', true)`, &cleared)
		run(t, chromedp.Click(chromedp.CSS(`[data-test=confirm]`)))
		var open bool
		eval(t, `document.querySelector('dialog').open`, &open)
		if !open {
			t.Fatal("the dialog closed without the required reason")
		}
		run(t, chromedp.SendKeys(chromedp.CSS(`dialog [data-test=reason]`), "not a business trip"),
			chromedp.Click(chromedp.CSS(`[data-test=confirm]`)),
			chromedp.WaitNotPresent(chromedp.CSS(li(aprB))),
			chromedp.Navigate(s.srv.URL+"/runs/"+runB),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=rejected]`)))
		if tl := text(t, `[data-test=timeline]`); !strings.Contains(tl, "not a business trip") {
			t.Errorf("the timeline lacks the reason:\n%s", tl)
		}
	})

	t.Run("correct and approve a document", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/documents/"+docID),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=issues] [data-rule="required:invoice_number"]`)))
		var disabled bool
		eval(t, `document.querySelector('[data-test=doc-approve]').disabled`, &disabled)
		if !disabled {
			t.Error("approve is offered while a validation error remains")
		}
		if *screenshots {
			// Only for the picture, never for an assertion: Chromium's PDF
			// viewer paints in its own process a moment after the frame
			// loads, and nothing in the page tells when.
			run(t, chromedp.Sleep(2*time.Second))
		}
		shot(t, "document")
		// The frame beside the fields shows the file itself, inline.
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('iframe.file').src).then((r) =>
			r.status + ' ' + r.headers.get('content-type') + ' ' + r.headers.get('content-disposition'))`, chromedp.EvalAwaitPromise))
		if err != nil || got != "200 application/pdf inline" {
			t.Errorf("the document's frame loads %q (%v), want the PDF inline", got, err)
		}
		run(t, chromedp.SetValue(chromedp.CSS(`[data-doc-field=invoice_number]`), "INV-7781"),
			chromedp.Click(chromedp.CSS(`[data-test=save-fields]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=doc-approve]:not([disabled])`)),
			chromedp.Click(chromedp.CSS(`[data-test=doc-approve]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`[data-test=doc-approve]`)))
		var d struct {
			Status    string
			Extracted map[string]struct{ Value any }
		}
		s.apiCall(t, tok, "GET", "/v1/docs/documents/"+docID, nil, &d)
		if d.Status != "approved" || d.Extracted["invoice_number"].Value != "INV-7781" {
			t.Errorf("document = %+v", d)
		}
	})

	t.Run("the cockpit numbers move", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/cockpit"), chromedp.WaitVisible(chromedp.CSS(`[data-test=chart]`)))
		if got := text(t, `[data-test=completed_30d] .n`); got != "1" {
			t.Errorf("completed_30d = %q, want 1", got)
		}
		if got := text(t, `[data-test=running] .n`); got != "1" {
			t.Errorf("running = %q, want 1", got)
		}
		var today int
		eval(t, `Number(document.querySelector('[data-test=chart] rect.bar:last-of-type').dataset.count)`, &today)
		if today != 1 {
			t.Errorf("today's bar = %d, want 1", today)
		}
		shot(t, "cockpit")
	})

	change := func(sel, value string) chromedp.Action[chromedp.Void] {
		js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = %q; el.dispatchEvent(new Event('change', {bubbles: true})); return true })()`, sel, value)
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[bool](js)(ctx, tg)
			return chromedp.Void{}, err
		}
	}

	t.Run("bulk approve similar low-risk approvals", func(t *testing.T) {
		runD, runE := start("Parking"), start("Train to Porto")
		for _, r := range []string{runD, runE} {
			s.apiCall(t, tok, "POST", "/v1/tasks/"+taskOf(r)+"/complete", map[string]any{"action": "complete", "fields": map[string]any{"amount": 900}}, nil)
		}
		// The inbox shows both approvals once the engine asks for them.
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`document.querySelectorAll('[data-test=inbox-list] li[data-id^="apr_"]').length === 2`)(ctx, tg)
			return chromedp.Void{}, err
		})
		aprD := approvalOf(t, runD)
		aprE := approvalOf(t, runE)
		run(t, click(li(aprD)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=bulk-approve]`)))
		if got := text(t, `[data-test=bulk-approve]`); got != "Approve all 2 similar" {
			t.Errorf("bulk button = %q", got)
		}
		run(t, chromedp.Click(chromedp.CSS(`[data-test=bulk-approve]`)),
			chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.Click(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.WaitNotPresent(chromedp.CSS(li(aprD))), chromedp.WaitNotPresent(chromedp.CSS(li(aprE))))
		for _, id := range []string{aprD, aprE} {
			var a struct{ Status string }
			s.apiCall(t, tok, "GET", "/v1/approvals/"+id, nil, &a)
			if a.Status != "approved" {
				t.Errorf("approval %s = %+v, want approved", id, a)
			}
		}
	})

	t.Run("saved filters outlive a reload", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li`)),
			change(`select[aria-label="All kinds"]`, "task"),
			chromedp.Click(chromedp.CSS(`[data-test=save-filter]`)),
			chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=filter-name]`)),
			chromedp.SendKeys(chromedp.CSS(`dialog [data-test=filter-name]`), "Only tasks"),
			chromedp.Click(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=saved-filter]`)),
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=saved-filter]`)),
			chromedp.Click(chromedp.CSS(`[data-test=saved-filter]`)))
		// The filter is kept on the server, for the person, not in the
		// browser.
		var kept struct {
			Filters []struct {
				Name   string
				Filter map[string]any
			}
		}
		s.apiCall(t, tok, "GET", "/v1/me/inbox-filters", nil, &kept)
		if len(kept.Filters) != 1 || kept.Filters[0].Name != "Only tasks" || kept.Filters[0].Filter["kind"] != "task" {
			t.Errorf("filters on the server = %+v", kept)
		}
		var local int
		eval(t, `Object.keys(localStorage).filter((k) => k.startsWith('bas.console.filters')).length`, &local)
		if local != 0 {
			t.Errorf("%d filter lists kept in the browser", local)
		}
		var kinds []string
		eval(t, `[...document.querySelectorAll('[data-test=inbox-list] li[data-id]')].map((li) => li.dataset.id.slice(0, 4))`, &kinds)
		if len(kinds) == 0 {
			t.Fatal("the saved filter shows nothing")
		}
		for _, k := range kinds {
			if k != "tsk_" {
				t.Errorf("the filter for tasks shows %v", kinds)
				break
			}
		}
	})

	t.Run("start a process by hand and cancel the run", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/processes"),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=processes] a`)),
			chromedp.Click(chromedp.CSS(`[data-test=processes] a`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=step-chain]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=subject_label]`), "Conference fee"),
			chromedp.Click(chromedp.CSS(`form[data-test=start] button`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=waiting]`)),
			chromedp.Click(chromedp.CSS(`[data-test=cancel-run]`)),
			chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.Click(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=cancelled]`)))
		if got := text(t, `[data-test=run] h1`); got != "Conference fee" {
			t.Errorf("run title = %q", got)
		}
	})

	t.Run("the runs list filters by status", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/runs"), chromedp.WaitVisible(chromedp.CSS(`[data-test=runs] tbody tr`)),
			change(`select[aria-label=Status]`, "rejected"),
			chromedp.WaitNotPresent(chromedp.CSS(`[data-test=runs] a[href="/runs/`+runA+`"]`)))
		var links []string
		eval(t, `[...document.querySelectorAll('[data-test=runs] tbody a')].map((a) => a.getAttribute('href'))`, &links)
		if len(links) != 1 || links[0] != "/runs/"+runB {
			t.Errorf("rejected runs = %v, want only %s", links, runB)
		}
	})

	// until waits for a condition of the page (a list a live update
	// redraws is better waited for this way than by a node).
	until := func(js string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](js)(ctx, tg)
			return chromedp.Void{}, err
		}
	}
	// stopPolling stops the page's poll, so that what changes after it
	// came over the event stream.
	stopPolling := func(t *testing.T) {
		t.Helper()
		run(t, chromedp.WaitVisible(chromedp.CSS(`html[data-live=on]`)))
		var ok bool
		eval(t, `(clearInterval(S.timer), true)`, &ok)
	}

	t.Run("a decision made through the API appears in an open inbox", func(t *testing.T) {
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li`)))
		stopPolling(t)
		if got := text(t, `[data-test=live]`); got != "● live" {
			t.Errorf("live indicator = %q", got)
		}
		runF := start("Museum tickets")
		taskF := taskOf(runF)
		run(t, chromedp.WaitVisible(chromedp.CSS(li(taskF))))
		s.apiCall(t, tok, "POST", "/v1/tasks/"+taskF+"/complete", map[string]any{"action": "complete", "fields": map[string]any{"amount": 1500}}, nil)
		run(t, chromedp.WaitNotPresent(chromedp.CSS(li(taskF))))
		aprF := approvalOf(t, runF)
		run(t, chromedp.WaitVisible(chromedp.CSS(li(aprF))))
		s.apiCall(t, tok, "POST", "/v1/approvals/"+aprF+"/reject", map[string]any{"reason": "not now"}, nil)
		run(t, chromedp.WaitNotPresent(chromedp.CSS(li(aprF))))
		var reloaded bool
		eval(t, `performance.getEntriesByType('navigation').length !== 1`, &reloaded)
		if reloaded {
			t.Error("the page was reloaded")
		}
	})

	t.Run("a run page follows its run live", func(t *testing.T) {
		runG := start("Taxi to the office")
		run(t, chromedp.Navigate(s.srv.URL+"/runs/"+runG), chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=waiting]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-step=review][data-status=waiting_task]`)))
		stopPolling(t)
		s.apiCall(t, tok, "POST", "/v1/tasks/"+taskOf(runG)+"/complete", map[string]any{"action": "complete", "fields": map[string]any{"amount": 2200}}, nil)
		run(t, chromedp.WaitVisible(chromedp.CSS(`[data-step=review][data-status=completed]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-step=pay][data-status=waiting_approval]`)))
		// A process that follows an expense claim's end: the run page lists
		// the run its end starts, as it starts.
		s.apiCall(t, tok, "POST", "/v1/processes", map[string]any{"name": "File the receipt", "function": "finance",
			"trigger": map[string]any{"type": "event", "event": "process.run.completed", "filter": map[string]any{"process_id": proc.ID}},
			"steps":   []any{map[string]any{"key": "file", "type": "human_task", "config": map[string]any{"title": "File ${trigger.data.subject.label}"}}}}, nil)
		aprG := approvalOf(t, runG)
		s.apiCall(t, tok, "POST", "/v1/approvals/"+aprG+"/approve", map[string]any{}, nil)
		run(t, chromedp.WaitVisible(chromedp.CSS(`[data-test=run][data-status=completed]`)),
			until(`document.querySelectorAll('[data-test=runs] tbody a').length === 1`),
			chromedp.Click(chromedp.CSS(`[data-test=runs] tbody a`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=started-by] a[href="/runs/`+runG+`"]`)))
	})

	t.Run("claim, unclaim and reassign a task", func(t *testing.T) {
		var ann struct {
			UserID string `json:"user_id"`
		}
		s.apiCall(t, "", "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": "ten_demo", "email": "ann@example.com", "roles": []string{"member"}}, &ann)
		runH := start("Parking at the airport")
		taskH := taskOf(runH)
		assignee := func() string {
			var task struct{ Assignee *string }
			s.apiCall(t, tok, "GET", "/v1/tasks/"+taskH, nil, &task)
			if task.Assignee == nil {
				return ""
			}
			return *task.Assignee
		}
		pane := `[data-test=task][data-id="` + taskH + `"]`
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(li(taskH))),
			click(li(taskH)), chromedp.WaitVisible(chromedp.CSS(pane+` [data-test=claim]`)),
			chromedp.Focus(chromedp.CSS(`main`)), chromedp.KeyEvent("m"),
			chromedp.WaitVisible(chromedp.CSS(pane+` [data-test=unclaim]`)))
		if got := text(t, pane+` [data-test=task-assignee]`); got != "assigned to you" {
			t.Errorf("after the claim: %q", got)
		}
		if got := assignee(); got != "usr_demo" {
			t.Errorf("assignee after the claim = %q\n%s", got, s.taskTrail(t, tok, taskH))
		}
		// "Assigned to me" asks the API, which reads its assignee index.
		run(t, chromedp.Click(chromedp.CSS(`.filters label:nth-of-type(1) input`)),
			until(`document.querySelectorAll('[data-test=inbox-list] li[data-id]').length === 1`))
		var ids []string
		eval(t, `[...document.querySelectorAll('[data-test=inbox-list] li[data-id]')].map((li) => li.dataset.id)`, &ids)
		if diff := cmp.Diff([]string{taskH}, ids); diff != "" {
			t.Errorf("assigned to me (-want +got):\n%s", diff)
		}
		run(t, chromedp.Click(chromedp.CSS(`.filters label:nth-of-type(1) input`)),
			until(`document.querySelectorAll('[data-test=inbox-list] li[data-id]').length > 1`),
			click(li(taskH)), chromedp.WaitVisible(chromedp.CSS(pane+` [data-test=unclaim]`)),
			chromedp.Focus(chromedp.CSS(`main`)), chromedp.KeyEvent("u"),
			chromedp.WaitVisible(chromedp.CSS(pane+` [data-test=claim]`)))
		if got := assignee(); got != "" {
			t.Errorf("assignee after the unclaim = %q", got)
		}
		shot(t, "claim")
		run(t, chromedp.Focus(chromedp.CSS(`main`)), chromedp.KeyEvent("s"),
			chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=assignee]`)),
			chromedp.SetValue(chromedp.CSS(`dialog [data-test=assignee]`), ann.UserID),
			chromedp.Click(chromedp.CSS(`dialog [data-test=confirm]`)),
			chromedp.WaitVisible(chromedp.CSS(pane+` [data-test=task-assignee]`)))
		run(t, until(`document.querySelector('[data-test=task-assignee]').textContent === 'assigned to ann@example.com'`))
		if got := assignee(); got != ann.UserID {
			t.Errorf("assignee after the reassign = %q, want %s", got, ann.UserID)
		}
		var help string
		run(t, chromedp.KeyEvent("?"), chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=help]`)))
		help = text(t, `dialog [data-test=help]`)
		for _, want := range []string{"claim the task", "unclaim the task", "reassign the task"} {
			if !strings.Contains(help, want) {
				t.Errorf("the key list lacks %q", want)
			}
		}
		run(t, chromedp.KeyEvent("\x1b"), chromedp.WaitNotVisible(chromedp.CSS(`dialog [data-test=help]`)))
		// The admin may take it back from Ann (processes.manage).
		run(t, chromedp.WaitVisible(chromedp.CSS(pane+` [data-test=unclaim]`)))
	})

	t.Run("every list loads more beyond its first page", func(t *testing.T) {
		var ok bool
		run(t, chromedp.Navigate(s.srv.URL+"/runs"), chromedp.WaitVisible(chromedp.CSS(`[data-test=runs] tbody tr`)))
		eval(t, `(localStorage.setItem('bas.console.page_size', '2'), true)`, &ok)
		defer eval(t, `(localStorage.removeItem('bas.console.page_size'), true)`, &ok)
		var total []struct{ ID string }
		s.apiCall(t, tok, "GET", "/v1/process-runs?limit=200", nil, &total)
		rows := func() int {
			var n int
			eval(t, `document.querySelectorAll('[data-test=runs] tbody tr').length`, &n)
			return n
		}
		run(t, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-test=runs] tbody tr`)))
		if got := rows(); got != 2 {
			t.Fatalf("first page: %d rows, want 2", got)
		}
		for want := 4; want < len(total)+2; want += 2 {
			run(t, chromedp.Click(chromedp.CSS(`[data-test=load-more]`)), func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
				_, err := chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll('[data-test=runs] tbody tr').length === %d`, min(want, len(total))))(ctx, tg)
				return chromedp.Void{}, err
			})
		}
		var hidden bool
		eval(t, `document.querySelector('[data-test=load-more]').offsetParent === null`, &hidden)
		if !hidden || rows() != len(total) {
			t.Errorf("after every page: %d rows of %d, button hidden %v", rows(), len(total), hidden)
		}
		// The inbox: two of each source first, then more.
		start("Bus ticket")
		start("Ferry ticket")
		var open []struct{ ID string }
		s.apiCall(t, tok, "GET", "/v1/tasks?status=open", nil, &open)
		if len(open) < 3 {
			t.Fatalf("only %d open tasks", len(open))
		}
		tasks := func() int {
			var n int
			eval(t, `document.querySelectorAll('[data-test=inbox-list] li[data-id^="tsk_"]').length`, &n)
			return n
		}
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li[data-id]`)))
		if got := tasks(); got != 2 {
			t.Errorf("the inbox's first page has %d tasks, want 2", got)
		}
		run(t, chromedp.Click(chromedp.CSS(`[data-test=load-more]`)), func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll('[data-test=inbox-list] li[data-id^="tsk_"]').length === %d`, min(4, len(open))))(ctx, tg)
			return chromedp.Void{}, err
		})
	})

	t.Run("the CRM, invoice and board pages show their records", func(t *testing.T) {
		var co, deal, cus, inv, board, item struct{ ID string }
		s.apiCall(t, tok, "POST", "/v1/crm/companies", map[string]any{"name": "Globex Corp"}, &co)
		s.apiCall(t, tok, "POST", "/v1/crm/deals", map[string]any{"title": markup, "company_id": co.ID, "amount_cents": 250000}, &deal)
		s.apiCall(t, tok, "POST", "/v1/invoicing/customers", map[string]any{"name": "Initech LLC", "email": "ap@initech.example"}, &cus)
		s.apiCall(t, tok, "POST", "/v1/invoicing/invoices", map[string]any{"customer_id": cus.ID,
			"lines": []any{map[string]any{"description": "Consulting day", "quantity": 2, "unit_amount_cents": 60000}}}, &inv)
		s.apiCall(t, tok, "POST", "/v1/invoicing/invoices/"+inv.ID+"/finalize", nil, nil)
		s.apiCall(t, tok, "POST", "/v1/boards", map[string]any{"name": "Launch plan"}, &board)
		s.apiCall(t, tok, "POST", "/v1/boards/"+board.ID+"/items", map[string]any{"title": "Book the venue"}, &item)

		// The CRM board: the deal in the first stage, its title as text,
		// then moved to the next stage by its select.
		dealSel := `[data-test=deal][data-id="` + deal.ID + `"]`
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), chromedp.WaitVisible(chromedp.CSS(`nav a[href="/crm"]`)),
			chromedp.Click(chromedp.CSS(`nav a[href="/crm"]`)), chromedp.WaitVisible(chromedp.CSS(dealSel)))
		if got := text(t, dealSel+` .t`); got != markup {
			t.Errorf("deal title = %q, want the markup as text", got)
		}
		if got := text(t, dealSel+` [data-test=deal-company]`); got != "Globex Corp" {
			t.Errorf("deal company = %q", got)
		}
		var stages []string
		eval(t, `[...document.querySelectorAll('[data-test=stage]')].map((s) => s.dataset.id)`, &stages)
		if len(stages) < 2 {
			t.Fatalf("stages = %v", stages)
		}
		if got := text(t, `[data-test=stage][data-id="`+stages[0]+`"] h3`); !strings.HasPrefix(got, "Lead 1") {
			t.Errorf("first stage heading = %q, want Lead with 1 deal", got)
		}
		run(t, change(dealSel+` select`, stages[1]),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=stage][data-id="`+stages[1]+`"] `+dealSel)))
		var moved struct {
			StageID string `json:"stage_id"`
		}
		s.apiCall(t, tok, "GET", "/v1/crm/deals/"+deal.ID, nil, &moved)
		if moved.StageID != stages[1] {
			t.Errorf("deal stage = %s, want %s", moved.StageID, stages[1])
		}
		shot(t, "crm")

		// Invoices: the list, then the invoice with its lines, totals,
		// events and its PDF through the proxy.
		run(t, chromedp.Click(chromedp.CSS(`nav a[href="/invoices"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-test=invoices] tr[data-id="`+inv.ID+`"]`)))
		if got := text(t, `[data-test=invoices] tr[data-id="`+inv.ID+`"]`); !strings.Contains(got, "INV-000001") || !strings.Contains(got, "Initech LLC") || !strings.Contains(got, "1200.00") {
			t.Errorf("invoice row = %q", got)
		}
		run(t, chromedp.Click(chromedp.CSS(`[data-test=invoices] tr[data-id="`+inv.ID+`"] a`)), chromedp.WaitVisible(chromedp.CSS(`[data-test=invoice-lines]`)))
		if got := text(t, `[data-test=invoice-lines] tbody`); !strings.Contains(got, "Consulting day") {
			t.Errorf("invoice lines = %q", got)
		}
		if got := text(t, `[data-test=invoice-due]`); got != "USD 1200.00" {
			t.Errorf("amount due = %q", got)
		}
		if got := text(t, `[data-test=invoice-events]`); !strings.Contains(got, "finalized") {
			t.Errorf("invoice events = %q", got)
		}
		var pdf struct {
			Status int
			Type   string
		}
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](`fetch(document.querySelector('[data-test=invoice-pdf]').href).then((r) => ({status: r.status, type: r.headers.get('Content-Type')}))`, chromedp.EvalAwaitPromise))
		if err == nil {
			err = json.Unmarshal(raw, &pdf)
		}
		if err != nil {
			t.Fatalf("fetch the PDF: %v", err)
		}
		if pdf.Status != 200 || pdf.Type != "application/pdf" {
			t.Errorf("PDF link = %+v", pdf)
		}

		// Boards: the list, then the board's columns with the item.
		run(t, chromedp.Click(chromedp.CSS(`nav a[href="/boards"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-test=boards] a[href="/boards/`+board.ID+`"]`)),
			chromedp.Click(chromedp.CSS(`[data-test=boards] a[href="/boards/`+board.ID+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=item][data-id="`+item.ID+`"]`)))
		var cols []string
		eval(t, `[...document.querySelectorAll('[data-test=status] h3')].map((h) => h.textContent)`, &cols)
		if diff := cmp.Diff([]string{"To do 1 unstarted", "In progress 0 started", "Done 0 completed"}, cols); diff != "" {
			t.Errorf("board columns (-want +got):\n%s", diff)
		}
		if got := text(t, `[data-test=item][data-id="`+item.ID+`"] .t`); got != "Book the venue" {
			t.Errorf("item title = %q", got)
		}
		for _, path := range []string{"/crm", "/invoices/" + inv.ID, "/boards/" + board.ID} {
			run(t, chromedp.Navigate(s.srv.URL+path), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
			if got := text(t, `main`); strings.Contains(got, "null") || strings.Contains(got, "undefined") {
				t.Errorf("%s shows an absent value as text:\n%s", path, got)
			}
		}
		var xss bool
		eval(t, `window.__xss === 1`, &xss)
		if xss {
			t.Error("a deal title's markup ran")
		}
		shot(t, "board")
	})

	t.Run("readable on a phone", func(t *testing.T) {
		for _, path := range []string{"/inbox", "/runs/" + runA, "/documents/" + docID, "/cockpit", "/crm", "/invoices", "/boards"} {
			var fits bool
			run(t, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.srv.URL+path), chromedp.WaitVisible(chromedp.CSS(`main h1, main h2`)))
			eval(t, `document.documentElement.scrollWidth <= window.innerWidth`, &fits)
			if !fits {
				var wide []string
				eval(t, `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5).map((e) => e.tagName + '.' + e.className)`, &wide)
				t.Errorf("%s is wider than a phone: %v", path, wide)
			}
		}
		run(t, chromedp.ResetViewport())
	})

	t.Run("an approval shows the evidence behind it", func(t *testing.T) {
		var p struct{ ID string }
		s.apiCall(t, tok, "POST", "/v1/processes", map[string]any{"name": "Pay supplier", "function": "finance",
			"trigger": map[string]any{"type": "event", "event": "payables.invoice.filed"},
			"steps": []any{map[string]any{"key": "pay", "type": "execute", "capability": "email.send",
				"config": map[string]any{"risk": "high", "args": map[string]any{"to": "bank@example.com",
					"subject": "Pay ${trigger.data.document_id}", "body": "Pay it.", "document_id": "${trigger.data.document_id}"}}}}}, &p)
		var out struct {
			Runs []struct{ ID string }
		}
		s.apiCall(t, tok, "POST", "/v1/events", map[string]any{"name": "payables.invoice.filed", "data": map[string]any{"document_id": docID}}, &out)
		if len(out.Runs) != 1 {
			t.Fatalf("the event started %d runs", len(out.Runs))
		}
		run(t, chromedp.Navigate(s.srv.URL+"/inbox"), func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`document.querySelectorAll('[data-test=inbox-list] li[data-id^="apr_"]').length > 0`)(ctx, tg)
			return chromedp.Void{}, err
		})
		apr := approvalOf(t, out.Runs[0].ID)
		run(t, click(li(apr)), chromedp.WaitVisible(chromedp.CSS(`[data-test=approval][data-id="`+apr+`"] [data-test=evidence]`)))
		ev := text(t, `[data-test=evidence]`)
		for _, want := range []string{"acme-invoice", "Acme Tools Ltd", "p. 1", "INV-7781"} {
			if !strings.Contains(ev, want) {
				t.Errorf("evidence lacks %q:\n%s", want, ev)
			}
		}
	})

	t.Run("keys move, open help and act", func(t *testing.T) {
		first := ""
		run(t, click(`[data-test=inbox-list] li:first-child`))
		eval(t, `document.querySelector('[data-test=inbox-list] li.sel').dataset.id`, &first)
		var second, back string
		run(t, chromedp.Focus(chromedp.CSS(`main`)), chromedp.KeyEvent("j"))
		eval(t, `document.querySelector('[data-test=inbox-list] li.sel').dataset.id`, &second)
		run(t, chromedp.KeyEvent("k"))
		eval(t, `document.querySelector('[data-test=inbox-list] li.sel').dataset.id`, &back)
		if second == first || back != first {
			t.Errorf("j/k: %s -> %s -> %s", first, second, back)
		}
		run(t, chromedp.KeyEvent("?"), chromedp.WaitVisible(chromedp.CSS(`dialog [data-test=help]`)),
			chromedp.KeyEvent("\x1b"), chromedp.WaitNotVisible(chromedp.CSS(`dialog [data-test=help]`)),
			chromedp.KeyEvent("g"), chromedp.KeyEvent("c"), chromedp.WaitVisible(chromedp.CSS(`[data-test=chart]`)))
	})

	t.Run("a viewer sees no decision it may not take", func(t *testing.T) {
		taskC := taskOf(runC)
		s.apiCall(t, tok, "POST", "/v1/tasks/"+taskC+"/complete", map[string]any{"action": "complete", "fields": map[string]any{"amount": 3100}}, nil)
		var key struct{ Secret string }
		s.apiCall(t, tok, "POST", "/v1/api-keys", map[string]any{"name": "viewer", "roles": []string{"viewer"}}, &key)
		aprC := ""
		run(t, chromedp.Click(chromedp.CSS(`[data-test=signout]`)),
			chromedp.WaitVisible(chromedp.CSS(`input[name=key]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=key]`), key.Secret),
			chromedp.Click(chromedp.CSS(`form[data-test=key-login] button`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-list] li[data-id^="apr_"]`)))
		aprC = approvalOf(t, runC)
		run(t, click(li(aprC)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=no-decide]`)))
		var buttons int
		eval(t, `document.querySelectorAll('[data-test=approve],[data-test=reject],[data-test=bulk-approve]').length`, &buttons)
		if buttons != 0 {
			t.Errorf("a viewer is offered %d decision buttons", buttons)
		}
		// Nor claim, unclaim or reassign (no tasks.work).
		run(t, click(`[data-test=inbox-list] li[data-id^="tsk_"]`),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=task]`)))
		eval(t, `document.querySelectorAll('[data-test=claim],[data-test=unclaim],[data-test=reassign]').length`, &buttons)
		if buttons != 0 {
			t.Errorf("a viewer is offered %d assignment buttons", buttons)
		}
		// A viewer reads the CRM board but is offered no stage move.
		run(t, chromedp.Click(chromedp.CSS(`nav a[href="/crm"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-test=deal]`)))
		var selects int
		eval(t, `document.querySelectorAll('[data-test=deal-stage]').length`, &selects)
		if selects != 0 {
			t.Errorf("a viewer is offered %d stage selects", selects)
		}
	})

	t.Run("a refusal from the API is shown as such", func(t *testing.T) {
		var key struct{ Secret string }
		s.apiCall(t, tok, "POST", "/v1/api-keys", map[string]any{"name": "docs only", "roles": []string{"approver"}, "apps": []string{"docs"}}, &key)
		run(t, chromedp.Click(chromedp.CSS(`[data-test=signout]`)),
			chromedp.WaitVisible(chromedp.CSS(`input[name=key]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=key]`), key.Secret),
			chromedp.Click(chromedp.CSS(`form[data-test=key-login] button`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-test=inbox-note]`)))
		if got := text(t, `[data-test=inbox-note]`); !strings.HasPrefix(got, "Not allowed: key not allowed for app") {
			t.Errorf("inbox note = %q", got)
		}
		run(t, chromedp.Navigate(s.srv.URL+"/runs/"+runA), chromedp.WaitVisible(chromedp.CSS(`[data-test=page-error]`)))
		if got := text(t, `main h1`); got != "Not allowed" {
			t.Errorf("a refused run page is titled %q", got)
		}
		// A key limited to other apps: the board page is the API's refusal.
		run(t, chromedp.Navigate(s.srv.URL+"/crm"), chromedp.WaitVisible(chromedp.CSS(`[data-test=page-error]`)))
		if got := text(t, `main h1`); got != "Not allowed" {
			t.Errorf("a refused CRM page is titled %q", got)
		}
	})

}

// nodeGone reports whether a browser action failed because the node it
// found went away before it acted (the page re-rendered it).
func nodeGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "No node with given id") || strings.Contains(msg, "Could not find node with given id") ||
		strings.Contains(msg, "Node is detached")
}
