package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestRunListQueryBoundsAsBulkFilter holds the run list's query parameters
// to the bounds of their bulk filter counterparts: the same value is
// refused by both, with the same message and type at query.x and
// body.filter.x.
func TestRunListQueryBoundsAsBulkFilter(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_bounds"}`).Token
	long := strings.Repeat("p", 101)
	for _, c := range []struct {
		field string
		value any
	}{
		{"process_id", long},
		{"status", "bogus"},
		{"q", strings.Repeat("a ", 100) + "b"},
		{"q", "!!!"},
	} {
		r := s.do(t, "POST", "/v1/process-runs/bulk", admin,
			map[string]any{"filter": map[string]any{c.field: c.value, "overdue": true}, "action": "pause"}).
			want(t, http.StatusUnprocessableEntity)
		var body struct {
			Detail []violationOut `json:"detail"`
		}
		r.decode(t, &body)
		bulk := body.Detail
		r = s.do(t, "GET", "/v1/process-runs?"+url.Values{c.field: {c.value.(string)}}.Encode(), admin, nil).
			want(t, http.StatusUnprocessableEntity)
		body.Detail = nil
		r.decode(t, &body)
		list := body.Detail
		if len(bulk) != 1 || len(list) != 1 {
			t.Errorf("%s %.12q: bulk violations %v, list violations %v, want one each", c.field, c.value, bulk, list)
			continue
		}
		if want := []any{"body", "filter", c.field}; !cmp.Equal(bulk[0].Loc, want) {
			t.Errorf("%s %.12q: bulk loc %v, want %v", c.field, c.value, bulk[0].Loc, want)
		}
		if want := []any{"query", c.field}; !cmp.Equal(list[0].Loc, want) {
			t.Errorf("%s %.12q: list loc %v, want %v", c.field, c.value, list[0].Loc, want)
		}
		if bulk[0].Msg != list[0].Msg || bulk[0].Type != list[0].Type {
			t.Errorf("%s %.12q: bulk says %q (%s), list says %q (%s)", c.field, c.value, bulk[0].Msg, bulk[0].Type, list[0].Msg, list[0].Type)
		}
	}
	// At the bound, both take it.
	at := strings.Repeat("p", 100)
	s.do(t, "GET", "/v1/process-runs?process_id="+at, admin, nil).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/process-runs/bulk", admin,
		map[string]any{"filter": map[string]any{"process_id": at}, "action": "pause"}).want(t, http.StatusAccepted)
}

