package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestPausedRunShowsItsPause checks what a paused run shows of its pause
// (API.md: the status it resumes to, when, whether by its process, and
// slot_wait), on the run and in the list, and that a resumed run shows
// none; the events it holds for its resume stay inside.
func TestPausedRunShowsItsPause(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_pshow"}`).Token
	proc := s.createProc(t, admin, `{"name": "Look", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look"}}]}`)
	type shown struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Paused map[string]any `json:"paused"`
	}
	pausedAt := func(t *testing.T, v shown) string {
		t.Helper()
		at, _ := v.Paused["at"].(string)
		if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
			t.Errorf("paused.at %q: %v", v.Paused["at"], err)
		}
		return at
	}

	r := s.startRun(t, admin, proc.ID, "C-1")
	var v shown
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/pause", admin, nil).want(t, http.StatusOK).decode(t, &v)
	at := pausedAt(t, v)
	want := shown{ID: r.ID, Status: "paused", Paused: map[string]any{"from": "waiting", "at": at}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("pause answered (-want +got):\n%s", diff)
	}
	s.do(t, "GET", "/v1/process-runs/"+r.ID, admin, nil).want(t, http.StatusOK).decode(t, &v)
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("the paused run (-want +got):\n%s", diff)
	}
	var list []shown
	s.do(t, "GET", "/v1/process-runs?status=paused", admin, nil).want(t, http.StatusOK).decode(t, &list)
	if diff := cmp.Diff([]shown{want}, list); diff != "" {
		t.Errorf("paused runs (-want +got):\n%s", diff)
	}
	var resumed shown
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/resume", admin, nil).want(t, http.StatusOK).decode(t, &resumed)
	if diff := cmp.Diff(shown{ID: r.ID, Status: "waiting"}, resumed); diff != "" {
		t.Errorf("resume answered (-want +got):\n%s", diff)
	}

	// A run holding an event that came while it was paused shows the
	// same, not the event (POST /v1/events answers once the run holds it).
	waiter := s.createProc(t, admin, `{"name": "Wait", "trigger": {"type": "manual"},
	  "steps": [{"key": "ping", "type": "wait", "config": {"event": "custom.ping"}}]}`)
	w := s.startRun(t, admin, waiter.ID, "C-3")
	s.awaitRun(t, admin, w.ID, "waiting for its event", runStatusIs("waiting"))
	v = shown{}
	s.do(t, "POST", "/v1/process-runs/"+w.ID+"/pause", admin, nil).want(t, http.StatusOK).decode(t, &v)
	s.do(t, "POST", "/v1/events", admin, `{"name": "custom.ping", "data": {"n": 1}}`).want(t, http.StatusAccepted)
	want = shown{ID: w.ID, Status: "paused", Paused: map[string]any{"from": "waiting", "at": pausedAt(t, v)}}
	v = shown{}
	s.do(t, "GET", "/v1/process-runs/"+w.ID, admin, nil).want(t, http.StatusOK).decode(t, &v)
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("a paused run holding an event (-want +got):\n%s", diff)
	}
	s.do(t, "POST", "/v1/process-runs/"+w.ID+"/resume", admin, nil).want(t, http.StatusOK)
	s.awaitRun(t, admin, w.ID, "completed by the held event", runStatusIs("completed"))

	// A run started while its process is paused shows by_process.
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/pause", admin, nil).want(t, http.StatusOK)
	q := s.startRun(t, admin, proc.ID, "C-2")
	v = shown{}
	s.do(t, "GET", "/v1/process-runs/"+q.ID, admin, nil).want(t, http.StatusOK).decode(t, &v)
	want = shown{ID: q.ID, Status: "paused", Paused: map[string]any{"from": "running", "at": pausedAt(t, v), "by_process": true}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("a run of a paused process (-want +got):\n%s", diff)
	}
}
