package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
)

// TestRunControlRoutes covers pause and resume of a run and a process,
// rerun from a step and bulk jobs over HTTP, with their statuses.
func TestRunControlRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_ctl"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_ctl_other"}`).Token
	viewer := s.newKey(t, admin, `{"name": "reader", "roles": ["viewer"]}`).Secret
	proc := s.createProc(t, admin, `{"name": "Review", "function": "operations", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at ${subject.label}", "actions": ["accept"]}},
	    {"key": "after", "type": "route", "config": {"rules": [{"when": {"steps.look.outcome": "accept"}, "queue": "done"}], "default": {"queue": "redo"}}}]}`)
	r := s.startRun(t, admin, proc.ID, "INV-1")

	// Pause and resume a run: 200 with the run; a viewer may not; another
	// tenant sees nothing.
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/pause", viewer, nil).want(t, http.StatusForbidden)
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/pause", other, nil).want(t, http.StatusNotFound)
	var v runView
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/pause", admin, nil).want(t, http.StatusOK).decode(t, &v)
	if v.Status != "paused" {
		t.Errorf("paused run status %s", v.Status)
	}
	if ids := s.listIDs(t, admin, "/v1/process-runs?status=paused"); len(ids) != 1 || ids[0] != r.ID {
		t.Errorf("paused runs %v", ids)
	}
	s.do(t, "POST", "/v1/tasks/"+*r.step(t, "look").TaskID+"/complete", admin, `{"action": "accept"}`).want(t, http.StatusConflict)
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/resume", admin, nil).want(t, http.StatusOK).decode(t, &v)
	if v.Status != "waiting" {
		t.Errorf("resumed run status %s", v.Status)
	}
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/resume", admin, nil).want(t, http.StatusConflict)
	s.do(t, "POST", "/v1/tasks/"+*r.step(t, "look").TaskID+"/complete", admin, `{"action": "accept"}`).want(t, http.StatusOK)
	s.awaitRun(t, admin, r.ID, "completed", runStatusIs("completed"))
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/pause", admin, nil).want(t, http.StatusConflict)

	// A start takes a priority.
	var pr struct {
		ID       string `json:"id"`
		Priority string `json:"priority"`
	}
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", admin, `{"subject": {"type": "a", "label": "b"}, "priority": "high"}`).
		want(t, http.StatusCreated).decode(t, &pr)
	if pr.Priority != "high" {
		t.Errorf("priority = %q", pr.Priority)
	}
	// Its task carries it; a normal run's task shows none.
	var open []struct {
		RunID    string  `json:"run_id"`
		Priority *string `json:"priority"`
	}
	s.do(t, "GET", "/v1/tasks?status=open", admin, nil).want(t, http.StatusOK).decode(t, &open)
	var normalTask map[string]any
	s.do(t, "GET", "/v1/tasks/"+*r.step(t, "look").TaskID, admin, nil).want(t, http.StatusOK).decode(t, &normalTask)
	if _, ok := normalTask["priority"]; ok {
		t.Errorf("a normal run's task shows a priority: %v", normalTask["priority"])
	}
	found := false
	for _, x := range open {
		if x.RunID == pr.ID {
			found = true
			if x.Priority == nil || *x.Priority != "high" {
				t.Errorf("the high priority run's task shows priority %v", x.Priority)
			}
		}
	}
	if !found {
		t.Errorf("no open task of run %s in %+v", pr.ID, open)
	}
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", admin, `{"subject": {"type": "a", "label": "b"}, "priority": "urgent"}`).
		want(t, http.StatusUnprocessableEntity)

	// Rerun from a step: 201 with the new run, linked to the original.
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/rerun", admin, `{}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", "/v1/process-runs/"+r.ID+"/rerun", admin, `{"from_step": "nope"}`).want(t, http.StatusUnprocessableEntity)
	var re struct {
		ID            string `json:"id"`
		Status        string `json:"status"`
		RerunOf       string `json:"rerun_of"`
		RerunFromStep string `json:"rerun_from_step"`
	}
	resp := s.do(t, "POST", "/v1/process-runs/"+r.ID+"/rerun", admin, `{"from_step": "after"}`).want(t, http.StatusCreated)
	resp.decode(t, &re)
	if re.RerunOf != r.ID || re.RerunFromStep != "after" || re.Status != "completed" {
		t.Errorf("rerun = %+v", re)
	}

	// Pause a process: new runs queue as paused; its resume answers the
	// job resuming them.
	var pp struct {
		Paused bool `json:"paused"`
		Job    *struct {
			ID    string `json:"id"`
			Total int    `json:"total"`
		} `json:"job"`
	}
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/pause", admin, nil).want(t, http.StatusOK).decode(t, &pp)
	if !pp.Paused {
		t.Errorf("process pause = %+v", pp)
	}
	queued := s.startRun(t, admin, proc.ID, "INV-2")
	if queued.Status != "paused" {
		t.Errorf("a run of a paused process started %s", queued.Status)
	}
	s.do(t, "POST", "/v1/processes/"+proc.ID+"/resume", admin, nil).want(t, http.StatusOK).decode(t, &pp)
	if pp.Paused || pp.Job == nil || pp.Job.Total != 1 {
		t.Fatalf("process resume = %+v", pp)
	}
	s.awaitRun(t, admin, queued.ID, "waiting", runStatusIs("waiting"))

	// Bulk: 202 with the job; GET /v1/jobs/{id} reports its progress.
	s.do(t, "POST", "/v1/process-runs/bulk", admin, `{"filter": {}, "action": "cancel"}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", "/v1/process-runs/bulk", admin, `{"filter": {"status": "waiting"}, "action": "explode"}`).want(t, http.StatusUnprocessableEntity)
	var jo struct {
		Job struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Total  int    `json:"total"`
		} `json:"job"`
	}
	s.do(t, "POST", "/v1/process-runs/bulk", admin, `{"filter": {"process_id": "`+proc.ID+`", "status": "waiting"}, "action": "cancel"}`).
		want(t, http.StatusAccepted).decode(t, &jo)
	if jo.Job.Total != 4 || jo.Job.ID == "" {
		t.Errorf("bulk job = %+v", jo)
	}
	s.awaitRun(t, admin, queued.ID, "cancelled", runStatusIs("cancelled"))
	s.do(t, "GET", "/v1/jobs/"+jo.Job.ID, other, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/jobs/job_01JNKX7Z0000000000000000", admin, nil).want(t, http.StatusNotFound)

	// Cancel of a job: another tenant's or an unknown one is a 404, a
	// viewer may not, a body other than {} is a 422, and a job no longer
	// running is a 409 (a running one's cancel is the engine's
	// TestFailpointCancelledJobStops), answered again as it was under the
	// same Idempotency-Key.
	cancel := "/v1/jobs/" + jo.Job.ID + "/cancel"
	s.do(t, "POST", cancel, other, nil).want(t, http.StatusNotFound)
	s.do(t, "POST", "/v1/jobs/job_01JNKX7Z0000000000000000/cancel", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "POST", cancel, viewer, nil).want(t, http.StatusForbidden)
	s.do(t, "POST", cancel, admin, `{"now": true}`).want(t, http.StatusUnprocessableEntity)
	var done struct {
		Status string `json:"status"`
	}
	testwait.Until(t, "the bulk job completed", func() bool {
		s.do(t, "GET", "/v1/jobs/"+jo.Job.ID, admin, nil).want(t, http.StatusOK).decode(t, &done)
		return done.Status == "completed"
	})
	first := s.do(t, "POST", cancel, admin, nil, "Idempotency-Key", "cancel-1").want(t, http.StatusConflict)
	if d := first.detail(t); d != "job is completed" {
		t.Errorf("cancel of a completed job: %q", d)
	}
	again := s.do(t, "POST", cancel, admin, nil, "Idempotency-Key", "cancel-1").want(t, http.StatusConflict)
	if string(again.Body) != string(first.Body) {
		t.Errorf("the repeated cancel answered %s, the first %s", again.Body, first.Body)
	}
}

// TestRunSearchRoutes finds runs with q and search.{name}.
func TestRunSearchRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_search"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_search_other"}`).Token
	proc := s.createProc(t, admin, `{"name": "Review", "function": "operations", "trigger": {"type": "manual"},
	  "search": {"ref": "subject.label"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at ${subject.label}", "actions": ["accept"]}}]}`)
	s.do(t, "POST", "/v1/processes", admin, `{"name": "Bad", "trigger": {"type": "manual"}, "search": {"Bad-Name": "nowhere.x"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x"}}]}`).want(t, http.StatusUnprocessableEntity)
	a := s.startRun(t, admin, proc.ID, "Invoice 1042")
	b := s.startRun(t, admin, proc.ID, "Credit note 7")
	s.startRun(t, other, s.createProc(t, other, `{"name": "R", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x"}}]}`).ID, "Invoice 1042")
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/v1/process-runs?q=invoice", []string{a.ID}},
		{"/v1/process-runs?q=NOTE+credit", []string{b.ID}},
		{"/v1/process-runs?search.ref=invoice+1042", []string{a.ID}},
		{"/v1/process-runs?search.ref=invoice", nil},
		{"/v1/process-runs?q=nothing", nil},
	} {
		got := s.listIDs(t, admin, c.path)
		if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
			t.Errorf("%s = %v, want %v", c.path, got, c.want)
		}
	}
	s.do(t, "GET", "/v1/process-runs?q=--", admin, nil).want(t, http.StatusUnprocessableEntity)
	s.do(t, "GET", "/v1/process-runs?search.Bad=x", admin, nil).want(t, http.StatusUnprocessableEntity)
}
