package runengine_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// failDueDelete fails, once armed, the first Update that deletes a due key
// (the commit of a fired timer). It hides the inner store's Pipeliner, so
// every commit of the engine is an Update.
type failDueDelete struct {
	store.Store
	armed atomic.Bool
}

func (f *failDueDelete) Update(ctx context.Context, fn func(store.Txn) error) error {
	return f.Store.Update(ctx, func(tx store.Txn) error {
		seen := &dueDeletes{Txn: tx}
		if err := fn(seen); err != nil {
			return err
		}
		if seen.n > 0 && f.armed.CompareAndSwap(true, false) {
			return errors.New("injected commit failure")
		}
		return nil
	})
}

// dueDeletes counts the due keys a transaction deletes.
type dueDeletes struct {
	store.Txn
	n int
}

func (d *dueDeletes) Delete(key []byte) error {
	if bytes.HasPrefix(key, store.Key(store.System, "due")) {
		d.n++
	}
	return d.Txn.Delete(key)
}

// TestTimerFiresAgainAfterFailedCommit: when the commit of a fired timer
// fails, its due key is still stored and must fire again (the scheduler
// must not keep it as handed out, nor look past it).
func TestTimerFiresAgainAfterFailedCommit(t *testing.T) {
	t.Parallel()
	st, clk, b := openFailDue(t)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"pause","type":"wait","config":{"duration":"1h"}},
		{"key":"route","type":"route","config":{"rules":[{"when":{"subject.type":"x"},"queue":"b"}],"default":{"queue":"a"}}}]`)
	id := b.start(t, def.ID)
	b.waitRun(t, id, "waiting", stepStatus("pause", runengine.StepWaiting))
	st.armed.Store(true)
	clk.Advance(2 * time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := b.eng.WaitRun(ctx, tenant, id)
	if err != nil || r.Status != runengine.RunCompleted {
		t.Fatalf("run after its timer's failed commit: %+v %v; want completed", r, err)
	}
	if st.armed.Load() {
		t.Error("no commit of the fired timer was failed")
	}
}

// TestCronFiresAgainAfterFailedCommit: when the commit of a schedule's
// tick (its run's start, which deletes the tick's due key) fails, the tick
// is still stored and must fire again; the scheduler must not keep it as
// handed out, which would stop the schedule until a restart.
func TestCronFiresAgainAfterFailedCommit(t *testing.T) {
	t.Parallel()
	st, clk, b := openFailDue(t)
	def := b.create(t, `{"type":"schedule","cron":"*/15 * * * *","timezone":"UTC"}`,
		`[{"key":"tick","type":"execute","capability":"test.echo","config":{"args":{"at":"${trigger.data.fired_at}"}}}]`)
	st.armed.Store(true)
	clk.Advance(15 * time.Minute)
	waitFor(t, "the tick's run after its failed commit", func() bool {
		rs, _, err := b.eng.ListRuns(context.Background(), tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		return len(rs) == 1
	})
	if st.armed.Load() {
		t.Error("no commit of the tick was failed")
	}
}

// openFailDue opens an engine on a failDueDelete store (not armed) and a
// fake clock.
func openFailDue(t *testing.T) (*failDueDelete, *clock.Fake, *bundle) {
	t.Helper()
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &failDueDelete{Store: inner}
	clk := clock.NewFake(t0)
	return st, clk, open(t, st, clk, &testProvider{}, &autoGate{auto: true})
}

// failCronRead fails, once armed, the first read of a schedule's last
// fired tick (the scheduler's read before it starts the tick's run).
type failCronRead struct {
	store.Store
	armed atomic.Bool
}

func (f *failCronRead) View(ctx context.Context, fn func(store.Reader) error) error {
	return f.Store.View(ctx, func(r store.Reader) error { return fn(&cronReadFails{Reader: r, f: f}) })
}

// cronReadFails is a Reader whose Get of a cron-last key fails while its
// store is armed.
type cronReadFails struct {
	store.Reader
	f *failCronRead
}

func (r *cronReadFails) Get(key []byte) ([]byte, error) {
	if bytes.Contains(key, []byte("cron-last")) && r.f.armed.CompareAndSwap(true, false) {
		return nil, errors.New("injected read failure")
	}
	return r.Reader.Get(key)
}

// TestCronTickKeptWhenItsReadFails: a schedule's tick whose read of the
// process fails for another reason than the process being gone keeps its
// due key and fires on a later look. Before, any failed read removed the
// key, and the schedule never fired again.
func TestCronTickKeptWhenItsReadFails(t *testing.T) {
	t.Parallel()
	inner, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &failCronRead{Store: inner}
	clk := clock.NewFake(t0)
	b := open(t, st, clk, &testProvider{}, &autoGate{auto: true})
	def := b.create(t, `{"type":"schedule","cron":"*/15 * * * *","timezone":"UTC"}`,
		`[{"key":"tick","type":"execute","capability":"test.echo","config":{"args":{"at":"${trigger.data.fired_at}"}}}]`)
	st.armed.Store(true)
	clk.Advance(15 * time.Minute)
	waitFor(t, "the tick's run after its failed read", func() bool {
		rs, _, err := b.eng.ListRuns(context.Background(), tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		return len(rs) == 1
	})
	if st.armed.Load() {
		t.Error("no read of the tick was failed")
	}
}
