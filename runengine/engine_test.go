package runengine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const tenant = "ten_test"

// testProvider is an in-process provider of two capabilities: test.echo
// returns its arguments, test.flaky fails with errs.Unavailable until it has
// failed failures times. It does not say its calls return at once
// (capability.ReturnsAtOnce), as no provider of the workspace does: the
// tests of this package run the call runners' path, the product's
// (atonce_test.go runs the workers' path).
type testProvider struct {
	mu       sync.Mutex
	calls    []capability.Call
	failures int
	failed   int
}

func (p *testProvider) Info() capability.Info {
	return capability.Info{ID: "test.provider", Name: "Test", Kind: capability.KindBuiltin,
		Capabilities: []string{"test.echo", "test.flaky"}}
}

func (p *testProvider) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{
		{ID: "test.echo", Name: "Echo", Description: "Returns its arguments.", Args: obj, Result: obj},
		{ID: "test.flaky", Name: "Flaky", Description: "Fails a few times.", Args: obj, Result: obj},
	}
}

func (p *testProvider) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
	if c.Capability == "test.flaky" && p.failed < p.failures {
		p.failed++
		return nil, errs.Unavailablef("flaky is down")
	}
	return c.Args, nil
}

func (p *testProvider) keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.calls {
		out = append(out, c.IdempotencyKey)
	}
	return out
}

// autoGate lets every action run without a person and records outcomes.
// It does not say it decides at once (runengine.DecidesAtOnce), as the
// workspace's gate does not.
type autoGate struct {
	auto     bool
	mu       sync.Mutex
	outcomes []runengine.Outcome
}

func (g *autoGate) Decide(context.Context, runengine.GateRequest) (runengine.GateDecision, error) {
	if g.auto {
		return runengine.GateDecision{Auto: true, Reason: "automatic"}, nil
	}
	return runengine.GateDecision{Auto: false, Reason: "supervised"}, nil
}

func (g *autoGate) Observe(_ context.Context, o runengine.Outcome) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outcomes = append(g.outcomes, o)
	return nil
}

type bundle struct {
	st    store.Store
	clk   *clock.Fake
	procs *process.Service
	reg   *registry.Registry
	prov  *testProvider
	gate  *autoGate
	eng   *runengine.Engine
}

func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	return open(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true})
}

func open(t *testing.T, st store.Store, clk *clock.Fake, prov *testProvider, gate *autoGate) *bundle {
	t.Helper()
	return openWith(t, st, clk, prov, gate, nil)
}

// openWith is open with a change to the engine's configuration.
func openWith(t *testing.T, st store.Store, clk *clock.Fake, prov *testProvider, gate *autoGate,
	configure func(*runengine.Config)) *bundle {
	t.Helper()
	b := &bundle{st: st, clk: clk, prov: prov, gate: gate}
	var err error
	b.procs = process.NewService(process.Config{Store: st, Clock: clk})
	b.reg = registry.New(registry.Config{Store: st, Clock: clk})
	if err := b.reg.Register(prov); err != nil {
		t.Fatal(err)
	}
	cfg := runengine.Config{Store: st, Clock: clk, Capabilities: b.reg, Processes: b.procs,
		Gate: gate, RetryBase: time.Second}
	if configure != nil {
		configure(&cfg)
	}
	b.eng, err = runengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.eng.Close()
		b.checkStoredRuns(t)
		st.Close()
	})
	return b
}

// create makes a process from JSON steps and trigger.
func (b *bundle) create(t *testing.T, trigger string, steps string) *process.Definition {
	t.Helper()
	raw := `{"name":"Test process","function":"finance","trigger":` + trigger + `,"steps":` + steps + `}`
	in, err := process.DecodeIn([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	def, err := b.procs.Create(context.Background(), tenant, "usr_test", in)
	if err != nil {
		t.Fatalf("create process: %v", err)
	}
	return def
}

func (b *bundle) start(t *testing.T, processID string) string {
	t.Helper()
	r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: processID,
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return r.ID
}

// waitRun waits until the run satisfies cond (the engine works
// asynchronously) and returns it: the engine tells it of each committed
// change of the run.
func (b *bundle) waitRun(t *testing.T, id string, what string, cond func(*runengine.Run) bool) *runengine.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
	defer cancel()
	r, err := b.eng.WaitRunUntil(ctx, tenant, id, cond)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		j, _ := json.MarshalIndent(r, "", "  ")
		t.Fatalf("run never became %s:\n%s", what, j)
	case err != nil:
		t.Fatal(err)
	}
	b.checkStoredRuns(t)
	return r
}

