package runengine_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// whereProvider answers where.echo with its arguments and notes, for each
// call, whether the run's worker made it (rather than a call runner).
type whereProvider struct {
	mu       sync.Mutex
	inWorker []bool
}

func (p *whereProvider) Info() capability.Info {
	return capability.Info{ID: "where.provider", Name: "Where", Kind: capability.KindBuiltin, Capabilities: []string{"where.echo"}}
}

func (p *whereProvider) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "where.echo", Name: "Echo", Description: "Returns its arguments.", Args: obj, Result: obj}}
}

func (p *whereProvider) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	here := madeByWorker()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inWorker = append(p.inWorker, here)
	return c.Args, nil
}

func (p *whereProvider) calls() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.inWorker...)
}

// madeByWorker tells whether the calling goroutine is a run's worker
// making a call itself.
func madeByWorker() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "runengine.(*worker).makeCall") {
			return true
		}
		if !more {
			return false
		}
	}
}

// atOnceProvider is a whereProvider that says its calls never block.
type atOnceProvider struct{ *whereProvider }

func (atOnceProvider) ReturnsAtOnce() {}

// atOnceGate is autoGate saying it decides at once
// (runengine.DecidesAtOnce), so that the calls of a provider that returns at
// once, which ask the gate first, are made in the run's worker. A provider
// that does not say so takes the call runners' path whatever the gate.
type atOnceGate struct{ *autoGate }

// DecidesAtOnce: it decides in memory.
func (atOnceGate) DecidesAtOnce() {}

// plainGate answers automatic and does not say it decides at once.
type plainGate struct{}

func (plainGate) Decide(context.Context, runengine.GateRequest) (runengine.GateDecision, error) {
	return runengine.GateDecision{Auto: true, Reason: "automatic"}, nil
}

func (plainGate) Observe(context.Context, runengine.Outcome) error { return nil }

// panicGate panics at its first decision and answers automatic after.
type panicGate struct {
	mu       sync.Mutex
	panicked bool
}

func (g *panicGate) Decide(context.Context, runengine.GateRequest) (runengine.GateDecision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.panicked {
		g.panicked = true
		panic("gate broke")
	}
	return runengine.GateDecision{Auto: true, Reason: "automatic"}, nil
}

func (g *panicGate) Observe(context.Context, runengine.Outcome) error { return nil }

// panicGateAtOnce is a panicGate that says it decides at once.
type panicGateAtOnce struct{ *panicGate }

func (panicGateAtOnce) DecidesAtOnce() {}

// openWhere opens an engine whose capabilities are prov's alone, behind
// gate.
func openWhere(t *testing.T, prov capability.Provider, gate runengine.Gate) *bundle {
	t.Helper()
	return openWhereWrapped(t, prov, gate, false)
}

// embedsRegistry is an embedder's Caller around the registry: it has the
// registry's ReturnsAtOnce by embedding, but its own Call could block.
type embedsRegistry struct{ *registry.Registry }

// openWhereWrapped is openWhere with the registry wrapped in an
// embedsRegistry when wrap.
func openWhereWrapped(t *testing.T, prov capability.Provider, gate runengine.Gate, wrap bool) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	return openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(cfg *runengine.Config) {
		reg := registry.New(registry.Config{Store: st, Clock: clk})
		if err := reg.Register(prov); err != nil {
			t.Fatal(err)
		}
		cfg.Capabilities, cfg.Gate = reg, gate
		if wrap {
			cfg.Capabilities = embedsRegistry{reg}
		}
	})
}

const whereSteps = `[
	{"key":"one","type":"execute","capability":"where.echo","config":{"args":{"i":1}}},
	{"key":"two","type":"execute","capability":"where.echo","config":{"args":{"i":2}}}]`

// TestCallsThatReturnAtOnceAreMadeInTheWorker: a step's call is made by the
// run's worker itself when its provider returns at once and so does the
// gate it asks first and the registry itself is the engine's Caller (a
// Caller that embeds it does not inherit its word that calls return at
// once); else by a call runner. Either way the run completes
// with the calls' results.
func TestCallsThatReturnAtOnceAreMadeInTheWorker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		atOnce   bool // the provider says its calls never block
		gate     runengine.Gate
		wrap     bool // a Caller embedding the registry calls
		inWorker bool
	}{
		{"provider and gate at once", true, atOnceGate{&autoGate{auto: true}}, false, true},
		{"gate may block", true, plainGate{}, false, false},
		{"provider may block", false, atOnceGate{&autoGate{auto: true}}, false, false},
		{"a Caller embedding the registry", true, atOnceGate{&autoGate{auto: true}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wp := &whereProvider{}
			var prov capability.Provider = wp
			if tc.atOnce {
				prov = atOnceProvider{wp}
			}
			b := openWhereWrapped(t, prov, tc.gate, tc.wrap)
			def := b.create(t, `{"type":"manual"}`, whereSteps)
			id := b.start(t, def.ID)
			r := b.waitRun(t, id, "completed", func(r *runengine.Run) bool { return r.Finished() })
			if r.Status != runengine.RunCompleted {
				t.Fatalf("run %s, want completed", r.Status)
			}
			got := []any{r.Steps[0].Output, r.Steps[1].Output}
			want := []any{map[string]any{"i": 1.0}, map[string]any{"i": 2.0}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("step outputs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]bool{tc.inWorker, tc.inWorker}, wp.calls()); diff != "" {
				t.Errorf("calls made by the worker (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGatePanicFailsTheCall: a panic of the gate, in the run's worker (a
// gate that decides at once) or on a call runner, fails the step's call
// as an error would (the step is retried) and the engine goes on.
func TestGatePanicFailsTheCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		gate     runengine.Gate
		inWorker bool
	}{
		{"in the worker", panicGateAtOnce{&panicGate{}}, true},
		{"on a call runner", &panicGate{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wp := &whereProvider{}
			b := openWhere(t, atOnceProvider{wp}, tc.gate)
			def := b.create(t, `{"type":"manual"}`, whereSteps)
			id := b.start(t, def.ID)
			r := b.waitRun(t, id, "retrying its first step", func(r *runengine.Run) bool { return r.Steps[0].Error != nil })
			if msg := *r.Steps[0].Error; !strings.Contains(msg, "panicked: gate broke") {
				t.Errorf("step error %q, want the gate's panic", msg)
			}
			b.clk.Advance(2 * time.Second) // openWith retries after a second
			r = b.waitRun(t, id, "completed", func(r *runengine.Run) bool { return r.Finished() })
			if r.Status != runengine.RunCompleted {
				t.Fatalf("run %s, want completed", r.Status)
			}
			if diff := cmp.Diff([]bool{tc.inWorker, tc.inWorker}, wp.calls()); diff != "" {
				t.Errorf("calls made by the worker (-want +got):\n%s", diff)
			}
		})
	}
}
