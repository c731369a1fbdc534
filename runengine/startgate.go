package runengine

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// startGate is the door of the starts made by hand (Start, Rerun, Retry),
// of published events (Publish) and of the runs schedules start: it caps
// the starts of a tenant in progress at once (from the call, or the tick,
// to its durable answer), always at Config.MaxStartingPerTenant, and at
// Config.FairStartingPerTenant while another tenant is active too (came to
// the door, or shared a commit, within fairWindow). A caller
// over a cap waits, parked and in the order it came, for one of its
// tenant's starts in progress to be answered. One tenant's many callers
// then cannot fill the workers' queues and the commits, nor keep the
// processors busy with goroutines ready to run, while another tenant's
// start goes in at once; a tenant alone keeps the whole engine.
type startGate struct {
	max, fair int // 0: no such cap
	clock     clock.Clock
	mu        sync.Mutex
	// tenants holds the slots of the tenants with a start in progress or a
	// caller waiting; an idle tenant's are dropped as its last start leaves
	// and kept in spare for the next tenant that comes.
	tenants map[string]*gateSlots
	spare   *gateSlots
	// busy counts the starts in progress of all tenants; last are the two
	// tenants seen last at the door, distinct, the latest first.
	busy int
	last [2]seenTenant
}

type gateSlots struct {
	n       int
	waiters []gateWaiter
}

// gateWaiter is one in the line at the door: a caller asleep on ch, or a
// start made by the engine (a schedule's tick) that later makes once a
// slot is taken for it (see enterOr).
type gateWaiter struct {
	ch    chan struct{}
	later func()
}

type seenTenant struct {
	tenant string
	at     time.Time
}

// fairWindow is how long a tenant counts as active after its last start
// ended, for FairStartingPerTenant.
const fairWindow = time.Second

func newStartGate(max, fair int, clk clock.Clock) *startGate {
	if max <= 0 && fair <= 0 {
		return nil
	}
	return &startGate{max: max, fair: fair, clock: clk, tenants: map[string]*gateSlots{}}
}

// enter waits for a slot of tenant; the caller calls leave once its start
// is answered. It fails only when ctx ends first.
func (g *startGate) enter(ctx context.Context, tenant string) error {
	g.mu.Lock()
	s, in := g.admit(tenant)
	if in {
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, gateWaiter{ch: ch})
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	for i, w := range s.waiters {
		if w.ch == ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			g.mu.Unlock()
			return errors.WithStack(ctx.Err())
		}
	}
	g.mu.Unlock()
	// The slot was handed over as ctx ended: pass it on.
	g.leave(tenant)
	return errors.WithStack(ctx.Err())
}

// enterOr takes a slot of tenant and reports true when one is free now,
// as enter does; otherwise it puts later in the line, in the order it
// came, and reports false: later is called, holding a slot, once one of
// the tenant's starts in progress leaves. It never blocks, so the
// scheduler does not wait at the door for one tenant while the others'
// timers come due. Whoever holds the slot calls leave once the start is
// answered.
func (g *startGate) enterOr(tenant string, later func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, in := g.admit(tenant)
	if !in {
		s.waiters = append(s.waiters, gateWaiter{later: later})
	}
	return in
}

// admit notes tenant at the door and takes one of its slots when one is free
// and none waits in line, reporting whether it did; it returns tenant's
// slots, made when it has none. g.mu is held.
func (g *startGate) admit(tenant string) (*gateSlots, bool) {
	now := g.clock.Now()
	g.saw(tenant, now)
	s := g.tenants[tenant]
	if s == nil {
		if s = g.spare; s != nil {
			g.spare = nil
		} else {
			s = &gateSlots{}
		}
		g.tenants[tenant] = s
	}
	if len(s.waiters) > 0 || s.n >= g.limit(tenant, s, now) {
		return s, false
	}
	s.n++
	g.busy++
	return s, true
}

// leave frees the slot and hands the free slots of the tenant to those
// waiting in line, in order (a start of the engine's is made then, outside
// the lock); the slots of a tenant left idle are dropped.
func (g *startGate) leave(tenant string) {
	g.mu.Lock()
	now := g.clock.Now()
	g.saw(tenant, now)
	s := g.tenants[tenant]
	s.n--
	g.busy--
	var later []func()
	for len(s.waiters) > 0 && s.n < g.limit(tenant, s, now) {
		w := s.waiters[0]
		if w.later != nil {
			later = append(later, w.later)
		} else {
			close(w.ch)
		}
		s.waiters[0] = gateWaiter{}
		s.waiters = s.waiters[1:]
		s.n++
		g.busy++
	}
	if s.n == 0 && len(s.waiters) == 0 {
		delete(g.tenants, tenant)
		g.spare = s
	}
	g.mu.Unlock()
	for _, fn := range later {
		fn()
	}
}

// limit is how many starts tenant may have in progress now; g.mu is held.
func (g *startGate) limit(tenant string, s *gateSlots, now time.Time) int {
	l := math.MaxInt
	if g.max > 0 {
		l = g.max
	}
	if g.fair > 0 && g.fair < l && g.shared(tenant, s, now) {
		l = g.fair
	}
	return l
}

// shared reports whether a tenant other than tenant is active: has a start
// in progress, or came to the door within fairWindow; g.mu is held.
func (g *startGate) shared(tenant string, s *gateSlots, now time.Time) bool {
	if g.busy > s.n {
		return true
	}
	other := g.last[0]
	if other.tenant == tenant {
		other = g.last[1]
	}
	return other.tenant != "" && now.Sub(other.at) < fairWindow
}

// active records a tenant of a commit that several tenants share as active
// now, as if it came to the door: a tenant that changes its runs (completes
// tasks, decides approvals) beside a flooding one holds the flood to the
// fair cap as one that starts runs does.
func (g *startGate) active(tenant string) {
	g.mu.Lock()
	g.saw(tenant, g.clock.Now())
	g.mu.Unlock()
}

// saw records tenant at the door at now; g.mu is held.
func (g *startGate) saw(tenant string, now time.Time) {
	if g.last[0].tenant != tenant {
		g.last[1] = g.last[0]
	}
	g.last[0] = seenTenant{tenant, now}
}
