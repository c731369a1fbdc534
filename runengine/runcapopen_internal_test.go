package runengine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// heldCalls fills test.held: each call notes its args' label and answers
// once the test lets that label go. It ignores its context, so a call in
// flight when its engine closes stays in flight past the close (which
// does not wait for it past the grace period).
type heldCalls struct {
	mu    sync.Mutex
	order []string
	gates map[string]chan struct{}
}

func (p *heldCalls) Info() capability.Info {
	return capability.Info{ID: "test.holder", Name: "Holder", Kind: capability.KindBuiltin, Capabilities: []string{"test.held"}}
}

func (p *heldCalls) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.held", Name: "Held", Description: "Answers when let go.", Args: obj, Result: obj}}
}

func (p *heldCalls) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	var args struct{ Label string }
	_ = json.Unmarshal(c.Args, &args)
	p.mu.Lock()
	p.order = append(p.order, args.Label)
	p.mu.Unlock()
	<-p.gate(args.Label)
	return json.RawMessage(`{}`), nil
}

// gate is the channel the calls of label wait on.
func (p *heldCalls) gate(label string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gates == nil {
		p.gates = map[string]chan struct{}{}
	}
	ch := p.gates[label]
	if ch == nil {
		ch = make(chan struct{})
		p.gates[label] = ch
	}
	return ch
}

// let lets the calls of label answer, now and after.
func (p *heldCalls) let(label string) { close(p.gate(label)) }

func (p *heldCalls) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.order)
}

// capsSeen is what a run cap holds: the runs holding a slot and those
// queued for one, by id.
type capsSeen struct {
	Inflight        int
	Holders, Queued []string
}

func seeCaps(a *admission, tenant string) capsSeen {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s capsSeen
	if ts := a.tenants[tenant]; ts != nil {
		s.Inflight = ts.inflight
		for _, q := range ts.queue {
			for _, c := range q {
				s.Queued = append(s.Queued, c.runID)
			}
		}
	}
	for k := range a.holders {
		s.Holders = append(s.Holders, k.runID)
	}
	slices.Sort(s.Holders)
	return s
}