// TestPauseArchivedProcess refuses to pause an archived process (409, as
// every other change of it): it starts no run a pause could hold. Resuming
// one that was paused before it was archived still resumes the runs the
// pause paused, which finish on their version as archiving promises.
func TestPauseArchivedProcess(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_archpause"}`).Token
	body := `{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}}]}`
	type pauseOut struct {
		Paused bool `json:"paused"`
		Job    *struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	paused := func(id string) bool {
		t.Helper()
		var p pauseOut
		s.do(t, "GET", "/v1/processes/"+id+"/pause", admin, nil).want(t, http.StatusOK).decode(t, &p)
		return p.Paused
	}

	idle := s.createProc(t, admin, body).ID
	s.do(t, "DELETE", "/v1/processes/"+idle, admin, nil).want(t, http.StatusNoContent)
	r := s.do(t, "POST", "/v1/processes/"+idle+"/pause", admin, nil).want(t, http.StatusConflict)
	var detail struct {
		Detail string `json:"detail"`
	}
	r.decode(t, &detail)
	if detail.Detail != "process is archived" {
		t.Errorf("pausing an archived process: detail %q, want %q", detail.Detail, "process is archived")
	}
	if paused(idle) {
		t.Errorf("archived process %s is paused after a refused pause", idle)
	}
	var p pauseOut
	s.do(t, "POST", "/v1/processes/"+idle+"/resume", admin, nil).want(t, http.StatusOK).decode(t, &p)
	if p.Paused || p.Job != nil {
		t.Errorf("resuming an archived process not paused: %+v, want not paused and no job", p)
	}

	// Paused, then archived: the resume lets its queued run go on.
	held := s.createProc(t, admin, body).ID
	s.do(t, "POST", "/v1/processes/"+held+"/pause", admin, nil).want(t, http.StatusOK)
	run := s.startRun(t, admin, held, "INV-1")
	s.awaitRun(t, admin, run.ID, "paused", runStatusIs("paused"))
	s.do(t, "DELETE", "/v1/processes/"+held, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "POST", "/v1/processes/"+held+"/resume", admin, nil).want(t, http.StatusOK).decode(t, &p)
	if p.Paused || p.Job == nil {
		t.Errorf("resuming a paused process after archiving: %+v, want not paused with a job", p)
	}
	s.awaitRun(t, admin, run.ID, "waiting on its task", runStatusIs("waiting"))
	if paused(held) {
		t.Errorf("process %s still paused after its resume", held)
	}
}

// TestNullOptionalObjectIsAbsent takes null for an optional object of a
// body as the key left out: a task completed with fields null has no
// fields, an approval approved with args null keeps the proposed ones, an
// event emitted with data null has none, a bulk filter's search null
// selects by the rest of the filter.
func TestNullOptionalObjectIsAbsent(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_nulls"}`).Token
	review := s.createProc(t, admin, `{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}}]}`)
	r := s.startRun(t, admin, review.ID, "INV-1")
	r = s.awaitRun(t, admin, r.ID, "waiting on its task", runStatusIs("waiting"))
	absent := s.startRun(t, admin, review.ID, "INV-0")
	absent = s.awaitRun(t, admin, absent.ID, "waiting on its task", runStatusIs("waiting"))
	s.do(t, "POST", "/v1/tasks/"+*absent.step(t, "look").TaskID+"/complete", admin, `{"action": "accept"}`).
		want(t, http.StatusOK)
	absent = s.awaitRun(t, admin, absent.ID, "completed", runStatusIs("completed"))
	s.do(t, "POST", "/v1/tasks/"+*r.step(t, "look").TaskID+"/complete", admin, `{"action": "accept", "fields": null}`).
		want(t, http.StatusOK)
	r = s.awaitRun(t, admin, r.ID, "completed", runStatusIs("completed"))
	if diff := cmp.Diff(withoutKey(absent.step(t, "look").Output, "completed_by"), withoutKey(r.step(t, "look").Output, "completed_by")); diff != "" {
		t.Errorf("look output after fields null (-without fields +null):\n%s", diff)
	}

	send := s.createProc(t, admin, `{"name": "Send", "trigger": {"type": "manual"},
	  "steps": [{"key": "send", "type": "execute", "capability": "email.send",
	    "config": {"args": {"to": "x@example.com", "subject": "s", "body": "b"}}, "controls": {"require_approval": true}}]}`)
	r = s.startRun(t, admin, send.ID, "INV-2")
	r = s.awaitRun(t, admin, r.ID, "waiting for its approval", runStatusIs("waiting"))
	var decided struct {
		Approval struct {
			Status string         `json:"status"`
			Args   map[string]any `json:"args"`
		} `json:"approval"`
	}
	s.do(t, "POST", "/v1/approvals/"+*r.step(t, "send").ApprovalID+"/approve", admin, `{"args": null}`).
		want(t, http.StatusOK).decode(t, &decided)
	if want := map[string]any{"to": "x@example.com", "subject": "s", "body": "b"}; decided.Approval.Status != "approved" ||
		!cmp.Equal(decided.Approval.Args, want) {
		t.Errorf("approved with args null: %+v, want approved with args %v", decided.Approval, want)
	}

	s.do(t, "POST", "/v1/events", admin, `{"name": "custom.nothing", "data": null}`).want(t, http.StatusAccepted)
	s.do(t, "POST", "/v1/process-runs/bulk", admin, `{"filter": {"status": "paused", "search": null}, "action": "resume"}`).
		want(t, http.StatusAccepted)

	// A value of another type is still refused.
	bad := s.do(t, "POST", "/v1/events", admin, `{"name": "custom.nothing", "data": []}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.data:type_error"}, violationsOf(t, bad)); diff != "" {
		t.Errorf("data []: violations (-want +got):\n%s", diff)
	}
}

// TestProcessReadsOnlyItsSteps refuses, at create and at update, a step
// config whose reference reads a step the process does not have, or one
// that does not run before it (a run's data holds only the steps completed
// so far, so the step could only fail), and a search field whose path
// names a step the process does not have (it would never have a value).
// A search field may read a later step; nothing refused is stored.
func TestProcessReadsOnlyItsSteps(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_refs"}`).Token
	body := func(title, search string) string {
		return `{"name": "Review", "trigger": {"type": "manual"}, "search": ` + search + `,
		  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}},
		            {"key": "tell", "type": "human_task", "config": {"title": "` + title + `"}}]}`
	}
	for _, c := range []struct {
		title, search string
		want          []string
	}{
		{"${steps.nope.outcome}", `{}`, []string{"body.steps.1.config.title:value_error"}},
		{"Seen: ${steps.look.outcome}, ${steps.tell.outcome}", `{}`, []string{"body.steps.1.config.title:value_error"}},
		{"${steps.look.outcome}", `{"who": "steps.nope.x", "what": "subject.label"}`, []string{"body.search.who:value_error"}},
	} {
		r := s.do(t, "POST", "/v1/processes", admin, body(c.title, c.search)).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(c.want, violationsOf(t, r)); diff != "" {
			t.Errorf("title %s, search %s: violations (-want +got):\n%s", c.title, c.search, diff)
		}
	}
	// A step placed after the one it reads is fine, and so is a search
	// field reading the last step.
	r := s.do(t, "POST", "/v1/processes", admin, `{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}},
	            {"key": "tell", "type": "human_task", "config": {"title": "${steps.look.outcome}"}}],
	  "search": {"last": "steps.tell.outcome"}}`).want(t, http.StatusCreated)
	var proc processOut
	r.decode(t, &proc)

	for _, c := range []struct {
		patch string
		want  []string
	}{
		// Dropping the step a declared search field reads.
		{`{"steps": [{"key": "look", "type": "human_task", "config": {"title": "x"}}]}`, []string{"body.search.last:value_error"}},
		{`{"steps": [{"key": "look", "type": "human_task", "config": {"title": "${steps.look.outcome}"}},
		    {"key": "tell", "type": "human_task", "config": {"title": "x"}}]}`,
			[]string{"body.steps.0.config.title:value_error"}},
	} {
		r := s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, c.patch).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(c.want, violationsOf(t, r)); diff != "" {
			t.Errorf("patch %s: violations (-want +got):\n%s", c.patch, diff)
		}
	}
	var got struct {
		Version int `json:"version"`
	}
	s.do(t, "GET", "/v1/processes/"+proc.ID, admin, nil).want(t, http.StatusOK).decode(t, &got)
	if got.Version != 1 {
		t.Errorf("process at version %d after refused patches, want 1", got.Version)
	}
	s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, `{"steps": [{"key": "first", "type": "human_task", "config": {"title": "x"}},
	  {"key": "look", "type": "human_task", "config": {"title": "${steps.first.outcome}"}},
	  {"key": "tell", "type": "human_task", "config": {"title": "${steps.look.outcome}"}}]}`).want(t, http.StatusOK)
}

