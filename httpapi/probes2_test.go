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
