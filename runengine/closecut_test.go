package runengine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// cutAtClose blocks its first gate decision (gate) or capability call
// (!gate) until the engine's context is cancelled, as Close does past its
// grace period, and then fails with the context's error; the rest answer
// at once. It says it returns and decides at once, so the run's worker
// asks and calls it itself, and takes the failed result before it stops:
// the order is the same in every run.
type cutAtClose struct {
	gate    bool
	entered chan struct{} // closed once it blocks
	mu      sync.Mutex
	blocked bool
	keys    []string
}

func (p *cutAtClose) Info() capability.Info {
	return capability.Info{ID: "test.cutter", Name: "Cutter", Kind: capability.KindBuiltin, Capabilities: []string{"test.cut"}}
}

func (p *cutAtClose) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.cut", Name: "Cut", Description: "Waits for the engine to close once.", Args: obj, Result: obj}}
}

// ReturnsAtOnce: the worker makes the call itself.
func (p *cutAtClose) ReturnsAtOnce() {}

// DecidesAtOnce: the worker asks the gate itself.
func (p *cutAtClose) DecidesAtOnce() {}

// block blocks the first time it is asked when mine, until ctx is done.
func (p *cutAtClose) block(ctx context.Context, mine bool) error {
	p.mu.Lock()
	first := mine && !p.blocked
	p.blocked = p.blocked || first
	p.mu.Unlock()
	if !first {
		return nil
	}
	close(p.entered)
	<-ctx.Done()
	return ctx.Err()
}

func (p *cutAtClose) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	p.mu.Lock()
	p.keys = append(p.keys, c.IdempotencyKey)
	p.mu.Unlock()
	if err := p.block(ctx, !p.gate); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

func (p *cutAtClose) Decide(ctx context.Context, _ runengine.GateRequest) (runengine.GateDecision, error) {
	if err := p.block(ctx, p.gate); err != nil {
		return runengine.GateDecision{}, err
	}
	return runengine.GateDecision{Auto: true, Reason: "automatic"}, nil
}

func (p *cutAtClose) Observe(context.Context, runengine.Outcome) error { return nil }

func (p *cutAtClose) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

// TestCallCutByCloseIsNoAttempt closes the engine while a run's gate
// decision or capability call is in flight past the grace period: Close
// cancels its context, and the call (or the gate) fails with that error.
// The failure is the close's, not the call's: the run is stored running,
// its call not counted as an attempt (no retry waits on a timer, no
// approval is asked instead of the gate's answer), and the next engine on
// the store makes the call again, with the same idempotency key, and
// completes the run. Before, the worker took the failure as the call's: a
// retry a backoff later (never, on a fake clock), or a person asked to
// approve.
func TestCallCutByCloseIsNoAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gate bool
		keys []string
	}{
		{"call", false, []string{"/call/1", "/call/1"}},
		{"gate", true, []string{"/call/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &cutAtClose{gate: tc.gate, entered: make(chan struct{})}
			withCut := func(c *runengine.Config) { c.Gate = p; c.Grace = time.Millisecond }
			b := openChanged(t, withCut, p)
			ctx := context.Background()
			def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.cut","config":{"args":{}}}]`)
			id := b.start(t, def.ID)
			testwait.Recv(t, (<-chan struct{})(p.entered), "the call to block")
			b.eng.Close()
			cfg := runengine.Config{Store: b.st, Clock: b.clk, Capabilities: b.reg, Processes: b.procs}
			withCut(&cfg)
			eng, err := runengine.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b.eng = eng
			type seen struct {
				Status          runengine.RunStatus
				Step            runengine.StepStatus
				Attempts        int
				Error, Approval bool
			}
			r, err := eng.GetRun(ctx, tenant, id)
			if err != nil {
				t.Fatal(err)
			}
			st := r.Steps[0]
			got := seen{r.Status, st.Status, st.Attempts, st.Error != nil, st.ApprovalID != nil}
			if diff := cmp.Diff(seen{Status: runengine.RunRunning, Step: runengine.StepRunning}, got); diff != "" {
				t.Fatalf("the run after the close (-want +got):\n%s", diff)
			}
			if err := eng.Open(ctx); err != nil {
				t.Fatal(err)
			}
			b.waitRun(t, id, "completed", status(runengine.RunCompleted))
			want := make([]string, len(tc.keys))
			for i, k := range tc.keys {
				want[i] = id + k
			}
			if diff := cmp.Diff(want, p.calls()); diff != "" {
				t.Errorf("calls by idempotency key (-want +got):\n%s", diff)
			}
		})
	}
}
