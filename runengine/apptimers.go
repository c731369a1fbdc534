package runengine

import (
	"context"
	"strings"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// App timers: a workspace app (invoicing's collection, say) keeps durable
// timers in the engine's due-time index, written in the same transaction as
// the app's change, and is called back when one is due. The due key's
// owner is "app:"+kind; the token is the app's (an invoice id).
//
// A timer is handed to its kind's handler once it is due. A handler that
// clears the timer (AppTimer.Clear) in the transaction of its effect acts
// exactly once; the engine deletes the key after a handler returns nil in
// any case. A handler that fails is called again after AppTimerRetry.
const appOwnerPrefix = "app:"

// AppTimerRetry is how long a failed app timer waits before its handler is
// called again.
const AppTimerRetry = time.Minute

// AppTimer is one due app timer handed to its handler.
type AppTimer struct {
	// Tenant and Kind name whose timer it is; Token is what the app set.
	Tenant, Kind, Token string
	// At is when it was due.
	At time.Time

	key []byte
}

// Clear deletes the timer within tx, the transaction of the handler's
// effect, so the effect and the timer's end commit together.
func (t AppTimer) Clear(tx store.Txn) error { return tx.Delete(t.key) }

// AppTimerFunc handles a due app timer. ctx ends when the engine closes.
type AppTimerFunc func(ctx context.Context, t AppTimer) error

// HandleTimers registers fn for the app timers of kind. Register before
// Open, so timers due while the engine was closed find their handler; a
// timer whose kind has no handler when it is due is dropped (and logged).
func (e *Engine) HandleTimers(kind string, fn AppTimerFunc) {
	e.appTimers.Store(kind, fn)
}

// SetTimer writes within tx an app timer of kind for tenant, due at at;
// token tells the handler what it is for. The same (kind, token, at) set
// twice is one timer. Pair it with CancelTimer when the app's record
// changes its mind; the app keeps at to do so.
func (e *Engine) SetTimer(tx store.Txn, tenant, kind, token string, at time.Time) error {
	if kind == "" || token == "" {
		return errors.New("runengine: an app timer needs a kind and a token")
	}
	if err := tx.Set(dueKey(at, tenant, appOwnerPrefix+kind, token), nil); err != nil {
		return err
	}
	// A wake before the commit: a look may run before the key lands (see
	// wakeUncommitted).
	e.sched.wakeUncommitted(at)
	return nil
}

// CancelTimer deletes within tx the app timer SetTimer wrote with the same
// arguments; a missing one is no error.
func (e *Engine) CancelTimer(tx store.Txn, tenant, kind, token string, at time.Time) error {
	return tx.Delete(dueKey(at, tenant, appOwnerPrefix+kind, token))
}

// fireApp hands a due app timer to its handler on a call runner.
func (s *scheduler) fireApp(d dueItem, kind string) {
	e := s.e
	v, ok := e.appTimers.Load(kind)
	if !ok {
		e.log.Warn("runengine: dropping an app timer nothing handles", "kind", kind, "tenant", d.tenant)
		e.commits.submit(&delta{apply: deleteKey(d.key), after: func(error) { s.done(d.key) }})
		return
	}
	fn := v.(AppTimerFunc)
	t := AppTimer{Tenant: d.tenant, Kind: kind, Token: d.token, At: d.at, key: d.key}
	// Hand it out under the close lock, so a closing engine either waits
	// for the call or never starts it.
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		s.done(d.key)
		return
	}
	e.goCall(func() {
		// The scan that found the key may have read a snapshot older than
		// the commit of the handler call that cleared it: look again.
		err := e.st.View(e.ctx, func(r store.Reader) error {
			_, err := r.Get(d.key)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			s.done(d.key)
			return
		}
		if err == nil {
			err = fn(e.ctx, t)
		}
		if err != nil {
			if !e.isClosed() {
				e.log.Error("runengine: app timer failed; retrying later", "kind", kind, "tenant", d.tenant,
					"token", d.token, "error", err.Error())
			}
			retry := e.clock.Now().Add(AppTimerRetry)
			err = e.st.Update(e.ctx, func(tx store.Txn) error {
				if _, gerr := tx.Get(d.key); errors.Is(gerr, store.ErrNotFound) {
					return nil // cleared meanwhile
				} else if gerr != nil {
					return gerr
				}
				if err := tx.Delete(d.key); err != nil {
					return err
				}
				return tx.Set(dueKey(retry, d.tenant, d.owner, d.token), nil)
			})
			if err == nil {
				s.wakeAt(retry)
			}
		} else {
			err = e.st.Update(e.ctx, func(tx store.Txn) error {
				if _, gerr := tx.Get(d.key); errors.Is(gerr, store.ErrNotFound) {
					return nil // the handler cleared it with its effect
				}
				return tx.Delete(d.key)
			})
		}
		if err != nil && !e.isClosed() {
			e.log.Error("runengine: app timer bookkeeping failed", "kind", kind, "error", err.Error())
		}
		s.done(d.key)
	})
}

// appKind returns the kind of an app timer's owner.
func appKind(owner string) (string, bool) { return strings.CutPrefix(owner, appOwnerPrefix) }
