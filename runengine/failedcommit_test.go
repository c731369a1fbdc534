//go:build failpoints

package runengine_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// handoff hands its write to the engine (callwrites), as the outbox does:
// the write commits with the step's result.
type handoff struct{}

func (handoff) Info() capability.Info {
	return capability.Info{ID: "test.handoff", Name: "Handoff", Kind: capability.KindBuiltin, Capabilities: []string{"handoff.do"}}
}

func (handoff) Capabilities() []capability.Capability {
	obj := json.RawMessage(`{"type":"object"}`)
	return []capability.Capability{{ID: "handoff.do", Name: "Handoff", Description: "Hands its write to the engine.", Args: obj, Result: obj}}
}

func (handoff) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	w := callwrites.From(ctx)
	if w == nil {
		return nil, errors.New("handoff: no callwrites")
	}
	key := []byte("handed/" + c.IdempotencyKey)
	w.Add(func(tx store.Txn) error { return tx.Set(key, []byte("1")) })
	return json.Marshal(map[string]any{"handed": c.IdempotencyKey})
}

// handedOver reports whether st holds the write handoff made for the call
// of idempotency key key.
func handedOver(t *testing.T, st store.Store, key string) bool {
	t.Helper()
	var found bool
	if err := st.View(context.Background(), func(rd store.Reader) error {
		_, err := rd.Get([]byte("handed/" + key))
		found = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestFailpointLaterChangeAfterFailedCommit: the commit carrying a step's
// result (and the write its provider handed over) fails, and a change of
// the run that the worker made before it heard of the failure (a pause)
// is still waiting to commit (for that commit to be told). That change holds the run as the worker had
// it, the step done: were it committed, the store would say the step is
// done while the write that goes with it was never made, and the run,
// reloaded from it, would never make it; or, reloaded before it lands,
// the run would not hold the pause its caller was told of. It must fail
// too (its caller told to try again), and the run, reloaded, makes the
// call again.
func TestFailpointLaterChangeAfterFailedCommit(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	var called, failing atomic.Int32
	inHook, release := make(chan struct{}), make(chan struct{})
	waits := make(chan string, 4)
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		c.Failpoints.ChangeWaits = func(_, runID string) { waits <- runID }
		c.Failpoints.AfterCall = func(_, _, _ string) { called.Add(1) }
		c.Failpoints.InGroupCommit = func(int) error {
			if called.Load() == 1 && failing.CompareAndSwap(0, 1) {
				close(inHook)
				<-release
				return errors.New("failpoint: the group commit fails")
			}
			return nil
		}
	})
	if err := b.reg.Register(handoff{}); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, `[{"key":"act","type":"execute","capability":"handoff.do","config":{"args":{}}},
		{"key":"wait","type":"wait","config":{"duration":"24h"}}]`)
	id := b.start(t, def.ID)
	testwait.Recv(t, inHook, "the step's result reached the group commit")
	paused := make(chan error, 1)
	go func() {
		_, err := b.eng.Pause(context.Background(), tenant, id, "usr_test")
		paused <- err
	}()
	select {
	case <-waits: // the pause's change waits for the commit in flight
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the pause's change never waited for the run's commit in flight")
	}
	close(release)
	pauseErr := testwait.Recv(t, paused, "the pause was answered")
	r := b.waitRun(t, id, "past its step act", func(r *runengine.Run) bool { return r.Steps[0].Status == runengine.StepCompleted })
	handed := func() bool { return handedOver(t, st, id+"/act/1") }
	if called.Load() > 1 {
		// The run was reloaded and made the call again: wait for that
		// call's commit, then look at the run as it stands.
		deadline := time.Now().Add(10 * time.Second)
		for !handed() && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		if r, err = b.eng.GetRun(context.Background(), tenant, id); err != nil {
			t.Fatal(err)
		}
	}
	if !handed() {
		t.Errorf("the run's step act is %s (run %s) but the write its provider handed over was never made", r.Steps[0].Status, r.Status)
	}
	if pauseErr == nil && r.Status != runengine.RunPaused {
		t.Errorf("the pause was answered, but the run is %s", r.Status)
	}
}

// pausedBehindFailure is a run already durable whose commit of its step's
// result (with the write handoff hands over) is to fail once a later
// commit could be ordered behind it (see laterFailure), and a pause of
// the run asked while that commit is in flight.
type pausedBehindFailure struct {
	b      *bundle
	inner  store.Store
	st     *laterFailure
	id     string
	called atomic.Int32 // the step's calls made
	waits  chan string  // the runs whose change waited for their commit in flight
	paused chan error   // the pause's answer
}

