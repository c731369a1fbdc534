package runengine_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// holdStart holds, once armed, the commit of a run's start (the first
// transaction that writes a run record) before it commits, until
// release is closed; reached is closed when it got there. It hides the
// inner store's Pipeliner, so every commit of the engine is an Update.
type holdStart struct {
	store.Store
	armed            atomic.Bool
	reached, release chan struct{}
}

func (h *holdStart) Update(ctx context.Context, fn func(store.Txn) error) error {
	return h.Store.Update(ctx, func(tx store.Txn) error {
		seen := &runSets{Txn: tx}
		if err := fn(seen); err != nil {
			return err
		}
		if seen.n > 0 && h.armed.CompareAndSwap(true, false) {
			close(h.reached)
			<-h.release
		}
		return nil
	})
}

// runSets counts the run records a transaction writes.
type runSets struct {
	store.Txn
	n int
}

func (a *runSets) Set(key, value []byte) error {
	if bytes.HasPrefix(key, store.Key(tenant, "r", "run")) {
		a.n++
	}
	return a.Txn.Set(key, value)
}

// TestLateSubscriberGetsRunEvents: the events of a run started while the
// tenant had no subscriber (so nothing consumed them and they were not
// written) reach a subscriber that came before the start committed, with
// their data.
func TestLateSubscriberGetsRunEvents(t *testing.T) {
	t.Parallel()
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &holdStart{Store: inner, reached: make(chan struct{}), release: make(chan struct{})}
	b := open(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true})
	def := b.create(t, `{"type":"manual"}`, `[{"key":"route","type":"route","config":{"rules":[{"when":{"subject.type":"x"},"queue":"b"}],"default":{"queue":"a"}}}]`)
	st.armed.Store(true)
	started := make(chan *runengine.Run, 1)
	go func() {
		r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
		if err != nil {
			t.Errorf("start: %v", err)
		}
		started <- r
	}()
	// The run started and completed, its commit not yet made.
	testwait.Recv(t, st.reached, "the run's start reached its commit")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := b.eng.Subscribe(ctx, runengine.SubscribeParams{Tenant: tenant, Names: []string{"process.run.*"}})
	close(st.release)
	r := testwait.Recv(t, started, "the start was answered")
	if r == nil {
		t.FailNow()
	}
	var got []map[string]any
	for n, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, map[string]any{"name": n.Event.Name, "data": n.Event.Data})
		if len(got) == 2 {
			break
		}
	}
	data := map[string]any{"run_id": r.ID, "process_id": def.ID, "process_name": def.Name,
		"subject": map[string]any{"type": "invoice", "label": "INV-1"}}
	want := []map[string]any{{"name": "process.run.started", "data": data}, {"name": "process.run.completed", "data": data}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
