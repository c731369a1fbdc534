package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestWhatIfRoute replays a new version of a process over a run a person
// decided: 202 with the job, whose result is the agreement report; bad
// bounds are 422s, and another tenant's process is a 404.
func TestWhatIfRoute(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_whatif"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_whatif_other"}`).Token
	viewer := s.newKey(t, admin, `{"name": "reader", "roles": ["viewer"]}`).Secret
	proc := s.createProc(t, admin, `{"name": "Review", "function": "operations", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at ${subject.label}", "actions": ["accept"]}}]}`)
	r := s.startRun(t, admin, proc.ID, "INV-1")
	s.do(t, "POST", "/v1/tasks/"+*r.step(t, "look").TaskID+"/complete", admin, `{"action": "accept"}`).want(t, http.StatusOK)
	s.awaitRun(t, admin, r.ID, "completed", runStatusIs("completed"))

	path := "/v1/processes/" + proc.ID + "/what-if"
	for _, body := range []string{`{"limit": 0}`, `{"limit": 1001}`, `{"version": 0}`, `{"version": 2}`, `{"extra": 1}`, `{"since": "yesterday"}`} {
		s.do(t, "POST", path, admin, body).want(t, http.StatusUnprocessableEntity)
	}
	s.do(t, "POST", path, viewer, `{}`).want(t, http.StatusForbidden)
	s.do(t, "POST", path, other, `{}`).want(t, http.StatusNotFound)
	s.do(t, "POST", "/v1/processes/prc_01JNKX7Z0000000000000000/what-if", admin, `{}`).want(t, http.StatusNotFound)

	var jo struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	s.do(t, "POST", path, admin, `{"limit": 1000, "version": 1, "since": "2020-01-01T00:00:00Z"}`).want(t, http.StatusAccepted).decode(t, &jo)
	s.do(t, "GET", "/v1/jobs/"+jo.Job.ID, other, nil).want(t, http.StatusNotFound)
	type report struct {
		Runs, Cases, Compared, Agreed, Deferred int
		AgreementRate                           *float64 `json:"agreement_rate"`
	}
	var job struct {
		Type   string  `json:"type"`
		Status string  `json:"status"`
		Result *report `json:"result"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for job.Status != "completed" && ctx.Err() == nil {
		s.do(t, "GET", "/v1/jobs/"+jo.Job.ID, admin, nil).want(t, http.StatusOK).decode(t, &job)
	}
	want := &report{Runs: 1, Cases: 1, Deferred: 1}
	if diff := cmp.Diff(want, job.Result); diff != "" || job.Type != "what-if" {
		t.Errorf("job %s, report (-want +got):\n%s", job.Type, diff)
	}
}

// TestDecisionWhatIfRoute asks how a decision would decide its judged
// cases with other thresholds: 200 with the report; bad bounds are 422s,
// another tenant's decision a 404.
func TestDecisionWhatIfRoute(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_dwhatif"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_dwhatif_other"}`).Token
	s.do(t, "POST", "/v1/decisions", admin, `{"name": "route", "description": "Where it goes"}`).want(t, http.StatusCreated)
	path := "/v1/decisions/route/what-if"
	for _, body := range []string{`{}`, `{"thresholds": {"auto": 2}}`, `{"thresholds": {"auto": 0.5}}`, `{"thresholds": {}, "limit": 0}`,
		`{"thresholds": {}, "limit": 1001}`, `{"thresholds": {}, "extra": 1}`} {
		s.do(t, "POST", path, admin, body).want(t, http.StatusUnprocessableEntity)
	}
	s.do(t, "POST", path, other, `{"thresholds": {}}`).want(t, http.StatusNotFound)
	var rep struct {
		Decision   string             `json:"decision"`
		Thresholds map[string]float64 `json:"thresholds"`
		Cases      int                `json:"cases"`
	}
	s.do(t, "POST", path, admin, `{"thresholds": {"auto": 0.8}, "limit": 1000}`).want(t, http.StatusOK).decode(t, &rep)
	want := map[string]float64{"auto": 0.8, "suggest": 0.6}
	if diff := cmp.Diff(want, rep.Thresholds); diff != "" || rep.Decision != "route" || rep.Cases != 0 {
		t.Errorf("report %+v (-want +got thresholds):\n%s", rep, diff)
	}
}

// TestDocTypeWhatIfRoute asks how a changed document type would decide
// its decided documents: 200 with the report; bad bounds are 422s,
// another tenant's type a 404.
func TestDocTypeWhatIfRoute(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_docwhatif"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_docwhatif_other"}`).Token
	var typ struct {
		ID string `json:"id"`
	}
	s.do(t, "POST", "/v1/docs/types", admin, `{"name": "Note", "fields": [{"key": "title", "label": "Title", "type": "text", "required": true}]}`).
		want(t, http.StatusCreated).decode(t, &typ)
	path := "/v1/docs/types/" + typ.ID + "/what-if"
	for _, body := range []string{`{"limit": 0}`, `{"limit": 1001}`, `{"workflow": {"on_error": "ignore"}}`, `{"extra": 1}`,
		`{"fields": [{"key": "Bad Key"}]}`} {
		s.do(t, "POST", path, admin, body).want(t, http.StatusUnprocessableEntity)
	}
	s.do(t, "POST", path, other, `{}`).want(t, http.StatusNotFound)
	var rep struct {
		TypeID string `json:"type_id"`
		Cases  int    `json:"cases"`
	}
	s.do(t, "POST", path, admin, `{"workflow": {"auto_approve": true}, "limit": 1000}`).want(t, http.StatusOK).decode(t, &rep)
	if rep.TypeID != typ.ID || rep.Cases != 0 {
		t.Errorf("report %+v", rep)
	}
}
