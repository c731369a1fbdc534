//go:build failpoints

package runengine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// waitingMail is the outbox (a callwrites.Joiner) whose calls tell entered
// and wait for release before they hand their message over.
type waitingMail struct {
	*mail.Provider
	entered, release chan struct{}
}

func (p *waitingMail) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	p.entered <- struct{}{}
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.Provider.Call(ctx, c)
}

// joinSettleGate is the automation app's gate (which joins the call's
// commit), telling settled how the commit carrying each decision it
// handed over ended.
type joinSettleGate struct {
	*automation.Service
	settled chan error
}

func (g *joinSettleGate) Decide(ctx context.Context, req runengine.GateRequest) (runengine.GateDecision, error) {
	d, err := g.Service.Decide(ctx, req)
	if w := callwrites.From(ctx); w != nil && w.Joins && err == nil {
		w.OnSettled(func(err error) { g.settled <- err })
	}
	return d, err
}

// keysWith counts the keys of st that contain part.
func keysWith(t *testing.T, st store.Store, part string) int {
	t.Helper()
	n := 0
	err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{}, func(key, _ []byte) error {
			if bytes.Contains(key, []byte(part)) {
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFailpointFirstCommitFailsAfterAJoiningCall: a new run's email.send
// through the automation gate goes out before the run's first commit (both
// join it). When that commit fails, with the call's result in it or with
// the call still in flight (the start's answer could wait no longer), the
// caller gets an error and nothing is left: no run, no message, no gate
// decision, and the gate's count (daily limit one) is released, so the
// next run's action runs without a person and the day counts one.
func TestFailpointFirstCommitFailsAfterAJoiningCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	check := func(t *testing.T, b *bundle, st store.Store, auto *automation.Service, runs, messages, today int) {
		t.Helper()
		rs, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{}, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := mail.List(ctx, st, tenant, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		v, err := auto.Workspace(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		got := []int{len(rs), len(msgs), keysWith(t, st, "gatedecision"), v.AutomaticToday}
		if diff := cmp.Diff([]int{runs, messages, runs, today}, got); diff != "" {
			t.Errorf("runs, messages, gate decisions, automatic today (-want +got):\n%s", diff)
		}
	}
	startOK := func(t *testing.T, b *bundle, processID string) {
		t.Helper()
		r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: processID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-2"}, Actor: "usr_test"})
		if err != nil {
			t.Fatalf("the second start: %v", err)
		}
		b.waitRun(t, r.ID, "completed without a person", status(runengine.RunCompleted))
	}

	t.Run("with its result", func(t *testing.T) {
		t.Parallel()
		var called, failed atomic.Int32
		b, auto, st := openMail(t, false, 1, func(c *runengine.Config) {
			c.Failpoints.AfterCall = func(_, _, _ string) { called.Add(1) }
			c.Failpoints.InGroupCommit = func(int) error {
				if called.Load() > 0 && failed.CompareAndSwap(0, 1) {
					return errors.New("failpoint: the group commit fails")
				}
				return nil
			}
		})
		def := b.create(t, `{"type":"manual"}`, mailSteps)
		_, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
		if err == nil || failed.Load() != 1 {
			t.Fatalf("the start answered %v (the commit failed: %v), want an error", err, failed.Load() == 1)
		}
		check(t, b, st, auto, 0, 0, 0)
		startOK(t, b, def.ID)
		check(t, b, st, auto, 1, 1, 1)
	})

	t.Run("in flight", func(t *testing.T) {
		t.Parallel()
		st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		clk := clock.NewFake(t0)
		auto := automation.New(automation.Config{Store: st, Clock: clk})
		gate := &joinSettleGate{Service: auto, settled: make(chan error, 4)}
		prov := &waitingMail{Provider: mail.NewProvider(st, clk), entered: make(chan struct{}, 4), release: make(chan struct{})}
		var failed atomic.Int32
		b := openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
			reg := registry.New(registry.Config{Store: st, Clock: clk})
			if err := reg.Register(prov); err != nil {
				t.Fatal(err)
			}
			c.Capabilities, c.Gate = reg, gate
			c.Failpoints.InGroupCommit = func(int) error {
				if failed.Load() != 0 {
					return nil
				}
				// The run's first commit, made while its call is in
				// flight: the call went out before it.
				select {
				case <-prov.entered:
				case <-time.After(5 * time.Second):
					return nil
				}
				failed.Store(1)
				return errors.New("failpoint: the group commit fails")
			}
		})
		p, err := automation.ParsePatch([]byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0, "daily_limit": 1}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := auto.UpdateWorkspace(ctx, tenant, "usr_test", p); err != nil {
			t.Fatal(err)
		}
		def := b.create(t, `{"type":"manual"}`, mailSteps)
		_, err = b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
		if err == nil || failed.Load() != 1 {
			t.Fatalf("the start answered %v (the commit failed while the call was in flight: %v), want an error",
				err, failed.Load() == 1)
		}
		close(prov.release) // the call's result finds no run: it is dropped
		if err := testwait.Recv(t, gate.settled, "the lost run's gate decision settled"); err == nil {
			t.Fatal("the lost run's gate decision settled as committed")
		}
		check(t, b, st, auto, 0, 0, 0)
		startOK(t, b, def.ID)
		if err := testwait.Recv(t, gate.settled, "the second run's gate decision settled"); err != nil {
			t.Fatalf("the second run's gate decision settled with %v", err)
		}
		check(t, b, st, auto, 1, 1, 1)
	})
}

// joinAllGate answers automatic and hands nothing over: it joins the
// call's commit trivially (runengine's joiningGate).
type joinAllGate struct{ autoGate }

func (*joinAllGate) JoinsCallWrites(callwrites.Mark) bool { return true }

// stepStarts tells started the key of each step that begins.
type stepStarts struct {
	started chan string
}

func (o *stepStarts) RunStarted(runengine.RunNote)                       {}
func (o *stepStarts) RunFinished(runengine.RunNote, runengine.RunStatus) {}
func (o *stepStarts) StepStarted(s runengine.StepNote)                   { o.started <- s.StepKey }
func (o *stepStarts) StepFinished(runengine.StepNote)                    {}
func (o *stepStarts) Committed(int, time.Duration, error)                {}

// TestFailpointNotJoiningCallWaitsForTheFirstCommitToLand: a new run's
// first call joins its commit and goes out before it; the first commit
// is submitted while that call is in flight (the start's answer could
// wait no longer), and the call's result comes back before that commit
// is durable. The run's next call, to a provider that is no Joiner, is
// made only once the first commit is durable, not as soon as it was
// submitted.
func TestFailpointNotJoiningCallWaitsForTheFirstCommitToLand(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	joiner := &blocking{entered: make(chan struct{}, 4), release: make(chan struct{})}
	var eng *runengine.Engine
	probe := &runProbe{eng: func() *runengine.Engine { return eng }, called: make(chan struct{}), found: make(chan bool, 1)}
	obs := &stepStarts{started: make(chan string, 8)}
	inCommit, releaseCommit := make(chan struct{}), make(chan struct{})
	var blocked atomic.Bool
	b := openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		reg := registry.New(registry.Config{Store: st, Clock: clk})
		for _, p := range []capability.Provider{joiner, probe} {
			if err := reg.Register(p); err != nil {
				t.Fatal(err)
			}
		}
		c.Capabilities, c.Gate, c.Observer = reg, &joinAllGate{autoGate{auto: true}}, obs
		c.Failpoints.InGroupCommit = func(int) error {
			if blocked.CompareAndSwap(false, true) { // the run's first commit
				close(inCommit)
				select {
				case <-releaseCommit:
				case <-time.After(testwait.Limit):
				}
			}
			return nil
		}
	})
	eng = b.eng
	def := b.create(t, `{"type":"manual"}`, `[
	  {"key": "block", "type": "execute", "capability": "test.block", "config": {"args": {"n": 1}}},
	  {"key": "check", "type": "execute", "capability": "probe.check", "config": {"args": {}}}]`)
	started := make(chan string, 1)
	go func() {
		r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
		if err != nil {
			t.Error(err)
			started <- ""
			return
		}
		started <- r.ID
	}()
	testwait.Recv(t, joiner.entered, "the joining call, made before the first commit")
	testwait.Recv(t, inCommit, "the run's first commit, made while its call is in flight")
	close(joiner.release)
	for key := ""; key != "check"; {
		key = testwait.Recv(t, obs.started, "the second step's start")
	}
	select {
	case <-probe.called:
		t.Error("the provider that is no Joiner was called before the run's first commit was durable")
	case <-time.After(2 * time.Second): // it must not come while the commit is held
	}
	close(releaseCommit)
	id := testwait.Recv(t, started, "the start's answer")
	if id == "" {
		return
	}
	testwait.Recv(t, probe.called, "the second step's call")
	b.waitRun(t, id, "completed", status(runengine.RunCompleted))
}

