package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestStartedRuns lists the runs a run's events started: two processes
// triggered by the end of a first one, paged, and none of another
// tenant's.
func TestStartedRuns(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_kids"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_kids_other"}`).Token
	first := s.createProc(t, admin, `{"name": "First", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Do it"}}]}`)
	for _, name := range []string{"Then B", "Then C"} {
		s.createProc(t, admin, `{"name": "`+name+`", "trigger": {"type": "event", "event": "process.run.completed",
		  "filter": {"process_id": "`+first.ID+`"}}, "steps": [{"key": "t", "type": "human_task", "config": {"title": "Next"}}]}`)
	}
	started := s.openStream(t, admin, "?names=process.run.started", "")
	r := s.startRun(t, admin, first.ID, "K-1")
	lone := s.startRun(t, admin, first.ID, "K-2") // never completes: starts nothing
	s.do(t, "POST", "/v1/tasks/"+*r.step(t, "t").TaskID+"/complete", admin, `{"action": "complete"}`).want(t, http.StatusOK)
	var kids []string
	for len(kids) < 2 {
		f, ok := started.next(t)
		if !ok {
			t.Fatal("the stream ended")
		}
		data := f.Data["data"].(map[string]any)
		if id := data["run_id"].(string); id != r.ID && id != lone.ID {
			kids = append(kids, id)
		}
	}
	slices.Sort(kids) // ids sort by creation
	slices.Reverse(kids)

	if got := s.listIDs(t, admin, "/v1/process-runs/"+r.ID+"/runs"); !cmp.Equal(kids, got) {
		t.Errorf("started runs (-want +got):\n%s", cmp.Diff(kids, got))
	}
	if diff := cmp.Diff([][]string{{kids[0]}, {kids[1]}}, s.pages(t, admin, "/v1/process-runs/"+r.ID+"/runs?limit=1")); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	var cause struct {
		Trigger struct {
			Cause struct {
				RunID string `json:"run_id"`
			} `json:"cause"`
		} `json:"trigger"`
	}
	s.do(t, "GET", "/v1/process-runs/"+kids[0], admin, nil).want(t, http.StatusOK).decode(t, &cause)
	if cause.Trigger.Cause.RunID != r.ID {
		t.Errorf("the started run's cause = %q, want %s", cause.Trigger.Cause.RunID, r.ID)
	}
	if got := s.listIDs(t, admin, "/v1/process-runs/"+lone.ID+"/runs"); len(got) != 0 {
		t.Errorf("a run that started none lists %v", got)
	}
	s.do(t, "GET", "/v1/process-runs/"+r.ID+"/runs", other, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/process-runs/run_01JNKX7Z0000000000000000/runs", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/process-runs/"+r.ID+"/runs?limit=201", admin, nil).want(t, http.StatusUnprocessableEntity)
}
