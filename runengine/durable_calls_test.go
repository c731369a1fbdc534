package runengine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// gatedStore holds back the commit of the first Update after it is armed
// until a provider was called (or a moment passed), so that a call made
// before that commit is durable is seen deterministically.
type gatedStore struct {
	store.Store
	armed  atomic.Bool
	called chan struct{}
}

func (g *gatedStore) Update(ctx context.Context, fn func(store.Txn) error) error {
	if g.armed.CompareAndSwap(true, false) {
		select {
		case <-g.called:
		case <-time.After(300 * time.Millisecond):
		}
	}
	return g.Store.Update(ctx, fn)
}

// runProbe fills probe.check: it reports whether the calling run is
// stored when it is called.
type runProbe struct {
	eng    func() *runengine.Engine
	called chan struct{}
	once   sync.Once
	found  chan bool
}

func (p *runProbe) Info() capability.Info {
	return capability.Info{ID: "test.probe", Name: "Probe", Kind: capability.KindBuiltin, Capabilities: []string{"probe.check"}}
}

func (p *runProbe) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "probe.check", Name: "Probe", Description: "Checks the run is stored.", Args: obj, Result: obj}}
}

func (p *runProbe) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	p.once.Do(func() { close(p.called) })
	runID, _, _ := strings.Cut(c.IdempotencyKey, "/")
	_, err := p.eng().GetRun(ctx, c.Tenant, runID)
	select {
	case p.found <- err == nil:
	default:
	}
	return json.RawMessage(`{}`), nil
}

// TestCallsWaitForTheRunToBeDurable: a new run's first call must go out
// only once the run's start is durable. A call made before would, after a
// crash, have acted for a run that does not exist; the caller, never
// answered, starts again, and the new run calls again under new
// idempotency keys (the crash test of examples/server sees such messages).
func TestCallsWaitForTheRunToBeDurable(t *testing.T) {
	t.Parallel()
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &gatedStore{Store: inner, called: make(chan struct{})}
	clk := clock.NewFake(t0)
	procs := process.NewService(process.Config{Store: st, Clock: clk})
	reg := registry.New(registry.Config{Store: st, Clock: clk})
	var eng *runengine.Engine
	probe := &runProbe{eng: func() *runengine.Engine { return eng }, called: st.called, found: make(chan bool, 1)}
	if err := reg.Register(probe); err != nil {
		t.Fatal(err)
	}
	eng, err = runengine.New(runengine.Config{Store: st, Clock: clk, Capabilities: reg, Processes: procs,
		Gate: &autoGate{auto: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Close()
		inner.Close()
	})
	in, err := process.DecodeIn([]byte(`{"name": "Probe", "trigger": {"type": "manual"},
	  "steps": [{"key": "probe", "type": "execute", "capability": "probe.check", "config": {"args": {}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := procs.Create(context.Background(), tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	st.armed.Store(true)
	if _, err := eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
		Subject: runengine.Subject{Type: "probe", Label: "P-1"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case found := <-probe.found:
		if !found {
			t.Error("the provider was called before the run's start was durable")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the provider was never called")
	}
}
