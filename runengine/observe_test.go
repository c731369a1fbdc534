package runengine_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// observePanicGate asks a person for every action and panics when told
// what the person thought.
type observePanicGate struct{ observed atomic.Int32 }

func (g *observePanicGate) Decide(context.Context, runengine.GateRequest) (runengine.GateDecision, error) {
	return runengine.GateDecision{Auto: false, Reason: "supervised"}, nil
}

func (g *observePanicGate) Observe(context.Context, runengine.Outcome) error {
	g.observed.Add(1)
	panic("observe broke")
}

// TestGateObservePanicIsLogged: a gate whose Observe panics does not end
// the process (the panic would end the test binary), and the engine goes
// on running and deciding the next runs.
func TestGateObservePanicIsLogged(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	gate := &observePanicGate{}
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{}, func(cfg *runengine.Config) {
		cfg.Gate = gate
	})
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"pay","type":"execute","capability":"test.echo","config":{"args":{"n":1}}}]`)
	for i := range 2 {
		id := b.start(t, def.ID)
		r := b.waitRun(t, id, "waiting on approval", stepStatus("pay", runengine.StepWaitingApproval))
		if _, err := b.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[0].ApprovalID,
			Approve: true, Actor: "usr_boss"}); err != nil {
			t.Fatal(err)
		}
		b.waitRun(t, id, "completed", status(runengine.RunCompleted))
		testwait.Until(t, "the gate told of the decision", func() bool { return gate.observed.Load() == int32(i+1) })
	}
}