// laterFailure is a store whose armed commit fails after the next commit
// was ordered behind it, as a store's failure may be told once later
// batches are built: the armed transaction is dropped, and its failure told
// just before the next commit's outcome (or after a while when none comes).
type laterFailure struct {
	store.Store
	pipe    store.Pipeliner
	armed   atomic.Bool
	failing chan struct{} // the armed commit was started
	mu      sync.Mutex
	tell    func() // tells the armed commit's failure, once
}

func (s *laterFailure) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	tx, err := s.pipe.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &laterTxn{PipelinedTxn: tx, s: s}, nil
}

// takeTell returns the armed commit's failure to tell, if not told yet.
func (s *laterFailure) takeTell() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	tell := s.tell
	s.tell = nil
	return tell
}

type laterTxn struct {
	store.PipelinedTxn
	s *laterFailure
}

func (t *laterTxn) CommitAsync(done func(error)) {
	s := t.s
	if s.armed.CompareAndSwap(true, false) {
		t.PipelinedTxn.Discard()
		s.mu.Lock()
		s.tell = func() { done(errors.New("injected: the commit failed")) }
		s.mu.Unlock()
		time.AfterFunc(300*time.Millisecond, func() {
			if tell := s.takeTell(); tell != nil {
				tell()
			}
		})
		s.failing <- struct{}{}
		return
	}
	t.PipelinedTxn.CommitAsync(func(err error) {
		if tell := s.takeTell(); tell != nil {
			tell()
		}
		done(err)
	})
}