// TestPathWithEmptyOrDotSegment answers a path with an empty segment
// (POST /v1/processes//start, a trailing slash) or a "." or ".." segment
// with api.md's 404 JSON, authenticated or not, instead of matching an
// empty id or leaving it to a redirect; nothing is started.
func TestPathWithEmptyOrDotSegment(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_paths"}`).Token
	proc := s.createProc(t, admin, `{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x"}}]}`)
	start := `{"subject": {"type": "invoice", "label": "INV-1"}}`
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/processes//start"},
		{"POST", "/v1/processes/" + proc.ID + "//start"},
		{"POST", "/v1/processes/" + proc.ID + "/start/"},
		{"POST", "/v1/processes/" + proc.ID + "/./start"},
		{"POST", "/v1/processes/x/../" + proc.ID + "/start"},
		{"GET", "/v1/processes/"},
		{"GET", "/v1//processes"},
	} {
		for _, token := range []string{"", admin} {
			r := s.do(t, c.method, c.path, token, start).want(t, http.StatusNotFound)
			var body struct {
				Detail string `json:"detail"`
			}
			r.decode(t, &body)
			if body.Detail != "no such endpoint" || r.Header.Get("Location") != "" {
				t.Errorf("%s %s: detail %q, Location %q; want no such endpoint, no Location", c.method, c.path, body.Detail, r.Header.Get("Location"))
			}
		}
	}
	if got := s.listIDs(t, admin, "/v1/process-runs"); len(got) != 0 {
		t.Errorf("runs %v started through paths that name no endpoint", got)
	}
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", admin, start).want(t, http.StatusCreated)
}
