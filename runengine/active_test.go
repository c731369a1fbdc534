package runengine_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// activeLog records the writes of the engine's commits to the index of
// running runs. It hides the inner store's Pipeliner, so every commit is an
// Update.
type activeLog struct {
	store.Store
	mu     sync.Mutex
	writes []string
}

func (a *activeLog) Update(ctx context.Context, fn func(store.Txn) error) error {
	return a.Store.Update(ctx, func(tx store.Txn) error { return fn(&activeTxn{Txn: tx, log: a}) })
}

func (a *activeLog) took() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.writes...)
}

type activeTxn struct {
	store.Txn
	log *activeLog
}

var activeIndex = store.Key(store.System, "active", tenant)

func (t *activeTxn) note(what string, key []byte) {
	if rest, ok := bytes.CutPrefix(key, activeIndex); ok {
		parts, _ := store.DecodeKey(rest)
		t.log.mu.Lock()
		t.log.writes = append(t.log.writes, what+" "+parts[0].(string))
		t.log.mu.Unlock()
	}
}

func (t *activeTxn) Set(key, value []byte) error {
	t.note("set", key)
	return t.Txn.Set(key, value)
}

func (t *activeTxn) Delete(key []byte) error {
	t.note("delete", key)
	return t.Txn.Delete(key)
}

// TestActiveIndexWrites: a run's entry in the index of running runs (what a
// restart advances) is written when a commit finds the run running and the
// one before did not, and deleted in the reverse case; a run that is
// running only between two commits (it starts and waits, or a timer wakes
// it and it completes) writes nothing there, where a set and a deletion of
// an entry the store never had used to be written.
func TestActiveIndexWrites(t *testing.T) {
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &activeLog{Store: inner}
	b := open(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true})

	waits := b.create(t, `{"type":"manual"}`, `[{"key":"pause","type":"wait","config":{"duration":"2h"}}]`)
	id := b.start(t, waits.ID)
	b.waitRun(t, id, "waiting", func(r *runengine.Run) bool { return r.Status == runengine.RunWaiting })
	if got := st.took(); len(got) > 0 {
		t.Errorf("a run that started waiting wrote %v to the active index, want nothing", got)
	}
	b.clk.Advance(2*time.Hour + time.Second)
	b.waitRun(t, id, "completed", func(r *runengine.Run) bool { return r.Status == runengine.RunCompleted })
	if got := st.took(); len(got) > 0 {
		t.Errorf("a run that a timer woke and that completed wrote %v to the active index, want nothing", got)
	}

	// A run whose call is out when its start commits is running in the
	// store until it completes: a restart must advance it.
	calls := b.create(t, `{"type":"manual"}`, `[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{"n":1}}}]`)
	id = b.start(t, calls.ID)
	b.waitRun(t, id, "completed", func(r *runengine.Run) bool { return r.Status == runengine.RunCompleted })
	if diff := cmp.Diff([]string{"set " + id, "delete " + id}, st.took()); diff != "" {
		t.Errorf("active index writes (-want +got):\n%s", diff)
	}
}
