package process

import (
	"testing"

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