// TestRunCapResumesHoldersFirst: with a cap of one run, a run that took
// its slot ahead of an older one (a high priority run) is in flight when
// the engine closes. The next engine resumes the runs in the active
// index's order, the older waiting run first: it must not take the slot
// the younger run holds. Before, it took it, as the younger run was not
// counted yet, and both ran (two runs over a cap of one; and a normal
// priority run could so go before a high priority one that waited).
func TestRunCapResumesHoldersFirst(t *testing.T) {
	t.Parallel()
	const tenant = heldTenant
	// One worker: the commands of Open's recovery are handled in the
	// active index's order.
	rig := newHeldRig(t, Config{Workers: 1, MaxRunsPerTenant: 1, Grace: time.Millisecond, Gate: autoDecides{}}, "old", "young")
	p, eng, start := rig.p, rig.eng, rig.start
	start("first", "")
	testwait.Until(t, "the first run's call", func() bool { return len(p.calls()) == 1 })
	old := start("old", "")
	young := start("young", PriorityHigh)
	p.let("first")
	testwait.Until(t, "the young run's call", func() bool { return len(p.calls()) == 2 })
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	eng = rig.reopen()
	testwait.Until(t, "the young run counted as holding its slot", func() bool {
		return slices.Contains(seeCaps(eng.runCaps, tenant).Holders, young)
	})
	if diff := cmp.Diff(capsSeen{Inflight: 1, Holders: []string{young}, Queued: []string{old}}, seeCaps(eng.runCaps, tenant)); diff != "" {
		t.Fatalf("the run cap once the runs are resumed (-want +got):\n%s", diff)
	}
	p.let("young")
	testwait.Until(t, "the old run's call", func() bool { return len(p.calls()) == 4 })
	p.let("old")
	rig.waitCompleted(young, old)
	if diff := cmp.Diff([]string{"first", "young", "young", "old"}, p.calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// heldRig is an engine over a memory store, opened again on that store
// as a test needs, with a process of heldTenant that calls test.held with
// its subject's label.
type heldRig struct {
	t         *testing.T
	p         *heldCalls
	open      func() (*Engine, *process.Service)
	eng       *Engine
	processID string
}

// heldTenant is the tenant of a heldRig's process and runs.
const heldTenant = "ten_a"

// newHeldRig opens the first engine with cfg; the test's cleanup lets
// the calls of labels go, so none is left held.
func newHeldRig(t *testing.T, cfg Config, labels ...string) *heldRig {
	t.Helper()
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	r := &heldRig{t: t, p: &heldCalls{}}
	t.Cleanup(func() {
		for _, l := range labels {
			if ch := r.p.gate(l); !isClosed(ch) {
				close(ch)
			}
		}
	})
	r.open = func() (*Engine, *process.Service) { return openOn(t, st, clk, cfg, r.p) }
	var procs *process.Service
	r.eng, procs = r.open()
	def := createNew(t, procs, heldTenant, `{"name":"Held","trigger":{"type":"manual"},
		"steps":[{"key":"call","type":"execute","capability":"test.held","config":{"args":{"label":"${subject.label}"}}}]}`)
	r.processID = def.ID
	return r
}

// start starts a run of the process on the current engine, its subject
// labelled label, and returns its id.
func (r *heldRig) start(label, priority string) string {
	r.t.Helper()
	run, err := r.eng.Start(context.Background(), StartParams{Tenant: heldTenant, ProcessID: r.processID, Priority: priority, Subject: Subject{Type: "t", Label: label}})
	if err != nil {
		r.t.Fatal(err)
	}
	return run.ID
}

// reopen opens the next engine on the store (the test closes the current
// one first) and returns it.
func (r *heldRig) reopen() *Engine {
	r.eng, _ = r.open()
	return r.eng
}

// waitCompleted waits until each run of ids completed on the current engine.
func (r *heldRig) waitCompleted(ids ...string) {
	r.t.Helper()
	for _, id := range ids {
		wctx, cancel := context.WithTimeout(context.Background(), testwait.Limit)
		run, err := r.eng.WaitRunUntil(wctx, heldTenant, id, func(r *Run) bool { return r.Status == RunCompleted })
		cancel()
		if err != nil {
			r.t.Fatalf("run %s never completed: %v (%+v)", id, err, run)
		}
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRunCapResumedByPriority: while the engine resumes its runs, a run
// waiting for a slot, or a new one, takes none though there is room, and
// a run that held one before is counted; once every run is resumed, the
// free slots go to the waiting runs highest priority first, oldest first
// within a priority.
func TestRunCapResumedByPriority(t *testing.T) {
	t.Parallel()
	const tenant = "ten_a"
	a := newAdmission("run", 2, 0)
	var started []string
	later := func(id string) func() { return func() { started = append(started, id) } }
	a.resume()
	for _, r := range []struct{ id, priority string }{{"low", PriorityLow}, {"normal", ""}, {"high", PriorityHigh}} {
		if a.tryAdmit(tenant, "prc", r.priority, r.id, later(r.id)) {
			t.Fatalf("%s took a slot while the runs are resumed", r.id)
		}
	}
	if a.tryTake(tenant, "prc", "new") {
		t.Fatal("a new run took a slot while the runs are resumed")
	}
	a.hold(tenant, "prc", "held")
	if got, want := a.reasonFor(tenant, "prc"), "run cap of the tenant: the runs in flight are resumed first"; got != want {
		t.Errorf("reason while resuming: %q, want %q", got, want)
	}
	a.resumed()
	if diff := cmp.Diff([]string{"high"}, started); diff != "" {
		t.Errorf("started once resumed (-want +got):\n%s", diff)
	}
	a.release(tenant, "prc", "held")
	a.release(tenant, "prc", "high")
	if diff := cmp.Diff([]string{"high", "normal", "low"}, started); diff != "" {
		t.Errorf("started as slots freed (-want +got):\n%s", diff)
	}
	want := capsSeen{Inflight: 2, Holders: []string{"low", "normal"}}
	if diff := cmp.Diff(want, seeCaps(a, tenant)); diff != "" {
		t.Errorf("the run cap at the end (-want +got):\n%s", diff)
	}
}
