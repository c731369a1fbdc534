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

// TestFailpointLaterChangeAfterFailedCommit: the commit carrying a step's
// result (and the write its provider handed over) fails, and a change of
// the run that the worker made before it heard of the failure (a pause)
// is still waiting to commit. That change holds the run as the worker had
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
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
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
	deadline := time.Now().Add(10 * time.Second)
	for b.eng.CommitsQueued() == 0 {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the pause's change never reached the committer")
		}
		runtime.Gosched()
	}
	close(release)
	pauseErr := testwait.Recv(t, paused, "the pause was answered")
	r := b.waitRun(t, id, "past its step act", func(r *runengine.Run) bool { return r.Steps[0].Status == runengine.StepCompleted })
	handed := func() bool {
		var found bool
		if err := st.View(context.Background(), func(rd store.Reader) error {
			_, err := rd.Get([]byte("handed/" + id + "/act/1"))
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
