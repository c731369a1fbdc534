package runengine_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// TestCommandAnswersItsOwnRecord checks that completing a task answers
// that task, and deciding an approval that approval, also when the run
// goes straight on, in the same change, to a step that makes another task
// or approval (the answer was the last record the change wrote).
func TestCommandAnswersItsOwnRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type answer struct{ ID, Step, Status string }

	t.Run("task then task", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		def := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"human_task","config":{"title":"One"}},
			{"key":"two","type":"human_task","config":{"title":"Two"}}]`)
		id := b.start(t, def.ID)
		r := b.waitRun(t, id, "waiting on task one", stepStatus("one", runengine.StepWaitingTask))
		taskID := *r.Steps[0].TaskID
		got, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "complete", Actor: "usr_a"})
		if err != nil {
			t.Fatal(err)
		}
		want := answer{taskID, "one", string(runengine.TaskCompleted)}
		if diff := cmp.Diff(want, answer{got.ID, got.StepKey, string(got.Status)}); diff != "" {
			t.Errorf("completing task one answered (-want +got):\n%s", diff)
		}
		b.waitRun(t, id, "waiting on task two", stepStatus("two", runengine.StepWaitingTask))
	})

	t.Run("approval then approval", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		def := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"route","controls":{"require_approval":true},
			"config":{"input":{"amount":5},"rules":[{"id":"big","when":{"amount":{"gt":3}},"queue":"big"}],"default":{"queue":"small"}}},
			{"key":"two","type":"route","controls":{"require_approval":true},
			"config":{"input":{"amount":5},"rules":[{"id":"big","when":{"amount":{"gt":3}},"queue":"big"}],"default":{"queue":"small"}}}]`)
		id := b.start(t, def.ID)
		r := b.waitRun(t, id, "waiting on approval one", stepStatus("one", runengine.StepWaitingApproval))
		approvalID := *r.Steps[0].ApprovalID
		d, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: approvalID, Approve: true, Actor: "usr_a"})
		if err != nil {
			t.Fatal(err)
		}
		want := answer{approvalID, "one", string(runengine.ApprovalApproved)}
		if diff := cmp.Diff(want, answer{d.Approval.ID, d.Approval.StepKey, string(d.Approval.Status)}); diff != "" {
			t.Errorf("approving approval one answered (-want +got):\n%s", diff)
		}
		b.waitRun(t, id, "waiting on approval two", stepStatus("two", runengine.StepWaitingApproval))
	})
}
