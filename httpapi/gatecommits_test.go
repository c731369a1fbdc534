package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// commitCounter counts a store's commits: its Updates (the read-write
// transactions opened outside the run engine's commit pipeline) and its
// pipelined transactions' commits.
type commitCounter struct {
	*badgerstore.Store
	updates, pipelined atomic.Int64
}

// commits is how many commits the store made.
func (s *commitCounter) commits() int64 { return s.updates.Load() + s.pipelined.Load() }

func (s *commitCounter) Update(ctx context.Context, fn func(store.Txn) error) error {
	s.updates.Add(1)
	return s.Store.Update(ctx, fn)
}

func (s *commitCounter) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &countedTxn{PipelinedTxn: tx, n: &s.pipelined}, nil
}

// countedTxn counts its commit in n.
type countedTxn struct {
	store.PipelinedTxn
	n *atomic.Int64
}

func (t *countedTxn) CommitAsync(done func(error)) {
	t.n.Add(1)
	t.PipelinedTxn.CommitAsync(done)
}

func (t *countedTxn) SetKept(key, value []byte) error {
	return store.SetKept(t.PipelinedTxn, key, value)
}

// openCounted opens a workspace on an in-memory Badger store whose
// commits are counted, with a fake clock at testStart.
func openCounted(t *testing.T) (*bas.Workspace, *commitCounter, *bas.FakeClock) {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	counted := &commitCounter{Store: st}
	clk := bas.NewFakeClock(testStart)
	ws, err := bas.Open(context.Background(), bas.Options{Store: counted, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws, counted, clk
}

// TestStartCommitsOnceOrTwice: the start of a run that routes, then sends
// a mail through email.send behind the autonomy gate (at 100%), makes one
// commit from its request to its end when the call answers within the
// start's hold (the outbox's message and the gate's decision and day
// counts join the run's first commit), two when it does not: the run's
// first, then the step's result with them. Never more. The decision shows
// in the day's count once the run has completed.
func TestStartCommitsOnceOrTwice(t *testing.T) {
	t.Parallel()
	ws, counted, clk := openCounted(t)
	h := httpapi.New(ws, httpapi.Options{DevLogin: true})
	srv := httptest.NewServer(conform(t, h))
	t.Cleanup(srv.Close)
	s := &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: &logBuffer{}}
	sess := s.devLogin(t, `{}`)
	s.do(t, "PATCH", "/v1/automation", sess.Token, `{"percent": 100, "max_percent": 100, "sample_percent": 0}`).want(t, http.StatusOK)
	var proc struct{ ID string }
	s.do(t, "POST", "/v1/processes", sess.Token, `{"name": "Route and notify", "trigger": {"type": "manual"},
	  "steps": [
	    {"key": "route", "type": "route", "config": {"rules": [{"when": {"subject.type": "delivery"}, "queue": "receiving"}], "default": {"queue": "ap"}}},
	    {"key": "notify", "type": "execute", "capability": "email.send",
	     "config": {"args": {"to": "supplier@example.com", "subject": "Delivery received", "body": "We received it."}}}]}`).
		want(t, http.StatusCreated).decode(t, &proc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(key string) {
		t.Helper()
		var run struct{ ID string }
		s.do(t, "POST", "/v1/processes/"+proc.ID+"/start", sess.Token, `{"subject": {"type": "delivery", "label": "DN-1"}}`,
			"Idempotency-Key", key).want(t, http.StatusCreated).decode(t, &run)
		r, err := ws.WaitRun(ctx, sess.TenantID, run.ID)
		if err != nil || r.Status != bas.RunCompleted {
			t.Fatalf("run %s: %+v, %v", run.ID, r, err)
		}
	}
	start("warm-up")
	const starts = 10
	before := counted.commits()
	for i := range starts {
		start("s" + string(rune('a'+i)))
	}
	if n := counted.commits() - before; n < starts || n > 2*starts {
		t.Errorf("%d starts made %d commits, want %d to %d (one or two each)", starts, n, starts, 2*starts)
	}
	var auto struct {
		AutomaticToday int `json:"automatic_today"`
	}
	s.do(t, "GET", "/v1/automation", sess.Token, nil).want(t, http.StatusOK).decode(t, &auto)
	if auto.AutomaticToday != starts+1 {
		t.Errorf("automatic today %d, want %d", auto.AutomaticToday, starts+1)
	}
}
