package httpapi_test

// HTTP tests of claim, unclaim and assign (tasks_assign.go).

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

type assignedTask struct {
	ID       string  `json:"id"`
	Status   string  `json:"status"`
	Assignee *string `json:"assignee"`
}

// TestTaskClaimUnclaimAssign walks a task through claim, reassign and
// unclaim by people with and without processes.manage, and checks the
// inbox's filters, the audit log and every refusal.
func TestTaskClaimUnclaimAssign(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_asg", "email": "boss@example.com"}`)
	ann := s.devLogin(t, `{"tenant_id": "ten_asg", "email": "ann@example.com", "roles": ["member"]}`)
	bob := s.devLogin(t, `{"tenant_id": "ten_asg", "email": "bob@example.com", "roles": ["member"]}`)
	viewer := s.newKey(t, admin.Token, `{"name": "reader", "roles": ["viewer"]}`).Secret
	other := s.devLogin(t, `{"tenant_id": "ten_asg_other"}`).Token

	proc := s.createProc(t, admin.Token, `{"name": "Look", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look at ${subject.label}"}}]}`)
	r := s.startRun(t, admin.Token, proc.ID, "A-1")
	id := *r.step(t, "t").TaskID
	path := "/v1/tasks/" + id

	task := func(tok, verb string, body any, status int) assignedTask {
		t.Helper()
		var out assignedTask
		resp := s.do(t, "POST", path+"/"+verb, tok, body).want(t, status)
		if status == http.StatusOK {
			resp.decode(t, &out)
		}
		return out
	}
	assignee := func(a assignedTask) string {
		if a.Assignee == nil {
			return "<none>"
		}
		return *a.Assignee
	}
	listed := func(tok, q string) []string {
		t.Helper()
		var out []assignedTask
		s.do(t, "GET", "/v1/tasks?status=open&"+q, tok, nil).want(t, http.StatusOK).decode(t, &out)
		ids := []string{}
		for _, x := range out {
			ids = append(ids, x.ID)
		}
		return ids
	}

	if diff := cmp.Diff([]string{id}, listed(ann.Token, "assignee=*")); diff != "" {
		t.Errorf("unassigned (-want +got):\n%s", diff)
	}
	// A viewer may not claim; another tenant's task is a 404, body or not.
	task(viewer, "claim", nil, http.StatusForbidden)
	task(other, "claim", nil, http.StatusNotFound)
	task(other, "assign", `{"assignee": "`+ann.UserID+`"}`, http.StatusNotFound)
	task(other, "assign", `{"bad": `, http.StatusNotFound)
	task(other, "unclaim", nil, http.StatusNotFound)
	s.do(t, "POST", "/v1/tasks/tsk_01JNKX7Z0000000000000000/claim", ann.Token, nil).want(t, http.StatusNotFound)
	// claim takes no body.
	task(ann.Token, "claim", `{"x": 1}`, http.StatusUnprocessableEntity)

	// Ann claims it: it is hers, twice over (the second claim changes nothing).
	if got := assignee(task(ann.Token, "claim", nil, http.StatusOK)); got != ann.UserID {
		t.Errorf("after ann's claim: %s", got)
	}
	if got := assignee(task(ann.Token, "claim", nil, http.StatusOK)); got != ann.UserID {
		t.Errorf("after ann's second claim: %s", got)
	}
	if diff := cmp.Diff([]string{id}, listed(ann.Token, "assignee=me")); diff != "" {
		t.Errorf("ann's (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{}, listed(bob.Token, "assignee=me")); diff != "" {
		t.Errorf("bob's (-want +got):\n%s", diff)
	}
	if ids := listed(ann.Token, "assignee=*"); len(ids) != 0 {
		t.Errorf("unassigned after the claim: %v", ids)
	}
	// Bob cannot claim, unclaim or reassign Ann's task.
	if d := s.do(t, "POST", path+"/claim", bob.Token, nil).want(t, http.StatusConflict).detail(t); d != "task is assigned to "+ann.UserID {
		t.Errorf("bob's claim: %q", d)
	}
	if d := s.do(t, "POST", path+"/unclaim", bob.Token, nil).want(t, http.StatusForbidden).detail(t); !strings.HasPrefix(d, "missing permission processes.manage") {
		t.Errorf("bob's unclaim: %q", d)
	}
	task(bob.Token, "assign", `{"assignee": "`+bob.UserID+`"}`, http.StatusForbidden)

	// Bad bodies: every violation, nothing changes.
	for _, c := range []struct{ name, body, want string }{
		{"no assignee", `{}`, "body.assignee:missing"},
		{"empty", `{"assignee": ""}`, "body.assignee:string_too_short"},
		{"too long", `{"assignee": "` + strings.Repeat("u", 101) + `"}`, "body.assignee:string_too_long"},
		{"not a string", `{"assignee": 7}`, "body.assignee:type_error"},
		{"unknown field", `{"assignee": "` + bob.UserID + `", "queue": "x"}`, "body.queue:extra_forbidden"},
		{"not a member", `{"assignee": "usr_nobody"}`, "body.assignee:value_error"},
		{"a member of another tenant", `{"assignee": "` + s.devLogin(t, `{"tenant_id": "ten_asg_third", "email": "eve@example.com"}`).UserID + `"}`, "body.assignee:value_error"},
	} {
		resp := s.do(t, "POST", path+"/assign", ann.Token, c.body).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff([]string{c.want}, violationList(t, resp)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// At the bound: 100 characters is checked for membership, not length.
	resp := s.do(t, "POST", path+"/assign", ann.Token, `{"assignee": "`+strings.Repeat("u", 100)+`"}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.assignee:value_error"}, violationList(t, resp)); diff != "" {
		t.Errorf("100 characters (-want +got):\n%s", diff)
	}

	// Ann hands it to Bob; Bob unclaims it; the admin assigns it to Ann,
	// then takes it from her for Bob (processes.manage).
	if got := assignee(task(ann.Token, "assign", `{"assignee": "`+bob.UserID+`"}`, http.StatusOK)); got != bob.UserID {
		t.Errorf("after ann's hand-over: %s", got)
	}
	if got := assignee(task(bob.Token, "unclaim", nil, http.StatusOK)); got != "<none>" {
		t.Errorf("after bob's unclaim: %s", got)
	}
	if got := assignee(task(bob.Token, "unclaim", nil, http.StatusOK)); got != "<none>" {
		t.Errorf("unclaiming an unassigned task: %s", got)
	}
	task(admin.Token, "assign", `{"assignee": "`+ann.UserID+`"}`, http.StatusOK)
	if got := assignee(task(admin.Token, "assign", `{"assignee": "`+bob.UserID+`"}`, http.StatusOK)); got != bob.UserID {
		t.Errorf("after the admin's reassign: %s", got)
	}
	if diff := cmp.Diff([]string{id}, listed(bob.Token, "assignee=me")); diff != "" {
		t.Errorf("bob's (-want +got):\n%s", diff)
	}

	// Every change is audited, newest first.
	var audit []struct {
		Actor    string         `json:"actor"`
		Action   string         `json:"action"`
		EntityID string         `json:"entity_id"`
		Before   map[string]any `json:"before"`
		After    map[string]any `json:"after"`
	}
	s.do(t, "GET", "/v1/audit?entity=task", admin.Token, nil).want(t, http.StatusOK).decode(t, &audit)
	var got []string
	for _, e := range audit {
		if e.EntityID != id {
			t.Errorf("audit entry about %s", e.EntityID)
		}
		got = append(got, e.Actor+" "+e.Action+" "+str(e.Before["assignee"])+" -> "+str(e.After["assignee"]))
	}
	want := []string{
		admin.UserID + " task.assign " + ann.UserID + " -> " + bob.UserID,
		admin.UserID + " task.assign <none> -> " + ann.UserID,
		bob.UserID + " task.unclaim " + bob.UserID + " -> <none>",
		ann.UserID + " task.assign " + ann.UserID + " -> " + bob.UserID,
		ann.UserID + " task.claim <none> -> " + ann.UserID,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}

	// A completed task is a 409 on each.
	s.do(t, "POST", path+"/complete", bob.Token, `{"action": "complete"}`).want(t, http.StatusOK)
	task(bob.Token, "claim", nil, http.StatusConflict)
	task(bob.Token, "unclaim", nil, http.StatusConflict)
	task(admin.Token, "assign", `{"assignee": "`+ann.UserID+`"}`, http.StatusConflict)
}

func str(v any) string {
	if v == nil {
		return "<none>"
	}
	s, _ := v.(string)
	return s
}