// TestFailpointLaterChangeWaitsForTheFirstCommit: a new run's joining call
// outlasts the start's wait, so its first commit goes without the call's
// result; the result then comes while that commit is in flight, and the
// commit fails only after a later one could have been ordered behind it.
// The run's change with the result (its completion, the message, the
// gate's answer) waits for the first commit to land, so nothing of the run
// is stored and its caller hears the failure. Before, it was committed
// behind the first and landed though the first failed: a completed run and
// its message, without its start's writes, after the start had failed.
func TestFailpointLaterChangeWaitsForTheFirstCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &laterFailure{Store: inner, pipe: inner, failing: make(chan struct{}, 1)}
	clk := clock.NewFake(t0)
	auto := automation.New(automation.Config{Store: inner, Clock: clk})
	gate := &joinSettleGate{Service: auto, settled: make(chan error, 4)}
	prov := &waitingMail{Provider: mail.NewProvider(inner, clk), entered: make(chan struct{}, 4), release: make(chan struct{})}
	b := openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		reg := registry.New(registry.Config{Store: inner, Clock: clk})
		if err := reg.Register(prov); err != nil {
			t.Fatal(err)
		}
		c.Capabilities, c.Gate = reg, gate
	})
	p, err := automation.ParsePatch([]byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0, "daily_limit": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.UpdateWorkspace(ctx, tenant, "usr_test", p); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, mailSteps)

	st.armed.Store(true)
	started := make(chan error, 1)
	go func() {
		_, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
		started <- err
	}()
	testwait.Recv(t, prov.entered, "the joining call went out")
	testwait.Recv(t, st.failing, "the run's first commit started, without the call's result")
	close(prov.release) // the result comes while the first commit is in flight
	if err := testwait.Recv(t, started, "the start's answer"); err == nil {
		t.Fatal("the start answered success, though its commit failed")
	}
	if err := testwait.Recv(t, gate.settled, "the gate's answer settled"); err == nil {
		t.Fatal("the gate's answer of the failed run was committed")
	}
	rs, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{}, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := mail.List(ctx, inner, tenant, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 0 || len(msgs) != 0 {
		t.Fatalf("after the failed start: %d runs, %d messages stored, want none", len(rs), len(msgs))
	}
}
