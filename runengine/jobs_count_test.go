package runengine_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// heldScans is a store whose first scan under prefix once armed, in a
// view or a transaction, says so on at and waits for release.
type heldScans struct {
	store.Store
	prefix  []byte
	armed   atomic.Bool
	at      chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *heldScans) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(heldReader{r, s}) })
}

func (s *heldScans) Update(ctx context.Context, fn func(store.Txn) error) error {
	return s.Store.Update(ctx, func(tx store.Txn) error { return fn(heldTxn{tx, s}) })
}

func (s *heldScans) hold(o store.ScanOptions) {
	if bytes.HasPrefix(o.Prefix, s.prefix) && s.armed.CompareAndSwap(true, false) {
		s.at <- struct{}{}
		<-s.release
	}
}

func (s *heldScans) let() { s.once.Do(func() { close(s.release) }) }

type heldReader struct {
	store.Reader
	s *heldScans
}

func (r heldReader) Scan(o store.ScanOptions, fn func(key, value []byte) error) error {
	r.s.hold(o)
	return r.Reader.Scan(o, fn)
}

type heldTxn struct {
	store.Txn
	s *heldScans
}

func (t heldTxn) Scan(o store.ScanOptions, fn func(key, value []byte) error) error {
	t.s.hold(o)
	return t.Txn.Scan(o, fn)
}

// TestBulkCountHoldsNoCommit: a bulk job counts the runs its filter
// selects outside the engine's commits, so another tenant's start is
// committed while the count goes on (a count of a million runs inside a
// commit held every tenant's commits behind it).
func TestBulkCountHoldsNoCommit(t *testing.T) {
	t.Parallel()
	base, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	st := &heldScans{Store: base, prefix: store.Key(tenant, "i", "run", "status"),
		at: make(chan struct{}), release: make(chan struct{})}
	b := open(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true})
	t.Cleanup(st.let) // before the engine closes
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"Do it"}}]`)
	for range 3 {
		b.waitRun(t, b.start(t, def.ID), "waiting on its task", status(runengine.RunWaiting))
	}
	in, err := process.DecodeIn([]byte(`{"name":"Other","trigger":{"type":"manual"},"steps":[{"key":"t","type":"human_task","config":{"title":"x"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.procs.Create(ctx, "ten_other", "usr_o", in)
	if err != nil {
		t.Fatal(err)
	}

	st.armed.Store(true)
	type result struct {
		job *runengine.Job
		err error
	}
	bulk := make(chan result, 1)
	go func() {
		j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Status: runengine.RunWaiting}, runengine.JobPause, "usr_a")
		bulk <- result{j, err}
	}()
	testwait.Recv(t, st.at, "the bulk job's count began")
	started := make(chan error, 1)
	go func() {
		_, err := b.eng.Start(ctx, runengine.StartParams{Tenant: "ten_other", ProcessID: other.ID,
			Subject: runengine.Subject{Type: "x", Label: "y"}, Actor: "usr_o"})
		started <- err
	}()
	if err := testwait.Recv(t, started, "another tenant's start, while the count is held"); err != nil {
		t.Fatalf("start: %v", err)
	}
	st.let()
	res := testwait.Recv(t, bulk, "the bulk job was made")
	if res.err != nil || res.job.Total != 3 {
		t.Fatalf("bulk job: %+v, %v; want a total of 3", res.job, res.err)
	}
}
