package runengine_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestApprovalsBoundToWhatWasShown needs two distinct approvers, keeps the
// requester and the person who did the run's earlier task from deciding,
// and refuses a decision on a digest that is no longer the approval's.
func TestApprovalsBoundToWhatWasShown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}},
		{"key":"pay","type":"execute","capability":"test.echo","config":{"args":{"amount":5}},
		 "controls":{"require_approval":true,"approvals_required":2,"separate_duties":true}}]`)
	id := b.start(t, def.ID) // started by usr_test
	r := b.waitRun(t, id, "waiting on the task", stepStatus("check", runengine.StepWaitingTask))
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID, Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "waiting on the approval", stepStatus("pay", runengine.StepWaitingApproval))
	aid := *r.Steps[1].ApprovalID
	a, err := b.eng.GetApproval(ctx, tenant, aid)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Digest) != 64 || a.ApprovalsRequired != 2 {
		t.Fatalf("approval digest %q, approvals_required %d", a.Digest, a.ApprovalsRequired)
	}
	decide := func(actor, digest string, args map[string]any) (*runengine.Decision, error) {
		return b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: aid, Approve: true, Args: args, Reason: "", Actor: actor, Digest: digest})
	}
	for _, c := range []struct {
		actor, digest string
		want          error
	}{
		{"usr_test", a.Digest, errs.Forbidden}, // the requester
		{"usr_a", a.Digest, errs.Forbidden},    // did the earlier task
		{"usr_b", "0000", errs.Conflict},       // a stale digest
	} {
		if _, err := decide(c.actor, c.digest, nil); !errors.Is(err, c.want) {
			t.Errorf("%s deciding on %s: %v, want %v", c.actor, c.digest, err, c.want)
		}
	}
	d, err := decide("usr_b", a.Digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := *d.Approval
	if got.Status != runengine.ApprovalPending || len(got.Approvals) != 1 || got.Approvals[0].By != "usr_b" {
		t.Errorf("after one approver: %s, votes %+v", got.Status, got.Approvals)
	}
	if _, err := decide("usr_b", a.Digest, nil); !errors.Is(err, errs.Conflict) {
		t.Errorf("the same approver twice: %v", err)
	}
	// An edit is a new proposal: its digest changes and the votes restart.
	d, err = decide("usr_c", a.Digest, map[string]any{"amount": 4})
	if err != nil {
		t.Fatal(err)
	}
	got = *d.Approval
	if got.Digest == a.Digest || len(got.Approvals) != 1 || got.Approvals[0].By != "usr_c" || got.Status != runengine.ApprovalPending {
		t.Fatalf("after an edit: %+v", got)
	}
	if _, err := decide("usr_b", a.Digest, nil); !errors.Is(err, errs.Conflict) {
		t.Errorf("deciding on what was shown before the edit: %v", err)
	}
	if _, err := decide("usr_b", got.Digest, nil); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff(map[string]any{"amount": float64(4)}, r.Steps[1].Output); diff != "" {
		t.Errorf("paid with (-want +got):\n%s", diff)
	}
}
