package runengine_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// asyncFailStore is a Badger store whose pipelined commits fail while
// failing is set, as a store fails a commit it already accepted (a write
// error of the disk): the transaction's writes are dropped and done gets
// the error.
type asyncFailStore struct {
	*counterReads
	failing atomic.Bool
}

func (s *asyncFailStore) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &asyncFailTxn{PipelinedTxn: tx, s: s}, nil
}

type asyncFailTxn struct {
	store.PipelinedTxn
	s *asyncFailStore
}

func (tx *asyncFailTxn) CommitAsync(done func(error)) {
	if !tx.s.failing.Load() {
		tx.PipelinedTxn.CommitAsync(done)
		return
	}
	tx.PipelinedTxn.Discard()
	go done(errors.New("the disk refused the write"))
}

// TestCountersAfterAFailedAsyncCommit: a group commit the store fails
// after it was launched moves no counter, in the store or in the
// cockpit's memory: the commits after it count from what landed.
func TestCountersAfterAFailedAsyncCommit(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	fs := &asyncFailStore{counterReads: &counterReads{Store: st}}
	b := open(t, fs, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true})
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	first := b.start(t, def.ID)
	b.waitRun(t, first, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))

	fs.failing.Store(true)
	if _, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Actor: "usr_test"}); err == nil {
		t.Fatal("a start whose commit failed succeeded")
	}
	fs.failing.Store(false)
	second := b.start(t, def.ID)
	b.waitRun(t, second, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	checkCockpit(t, b, fs.counterReads, tenant, "after a failed commit and one that landed")
	c, err := b.eng.CockpitFromStore(ctx, tenant, runengine.Viewer{CanWork: true})
	if err != nil || c.Running != 2 || c.WaitingOnYou != 2 {
		t.Fatalf("the store's cockpit: %d running, %d waiting on you, %v; want 2, 2", c.Running, c.WaitingOnYou, err)
	}
}
