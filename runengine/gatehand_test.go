package runengine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// blocking is a provider whose test.block call tells entered and waits
// for release.
type blocking struct {
	entered, release chan struct{}
}

func (p *blocking) Info() capability.Info {
	return capability.Info{ID: "test.blocking", Name: "Blocking", Kind: capability.KindBuiltin, Capabilities: []string{"test.block"}}
}

func (p *blocking) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.block", Name: "Block", Description: "Waits to be released.", Args: obj, Result: obj}}
}

// JoinsWrites marks blocking a callwrites.Joiner: it acts on nothing.
func (p *blocking) JoinsWrites(callwrites.Mark) {}

func (p *blocking) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	select {
	case p.entered <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.Args, nil
}

// settleGate is the automation gate, telling settled how the commit
// carrying each decision it handed over ended.
type settleGate struct {
	runengine.Gate
	settled chan error
}

func (g *settleGate) Decide(ctx context.Context, req runengine.GateRequest) (runengine.GateDecision, error) {
	d, err := g.Gate.Decide(ctx, req)
	if w := callwrites.From(ctx); w != nil && err == nil {
		w.OnSettled(func(err error) { g.settled <- err })
	}
	return d, err
}

// TestCancelledRunReleasesItsGateCount: a run cancelled while the call its
// gate decision allowed is in flight drops the call's result, and with it
// the decision: its count against the daily limit (one) is released, so
// the next run's action runs without a person, and the day counts one.
func TestCancelledRunReleasesItsGateCount(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	auto := automation.New(automation.Config{Store: st, Clock: clk})
	gate := &settleGate{Gate: auto.Gate(), settled: make(chan error, 4)}
	b := openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) { c.Gate = gate })
	prov := &blocking{entered: make(chan struct{}, 4), release: make(chan struct{})}
	if err := b.reg.Register(prov); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := automation.ParsePatch([]byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0, "daily_limit": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.UpdateWorkspace(ctx, tenant, "usr_test", p); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"act","type":"execute","capability":"test.block","config":{"args":{"n":1}}}]`)
	settled := func() error {
		t.Helper()
		return testwait.Recv(t, gate.settled, "the gate's decision settled")
	}

	first := b.start(t, def.ID)
	testwait.Recv(t, prov.entered, "the first run's call")
	if _, err := b.eng.Cancel(ctx, runengine.CancelParams{Tenant: tenant, RunID: first, Actor: "usr_test"}); err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, first, "cancelled", status(runengine.RunCancelled))
	close(prov.release)
	if err := settled(); err == nil {
		t.Fatal("the cancelled run's decision settled as committed")
	}

	second := b.start(t, def.ID)
	b.waitRun(t, second, "completed", status(runengine.RunCompleted))
	if err := settled(); err != nil {
		t.Fatalf("the completed run's decision settled with %v", err)
	}
	v, err := auto.Workspace(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if v.AutomaticToday != 1 {
		t.Errorf("automatic today %d, want 1 (the completed run's)", v.AutomaticToday)
	}
	third := b.start(t, def.ID)
	b.waitRun(t, third, "waiting for approval", stepStatus("act", runengine.StepWaitingApproval))
}