// pauseBehindFailure starts the run, waits until the commit of its step's
// result started, then asks for the pause.
func pauseBehindFailure(t *testing.T) *pausedBehindFailure {
	t.Helper()
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	p := &pausedBehindFailure{inner: inner, waits: make(chan string, 4), paused: make(chan error, 1)}
	p.st = &laterFailure{Store: inner, pipe: inner, failing: make(chan struct{}, 1)}
	p.b = openWith(t, p.st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		c.Failpoints.AfterCall = func(_, _, _ string) {
			if p.called.Add(1) == 1 {
				p.st.armed.Store(true) // the commit of the first call's result fails
			}
		}
		c.Failpoints.ChangeWaits = func(_, runID string) { p.waits <- runID }
	})
	if err := p.b.reg.Register(handoff{}); err != nil {
		t.Fatal(err)
	}
	def := p.b.create(t, `{"type":"manual"}`, `[{"key":"act","type":"execute","capability":"handoff.do","config":{"args":{}}},
		{"key":"wait","type":"wait","config":{"duration":"24h"}}]`)
	p.id = p.b.start(t, def.ID) // durable once answered: the call goes out after
	testwait.Recv(t, p.st.failing, "the commit of the step's result started")
	go func() {
		_, err := p.b.eng.Pause(context.Background(), tenant, p.id, "usr_test")
		p.paused <- err
	}()
	return p
}

// consistent reads the run from the store and fails the test when it
// shows the step act done without the write its provider handed over.
func (p *pausedBehindFailure) consistent(t *testing.T, when string) *runengine.Run {
	t.Helper()
	r, err := p.b.eng.GetRun(context.Background(), tenant, p.id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps[0].Status == runengine.StepCompleted && !handedOver(t, p.inner, p.id+"/act/1") {
		t.Fatalf("%s: the store shows step act %s (run %s) without the write its provider handed over",
			when, r.Steps[0].Status, r.Status)
	}
	return r
}

// TestFailpointChangeWaitsForTheRunsCommitInFlight: a run already durable
// commits a step's result (with the write its provider handed over), and
// that commit fails only after a later one could have been ordered behind
// it, as a store may tell a failure once later batches are built. The
// run's next change (a pause) waits for the commit in flight to be told,
// so it is never committed behind the failed one: the store never shows
// the step done without its write, the pause's caller hears the failure,
// and the run, read again, makes the call again and goes on. Before, the
// pause went into the batch behind the failed commit and landed, answered
// success: the store held a paused run whose step was done, without the
// write that goes with it (for good, when the run was read again after
// it), or the run read again before it landed overwrote it and the pause
// its caller was told of was lost.
func TestFailpointChangeWaitsForTheRunsCommitInFlight(t *testing.T) {
	t.Parallel()
	p := pauseBehindFailure(t)
	var pauseErr error
	select {
	case got := <-p.waits:
		if got != p.id {
			t.Fatalf("run %s waited, want %s", got, p.id)
		}
		if tell := p.st.takeTell(); tell != nil {
			tell() // the failure, told after the pause was made
		}
		pauseErr = testwait.Recv(t, p.paused, "the pause was answered")
	case pauseErr = <-p.paused: // committed without waiting (the code before)
	}
	p.consistent(t, "once the pause was answered")
	p.b.waitRun(t, p.id, "past its step act", stepStatus("act", runengine.StepCompleted))
	r := p.consistent(t, "once the run went on")
	if pauseErr == nil && r.Status != runengine.RunPaused {
		t.Errorf("the pause was answered, but the run is %s", r.Status)
	}
	if diff := cmp.Diff([]runengine.StepStatus{runengine.StepCompleted, runengine.StepWaiting},
		[]runengine.StepStatus{r.Steps[0].Status, r.Steps[1].Status}); diff != "" {
		t.Errorf("steps after the recovery (-want +got):\n%s", diff)
	}
	if n := p.called.Load(); n != 2 {
		t.Errorf("the step's call was made %d times, want 2 (again after the failed commit)", n)
	}
	if pauseErr == nil {
		t.Error("the pause was answered success, though it was made while the commit before it was to fail")
	}
}

// TestFailpointCloseWaitsForTheRunsCommitInFlight: the engine closes while
// a run's change (a pause) waits for the run's commit in flight, which
// then fails. The closing worker commits what its runs hold, but that
// change only once the commit before it was told, and being told a
// failure it gives the change up: its caller hears the failure and the
// store never shows the pause and the step done without the step's write.
// Before, a closing worker committed every held change at once, behind
// the commit in flight.
func TestFailpointCloseWaitsForTheRunsCommitInFlight(t *testing.T) {
	t.Parallel()
	p := pauseBehindFailure(t)
	select {
	case <-p.waits: // the pause waits; the failure is told a while later (laterFailure)
	case <-p.paused: // committed without waiting (the code before)
		t.Fatal("the pause was answered before the engine closed")
	}
	if err := p.b.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, p.paused, "the pause was answered"); err == nil {
		t.Error("the pause was answered success, though the commit before it failed")
	}
	if r := p.consistent(t, "after the close"); r.Status == runengine.RunPaused {
		t.Errorf("the store shows the run paused, though its pause was made behind a failed commit")
	}
}
