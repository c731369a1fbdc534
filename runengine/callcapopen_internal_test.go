package runengine

import (
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/google/go-cmp/cmp"
)

// TestCallCapResumesByPriority: with a call cap of one per tenant, a low
// priority run's call is in flight and a high priority run's call waits
// for the slot when the engine closes. The next engine resumes the runs
// in the active index's order, the low priority run first: both make
// their call again, the high priority run's first. Before, the calls made
// again took the slots in the order their runs were resumed, so the low
// priority run's went first.
func TestCallCapResumesByPriority(t *testing.T) {
	t.Parallel()
	const tenant = heldTenant
	// One worker: the commands of Open's recovery are handled in the
	// active index's order.
	rig := newHeldRig(t, Config{Workers: 1, MaxCallsPerTenant: 1, Grace: time.Millisecond, Gate: autoDecides{}}, "low", "high")
	p, eng, start := rig.p, rig.eng, rig.start
	low := start("low", PriorityLow)
	testwait.Until(t, "the low priority run's call", func() bool { return len(p.calls()) == 1 })
	high := start("high", PriorityHigh)
	testwait.Until(t, "the high priority run's call queued", func() bool { return eng.admission.reason(tenant, high) != "" })
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	rig.reopen()
	testwait.Until(t, "a call made again", func() bool { return len(p.calls()) == 2 })
	p.let("high")
	p.let("low")
	rig.waitCompleted(high, low)
	if diff := cmp.Diff([]string{"low", "high", "low"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
