package runengine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/google/go-cmp/cmp"
)

// numbered fills test.number: each call tells entered, then answers
// {"n": its number} once the test sends on its number's release channel.
type numbered struct {
	calls   atomic.Int32
	entered chan int
	release [2]chan struct{}
}

func (p *numbered) Info() capability.Info {
	return capability.Info{ID: "test.numbered", Name: "Numbered", Kind: capability.KindBuiltin, Capabilities: []string{"test.number"}}
}

func (p *numbered) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.number", Name: "Number", Description: "Answers its call's number.", Args: obj, Result: obj}}
}

func (p *numbered) Call(ctx context.Context, _ capability.Call) (json.RawMessage, error) {
	n := int(p.calls.Add(1))
	if n > len(p.release) {
		return json.RawMessage(`{"n": 0}`), nil
	}
	p.entered <- n
	select {
	case <-p.release[n-1]:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return json.Marshal(map[string]int{"n": n})
}

// numberedEngine opens a memEngine with cfg's settings and a numbered
// provider registered, which it returns too.
func numberedEngine(t *testing.T, cfg Config) (*Engine, *process.Service, *numbered) {
	t.Helper()
	eng, procs := memEngine(t, cfg)
	p := &numbered{entered: make(chan int, 2), release: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
	if err := eng.cfg.Capabilities.(*registry.Registry).Register(p); err != nil {
		t.Fatal(err)
	}
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng, procs, p
}

// TestStaleCallResultRefused: a run reloaded while its call is on its way
// makes the call again (same step, same attempt, same idempotency key).
// The first call's result, answered after that, is stale: the run takes
// only the result of the call it awaits. With one token for every call,
// the first result to come was taken, whichever call it answered.
func TestStaleCallResultRefused(t *testing.T) {
	eng, procs, p := numberedEngine(t, Config{})
	ctx := context.Background()
	in, err := process.DecodeIn([]byte(`{"name": "Watch", "function": "operations", "trigger": {"type": "manual"},
		"steps": [{"key": "watch", "type": "monitor", "capability": "test.number",
		  "config": {"args": {}, "condition": {"value.n": 2}, "interval": "1h", "timeout": "3h"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	const tenant = "ten_a"
	def, err := procs.Create(ctx, tenant, "usr_a", in)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "order", Label: "PO-1"}})
	if err != nil {
		t.Fatal(err)
	}
	id := r.ID
	if n := testwait.Recv(t, p.entered, "the first call"); n != 1 {
		t.Fatalf("call %d, want 1", n)
	}
	// The run is reloaded from the store (as after a failed commit) and
	// makes its call again. The first call answers once the reload is
	// queued, so its result reaches the run after the reload, the run
	// awaiting the second call.
	eng.workerFor(id).send(&command{kind: cmdReload, tenant: tenant, runID: id})
	close(p.release[0])
	if n := testwait.Recv(t, p.entered, "the call made again"); n != 2 {
		t.Fatalf("call %d, want 2", n)
	}
	close(p.release[1])
	wctx, cancel := context.WithTimeout(ctx, testwait.Limit)
	defer cancel()
	got, err := eng.WaitRunUntil(wctx, tenant, id, func(r *Run) bool { return r.Status == RunCompleted || r.Status == RunWaiting })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"held": true, "checks": float64(1), "value": map[string]any{"n": float64(2)}}
	if diff := cmp.Diff(want, got.Steps[0].Output); got.Status != RunCompleted || diff != "" {
		t.Errorf("run %s, the monitor's output (-want +got):\n%s", got.Status, diff)
	}
}