// checkStoredRuns checks that the run records the test's runs left so far
// (waiting, finished) decode by the engine's scanner as by encoding/json.
func (b *bundle) checkStoredRuns(t *testing.T) {
	t.Helper()
	if _, bad, err := runengine.CheckStoredRunDecoding(b.st, tenant); err == nil {
		for _, msg := range bad {
			t.Errorf("stored run: %s", msg)
		}
	}
}

func status(s runengine.RunStatus) func(*runengine.Run) bool {
	return func(r *runengine.Run) bool { return r.Status == s }
}

func stepStatus(key string, s runengine.StepStatus) func(*runengine.Run) bool {
	return func(r *runengine.Run) bool {
		for _, st := range r.Steps {
			if st.Key == key {
				return st.Status == s
			}
		}
		return false
	}
}

// advance moves the fake clock once the scheduler sleeps on it.
func (b *bundle) advance(d time.Duration) { b.clk.Advance(d) }

func TestChainRunsToCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[
		{"key":"one","type":"execute","capability":"test.echo","config":{"args":{"n":1,"who":"${subject.label}"}}},
		{"key":"two","type":"execute","capability":"test.echo","config":{"args":{"prev":"${steps.one.who}"}}},
		{"key":"three","type":"route","config":{"input":{"amount":5},"rules":[{"id":"big","when":{"amount":{"gt":3}},"queue":"big"}],"default":{"queue":"small"}}}
	]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff(map[string]any{"prev": "INV-1"}, r.Steps[1].Output); diff != "" {
		t.Errorf("step two output (-want +got):\n%s", diff)
	}
	if got := r.Steps[2].Output.(map[string]any)["queue"]; got != "big" {
		t.Errorf("route queue = %v, want big", got)
	}
	if diff := cmp.Diff([]string{id + "/one/1", id + "/two/1"}, b.prov.keys()); diff != "" {
		t.Errorf("idempotency keys (-want +got):\n%s", diff)
	}
	if r.CompletedAt == nil || r.CurrentStep != nil {
		t.Errorf("completed run: completed_at %v, current_step %v", r.CompletedAt, r.CurrentStep)
	}
}

func TestHumanTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[
		{"key":"check","type":"human_task","config":{"title":"Check ${subject.label}","actions":["accept","refuse"],
		 "fields":[{"key":"note","label":"Note","required":true},{"key":"amount","label":"Amount","type":"number"}]}},
		{"key":"after","type":"execute","capability":"test.echo","config":{"args":{"outcome":"${steps.check.outcome}"}}}
	]`)
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting", stepStatus("check", runengine.StepWaitingTask))
	taskID := *r.Steps[0].TaskID
	ctx := context.Background()
	task, err := b.eng.GetTask(ctx, tenant, taskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Check INV-1" || task.Status != runengine.TaskOpen {
		t.Fatalf("task = %+v", task)
	}
	// Every violation at once: an unknown action, a missing field, a wrong type.
	_, err = b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "maybe",
		Fields: map[string]any{"amount": "ten"}, Actor: "usr_b"})
	want := []string{"action: must be one of: accept, refuse", "fields.amount: must be a number", "fields.note: is required"}
	var got []string
	for _, v := range errs.Violations(err) {
		got = append(got, v.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("violations (-want +got):\n%s", diff)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "accept",
		Fields: map[string]any{"note": "fine", "amount": 12.5}, Actor: "usr_b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "accept",
		Fields: map[string]any{"note": "again"}, Actor: "usr_b"}); !errors.Is(err, errs.Conflict) {
		t.Fatalf("second completion: %v, want conflict", err)
	}
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff(map[string]any{"outcome": "accept"}, r.Steps[1].Output); diff != "" {
		t.Errorf("after output (-want +got):\n%s", diff)
	}
	// Another tenant cannot see the task.
	if _, err := b.eng.GetTask(ctx, "ten_other", taskID); !errors.Is(err, errs.NotFound) {
		t.Errorf("other tenant: %v", err)
	}
}
