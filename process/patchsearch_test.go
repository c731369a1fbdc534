package process

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestFourEyesKeepsSearchClear queues a widening patch that also clears
// the search fields ({}): the approved change clears them, as the same
// patch applied at once would, instead of keeping the old ones.
func TestFourEyesKeepsSearchClear(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, second := b.fourEyes(t, "t1")
	in := manualIn("Pay", payStep(Controls{RequireApproval: true}))
	in.Search = map[string]string{"amount": "trigger.data.amount_cents"}
	d, err := b.svc.Create(b.ctx, "t1", owner.Actor(), in)
	if err != nil {
		t.Fatal(err)
	}
	_, ch, err := b.svc.Update(b.ctx, "t1", owner.Actor(), d.ID,
		ProcessPatch{Steps: []Step{payStep(Controls{})}, Search: map[string]string{}})
	if err != nil || ch == nil {
		t.Fatalf("widening: %v %v", ch, err)
	}
	if _, err := b.acc.Approve(b.ctx, second, ch.ID, ""); err != nil {
		t.Fatal(err)
	}
	cur, err := b.svc.Get(b.ctx, "t1", d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{}, cur.Search, cmpopts.EquateEmpty()); diff != "" || cur.Version != 2 {
		t.Errorf("after approval: version %d, search (-want +got):\n%s", cur.Version, diff)
	}
}

// TestPatchStepsKeepsOldSearchFields: a search field a process stored
// before the fields were checked against its steps, reading a step it
// does not have, does not refuse a later change of the steps that leaves
// it as it was (the patch does not touch it); a change that makes a field
// read a step no longer there still does.
func TestPatchStepsKeepsOldSearchFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := manualIn("Review")
	in.Search = map[string]string{"note": "steps.review.note"}
	d := b.create(t, "t1", in)
	// As an older release stored it: a field reading no step.
	old := *d
	old.Search = map[string]string{"note": "steps.review.note", "gone": "steps.gone.x"}
	if err := b.st.Update(b.ctx, func(tx store.Txn) error { return definitions.Put(tx, "t1", &old) }); err != nil {
		t.Fatal(err)
	}
	steps := []Step{{Key: "review", Type: StepHumanTask, Config: json.RawMessage(`{"title": "Review it"}`)}}
	got, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Steps: steps})
	if err != nil {
		t.Fatalf("a steps change leaving the old search fields as they were: %v", err)
	}
	if diff := cmp.Diff(old.Search, got.Search); diff != "" || got.Version != 2 {
		t.Errorf("version %d, search (-want +got):\n%s", got.Version, diff)
	}
	// Removing the step a field reads is refused still.
	other := []Step{{Key: "check", Type: StepHumanTask, Config: json.RawMessage(`{"title": "Check"}`)}}
	_, _, err = b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Steps: other})
	var vs []errs.Violation
	for _, v := range errs.Violations(err) {
		vs = append(vs, errs.Violation{Loc: v.Loc, Type: v.Type})
	}
	want := []errs.Violation{{Loc: []any{"search", "note"}, Type: "value_error"}}
	if diff := cmp.Diff(want, vs); diff != "" {
		t.Errorf("removing the step a field reads: %v, violations (-want +got):\n%s", err, diff)
	}
}
