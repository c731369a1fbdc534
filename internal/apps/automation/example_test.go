package automation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// A process's gate, ramped up by people agreeing with its proposals.
func Example() {
	ctx := context.Background()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet()})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	svc := automation.New(automation.Config{Store: st, Clock: clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))})

	patch, err := automation.ParsePatch([]byte(`{"auto_ramp": true, "ramp_min_decisions": 5}`))
	if err != nil {
		panic(err)
	}
	if _, err := svc.UpdateWorkspace(ctx, "t1", "u1", patch); err != nil {
		panic(err)
	}
	gate := svc.Gate()
	d, _ := gate.Decide(ctx, runengine.GateRequest{Tenant: "t1", ProcessID: "prc_1", ItemKey: "run_1/pay"})
	fmt.Println(d.Auto, d.Reason)

	for range 5 {
		_ = gate.Observe(ctx, runengine.Outcome{Tenant: "t1", ProcessID: "prc_1", StepKey: "pay", Agreed: true, Actor: "u2"})
	}
	v, _ := svc.Process(ctx, "t1", "prc_1")
	fmt.Println(v.Percent, v.Inherited[:2])
	// Output:
	// false supervised: automation is at 0%
	// 10 [auto_ramp paused]
}
