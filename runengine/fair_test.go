package runengine_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// queueProvider fills test.queue: each call records its args' label and
// waits for one value of next.
type queueProvider struct {
	next     chan struct{}
	mu       sync.Mutex
	order    []string
	inFlight int // calls not yet returned
}

func (p *queueProvider) Info() capability.Info {
	return capability.Info{ID: "test.queuer", Name: "Queuer", Kind: capability.KindBuiltin, Capabilities: []string{"test.queue"}}
}

func (p *queueProvider) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "test.queue", Name: "Queue", Description: "Waits its turn.", Args: obj, Result: obj}}
}

func (p *queueProvider) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	var args struct{ Label string }
	_ = json.Unmarshal(c.Args, &args)
	p.mu.Lock()
	p.order = append(p.order, args.Label)
	p.inFlight++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	select {
	case <-p.next:
		return json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// idle reports whether every call made has returned.
func (p *queueProvider) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight == 0
}

func (p *queueProvider) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.order...)
}

// TestTenantCallCapAndPriority caps a tenant at one call in flight: its
// other runs' calls queue, high priority first, while another tenant's
// run goes on at once.
func TestTenantCallCapAndPriority(t *testing.T) {
	t.Parallel()
	q := &queueProvider{next: make(chan struct{})}
	b := openChanged(t, func(c *runengine.Config) { c.MaxCallsPerTenant = 1 }, q)
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
	start := func(tenantID, processID, label, priority string) string {
		raw, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenantID, ProcessID: processID,
			Subject: runengine.Subject{Type: "t", Label: label}, Priority: priority})
		if err != nil {
			t.Fatal(err)
		}
		return runID(t, raw)
	}
	a := start(tenant, def.ID, "a", "")
	waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
	low := start(tenant, def.ID, "low", runengine.PriorityLow)
	high := start(tenant, def.ID, "high", runengine.PriorityHigh)
	// Another tenant is not held by this one's cap.
	otherDef, err := b.procs.Create(ctx, "ten_other", "usr", mustIn(t, `{"name":"o","trigger":{"type":"manual"},
	  "steps":[{"key":"call","type":"execute","capability":"test.echo","config":{"args":{}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	other := start("ten_other", otherDef.ID, "other", "")
	waitFor(t, "the other tenant's run", func() bool {
		r, err := b.eng.GetRun(ctx, "ten_other", other)
		return err == nil && r.Status == runengine.RunCompleted
	})
	if got := q.calls(); len(got) != 1 {
		t.Fatalf("calls over the cap went out: %v", got)
	}
	for range 3 {
		q.next <- struct{}{}
	}
	for _, id := range []string{a, low, high} {
		b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	}
	if diff := cmp.Diff([]string{"a", "high", "low"}, q.calls()); diff != "" {
		t.Errorf("call order (-want +got):\n%s", diff)
	}
	r, _ := b.eng.GetRun(ctx, tenant, high)
	if r.Priority != runengine.PriorityHigh {
		t.Errorf("priority = %q", r.Priority)
	}
}

func mustIn(t *testing.T, raw string) process.ProcessIn {
	t.Helper()
	in, err := process.DecodeIn([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestProcessCallCap caps each process at one call in flight: a second
// run of a busy process waits, a run of another process does not.
func TestProcessCallCap(t *testing.T) {
	t.Parallel()
	q := &queueProvider{next: make(chan struct{})}
	b := openChanged(t, func(c *runengine.Config) { c.MaxCallsPerProcess = 1 }, q)
	ctx := context.Background()
	busy := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
	free := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.echo","config":{"args":{}}}]`)
	start := func(processID, label string) string {
		raw, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: processID, Subject: runengine.Subject{Type: "t", Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		return runID(t, raw)
	}
	first := start(busy.ID, "first")
	waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
	second := start(busy.ID, "second")
	b.waitRun(t, start(free.ID, "free"), "completed", status(runengine.RunCompleted))
	if got := q.calls(); len(got) != 1 {
		t.Fatalf("a second call of the busy process went out: %v", got)
	}
	q.next <- struct{}{}
	q.next <- struct{}{}
	b.waitRun(t, first, "completed", status(runengine.RunCompleted))
	b.waitRun(t, second, "completed", status(runengine.RunCompleted))
}
