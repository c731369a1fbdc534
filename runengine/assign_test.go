package runengine_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestAssignTask claims, reassigns and unclaims a task: each change moves
// it between the assignee index's lists, is audited and emits
// task.assigned; a refusing check and a finished task change nothing.
func TestAssignTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	id := b.start(t, def.ID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, Names: []string{runengine.EventTaskAssigned}})
	next, stop := iter.Pull2(events)
	defer stop()
	r := b.waitRun(t, id, "waiting", stepStatus("check", runengine.StepWaitingTask))
	taskID := *r.Steps[0].TaskID

	listed := func(assignee string) []string {
		t.Helper()
		out, _, err := b.eng.ListTasks(ctx, tenant, runengine.TaskQuery{Status: runengine.TaskOpen, Assignee: assignee}, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range out {
			ids = append(ids, x.ID)
		}
		return ids
	}
	assign := func(p runengine.AssignTaskParams) (*runengine.Task, error) {
		p.Tenant, p.TaskID = tenant, taskID
		return b.eng.AssignTask(ctx, p)
	}
	if diff := cmp.Diff([]string{taskID}, listed("*")); diff != "" {
		t.Fatalf("unassigned before (-want +got):\n%s", diff)
	}
	got, err := assign(runengine.AssignTaskParams{Assignee: "usr_a", Via: runengine.AssignViaClaim, Actor: "usr_a"})
	if err != nil || got.Assignee == nil || *got.Assignee != "usr_a" {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	if diff := cmp.Diff([]string{taskID}, listed("usr_a")); diff != "" {
		t.Errorf("usr_a's after the claim (-want +got):\n%s", diff)
	}
	if ids := listed("*"); len(ids) != 0 {
		t.Errorf("unassigned after the claim = %v", ids)
	}
	// A check that refuses changes nothing.
	refuse := errs.Conflictf("task is assigned to usr_a")
	if _, err := assign(runengine.AssignTaskParams{Assignee: "usr_b", Via: runengine.AssignViaClaim, Actor: "usr_b",
		Check: func(t *runengine.Task) error { return refuse }}); !errors.Is(err, errs.Conflict) {
		t.Fatalf("refused claim: %v", err)
	}
	// Assigning the assignee it has changes nothing either (no event).
	if _, err := assign(runengine.AssignTaskParams{Assignee: "usr_a", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := assign(runengine.AssignTaskParams{Assignee: "usr_b", Actor: "usr_adm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := assign(runengine.AssignTaskParams{Via: runengine.AssignViaUnclaim, Actor: "usr_b"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{taskID}, listed("*")); diff != "" {
		t.Errorf("unassigned after the unclaim (-want +got):\n%s", diff)
	}
	var seen []map[string]any
	for range 3 {
		n, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("event: %v %v", ok, err)
		}
		seen = append(seen, n.Event.Data)
	}
	want := []map[string]any{
		{"task_id": taskID, "run_id": id, "process_id": def.ID, "assignee": "usr_a", "previous": nil, "by": "usr_a", "via": "claim"},
		{"task_id": taskID, "run_id": id, "process_id": def.ID, "assignee": "usr_b", "previous": "usr_a", "by": "usr_adm", "via": "assign"},
		{"task_id": taskID, "run_id": id, "process_id": def.ID, "assignee": nil, "previous": "usr_b", "by": "usr_b", "via": "unclaim"},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var entries []*audit.Entry
	if err := b.st.View(ctx, func(r store.Reader) error {
		var err error
		entries, _, err = audit.List(r, tenant, audit.Query{Entity: "task"}, store.Page{Limit: 10})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Actor+" "+e.Action+" "+string(e.Before)+" -> "+string(e.After))
	}
	wantAudit := []string{
		`usr_b task.unclaim {"assignee":"usr_b"} -> {"assignee":null}`,
		`usr_adm task.assign {"assignee":"usr_a"} -> {"assignee":"usr_b"}`,
		`usr_a task.claim {"assignee":null} -> {"assignee":"usr_a"}`,
	}
	if diff := cmp.Diff(wantAudit, actions); diff != "" {
		t.Errorf("audit, newest first (-want +got):\n%s", diff)
	}
	// Another tenant's id is not found; a completed task is a conflict.
	if _, err := b.eng.AssignTask(ctx, runengine.AssignTaskParams{Tenant: "ten_other", TaskID: taskID, Assignee: "usr_a"}); !errors.Is(err, errs.NotFound) {
		t.Errorf("other tenant: %v", err)
	}
	// A bad assignee is located at its parameter's name, as a bad Start's
	// params are (the HTTP route puts it under body).
	_, err = assign(runengine.AssignTaskParams{Assignee: strings.Repeat("u", 321), Actor: "usr_a"})
	wantVs := []errs.Violation{{Loc: []any{"assignee"}, Msg: "must be at most 320 characters", Type: "string_too_long"}}
	if diff := cmp.Diff(wantVs, errs.Violations(err)); diff != "" {
		t.Errorf("assignee of 321 characters: %v; violations (-want +got):\n%s", err, diff)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := assign(runengine.AssignTaskParams{Assignee: "usr_a"}); !errors.Is(err, errs.Conflict) {
		t.Errorf("completed task: %v, want conflict", err)
	}
}
