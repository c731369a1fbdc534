package runengine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// WaitRun returns the run once it has ended (completed, failed, rejected or
// cancelled), or ctx's error when ctx ends first. On one node it does not
// poll: the engine tells it once the run's end is durable. A node of a
// cluster also reads the run again every clusterPoll, since another node
// may own it. A run that has ended already is returned at once.
func (e *Engine) WaitRun(ctx context.Context, tenant, runID string) (*Run, error) {
	done := e.ends.watch(tenant, runID)
	defer e.ends.unwatch(tenant, runID, done)
	poll := e.clusterTick()
	if poll != nil {
		defer poll.Stop()
	}
	for {
		r, err := e.GetRun(ctx, tenant, runID)
		if err != nil || r.Finished() {
			return r, err
		}
		select {
		case <-done:
			return e.GetRun(ctx, tenant, runID)
		case <-tickC(poll):
		case <-ctx.Done():
			return nil, errors.WithStack(ctx.Err())
		case <-e.ctx.Done():
			return nil, errClosed
		}
	}
}

// clusterTick is the ticker a waiter on a cluster node reads runs again
// by (another node may own them), or nil on one node.
func (e *Engine) clusterTick() *time.Ticker {
	if e.cluster == nil {
		return nil
	}
	return time.NewTicker(clusterPoll)
}

// tickC is t's channel, or nil (never ready) for a nil t.
func tickC(t *time.Ticker) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// WaitRunUntil returns the run once cond holds for it, checking it at once
// and again after each committed change of the run, or ctx's error (with
// the run as it last was) when ctx ends first. cond must not block; a run
// that ends without satisfying it is returned with an error marked
// errs.Conflict. A nil cond is errs.Invalid, located at "cond" (WaitRun
// waits for a run's end). A node of a cluster also checks it every
// clusterPoll, since another node may own the run.
func (e *Engine) WaitRunUntil(ctx context.Context, tenant, runID string, cond func(*Run) bool) (*Run, error) {
	if cond == nil {
		return nil, errs.Invalidf([]any{"cond"}, "missing", "is required")
	}
	poll := e.clusterTick()
	if poll != nil {
		defer poll.Stop()
	}
	for {
		changed := e.changes.watch(tenant, runID)
		r, err := e.GetRun(ctx, tenant, runID)
		switch {
		case err != nil || cond(r):
			e.changes.unwatch(tenant, runID, changed)
			return r, err
		case r.Finished():
			e.changes.unwatch(tenant, runID, changed)
			return r, errs.Conflictf("run %s ended %s", runID, r.Status)
		}
		select {
		case <-changed:
		case <-tickC(poll):
			e.changes.unwatch(tenant, runID, changed)
		case <-ctx.Done():
			e.changes.unwatch(tenant, runID, changed)
			return r, errors.WithStack(ctx.Err())
		case <-e.ctx.Done():
			e.changes.unwatch(tenant, runID, changed)
			return r, errClosed
		}
	}
}

// ended is called once a run's end is durable.
func (e *Engine) ended(tenant, runID string, status RunStatus) {
	if fn := e.cfg.OnFinish; fn != nil {
		fn(tenant, runID, status)
	}
	e.ends.notify(tenant, runID)
}

// endWatch holds callers waiting on runs (for their end, or any change),
// by run. A run's commit costs one atomic load while nobody waits.
type endWatch struct {
	n  atomic.Int64
	mu sync.Mutex
	m  map[string][]chan struct{}
}

func (w *endWatch) watch(tenant, runID string) chan struct{} {
	ch := make(chan struct{})
	k := tenant + "\x00" + runID
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string][]chan struct{}{}
	}
	w.m[k] = append(w.m[k], ch)
	w.n.Add(1)
	w.mu.Unlock()
	return ch
}

func (w *endWatch) unwatch(tenant, runID string, ch chan struct{}) {
	k := tenant + "\x00" + runID
	w.mu.Lock()
	defer w.mu.Unlock()
	chs := w.m[k]
	for i, c := range chs {
		if c == ch {
			chs = append(chs[:i], chs[i+1:]...)
			w.n.Add(-1)
			break
		}
	}
	if len(chs) == 0 {
		delete(w.m, k)
	} else {
		w.m[k] = chs
	}
}

func (w *endWatch) notify(tenant, runID string) {
	if w.n.Load() == 0 {
		return
	}
	k := tenant + "\x00" + runID
	w.mu.Lock()
	chs := w.m[k]
	delete(w.m, k)
	w.n.Add(-int64(len(chs)))
	w.mu.Unlock()
	for _, ch := range chs {
		close(ch)
	}
}
