package runengine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/internal/callwrites"
)

// callCtx is the context a capability call or a gate decision runs under:
// its parent with a deadline, like context.WithDeadline, but with no timer
// and no place in the parent's list of children until something asks for
// Done (a provider that waits on the network does; the in-process ones and
// the registry, which reads only Deadline, do not). Until then Err and
// Value compare the clock with the deadline themselves; from then on every
// method is that of a context.WithDeadline made at that moment, with the
// same deadline. Most calls return without ever making one, and a call
// then costs no timer to arm and stop (a timer per call was 5% of a short
// run's CPU).
type callCtx struct {
	parent   context.Context
	deadline time.Time
	// info, when set, is the run the call is made for: Value answers
	// RunFromContext's key with it (as a context.WithValue would, without
	// making one per call).
	info *RunInfo
	// writes, when set, are the call's callwrites.Writes, answered for
	// callwrites.ContextKey (as callwrites.With would).
	writes *callwrites.Writes

	mu       sync.Mutex
	real     atomic.Pointer[deadlineCtx] // set once, by materialize
	released atomic.Bool                 // release was called
}

// deadlineCtx is the context.WithDeadline a callCtx became, and its cancel.
type deadlineCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// init makes c, a zero callCtx, parent with a deadline timeout from now
// (a callCtx is held inside the value of the call it serves); the caller
// must call its release when the call returned (as the cancel of
// context.WithTimeout).
func (c *callCtx) init(parent context.Context, timeout time.Duration) {
	c.parent, c.deadline = parent, time.Now().Add(timeout)
}

// materialize makes the context.WithDeadline c stands for, once (already
// cancelled when c was released).
func (c *callCtx) materialize() context.Context {
	if r := c.real.Load(); r != nil {
		return r.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.real.Load(); r != nil {
		return r.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	if c.released.Load() {
		cancel()
	}
	c.real.Store(&deadlineCtx{ctx: ctx, cancel: cancel})
	return ctx
}

// release ends c, as context.WithTimeout's cancel does: a real context it
// became is cancelled; if it never became one, it reads as cancelled from
// now on, and becomes a cancelled one when asked for Done or a cause.
func (c *callCtx) release() {
	c.mu.Lock()
	c.released.Store(true)
	r := c.real.Load()
	c.mu.Unlock()
	if r != nil {
		r.cancel()
	}
}

// lapsed tells whether c is done though it is no real context yet: it was
// released, its parent is done, or its deadline passed. It must then
// become a real one, whose Done is closed and whose Err and Cause say why.
func (c *callCtx) lapsed() bool {
	return c.released.Load() || c.parent.Err() != nil || !time.Now().Before(c.deadline)
}

// Deadline is the sooner of c's deadline and its parent's.
func (c *callCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done makes c a real context.WithDeadline and returns its Done.
func (c *callCtx) Done() <-chan struct{} {
	return c.materialize().Done()
}

// Err is nil while c is not done; once it is, that of the real context.
func (c *callCtx) Err() error {
	if r := c.real.Load(); r != nil {
		return r.ctx.Err()
	}
	if !c.lapsed() {
		return nil
	}
	return c.materialize().Err()
}

// Value is c's run for RunFromContext's key (when c has one), else the
// parent's value for key; once c is done, the real context's (which answers
// context.Cause with c's own cause).
func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case runInfoKey:
		if c.info != nil {
			return c.info
		}
	case callwrites.ContextKey:
		if c.writes != nil {
			return c.writes
		}
	}
	if r := c.real.Load(); r != nil {
		return r.ctx.Value(key)
	}
	if c.lapsed() {
		return c.materialize().Value(key)
	}
	return c.parent.Value(key)
}
