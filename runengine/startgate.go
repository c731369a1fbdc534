package runengine

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// startGate is the door of the starts made by hand (Start): it caps the
// starts of a tenant in progress at once (from the call to its durable
// answer), always at Config.MaxStartingPerTenant, and at
// Config.FairStartingPerTenant while another tenant is active too (came to
// the door, or shared a commit, within fairWindow), lowered to as little as
// one while that hurts the others' starts (see fairAdapt). A caller
// over a cap waits, parked and in the order it came, for one of its
// tenant's starts in progress to be answered. One tenant's many callers
// then cannot fill the workers' queues and the commits, nor keep the
// processors busy with goroutines ready to run, while another tenant's
// start goes in at once; a tenant alone keeps the whole engine.
type startGate struct {
	max, fair int // 0: no such cap
	clock     clock.Clock
	mu        sync.Mutex
	tenants   map[string]*gateSlots
	// busy counts the starts in progress of all tenants; last are the two
	// tenants seen last at the door, distinct, the latest first.
	busy int
	last [2]seenTenant
	// adapt moves the fair cap by the latency of the quiet tenants'
	// starts (see fairAdapt).
	adapt fairAdapt
}

type gateSlots struct {
	n       int
	waiters []chan struct{}
	// single says the start in progress is the tenant's only one since it
	// entered, at singleAt: its time is a sample of a quiet start's.
	single   bool
	singleAt time.Time
}

// fairAdapt is the fair cap's adaptation to the latency a quiet tenant's
// starts have beside a flooding one: the cap a tenant is held to while
// another is active moves between 1 and FairStartingPerTenant by the time
// of the starts made alone by their tenant (a quiet tenant's) while
// another tenant has starts in progress. Such a start over fairTarget
// times the baseline lowers the cap by one, at most once per fairCalm such
// starts, so the flood leaves the processors, the commits and the disk's
// syncs to the quiet tenant while it is hurt; fairRaise of them within the
// target in a row raise it by one, so the flood takes back what it does
// not hurt. (One controller moves the cap, with no flows to converge
// between, so it steps by one both ways.) The target is on single starts
// against the tail of the starts made alone, because what a flood does to
// a quiet tenant shows in the tail (its commits, flushes and collections
// stall a quiet start now and then), and because a machine that is itself
// noisy has a long tail alone too, which no cap on the flood shortens. The
// baseline is the 95th percentile of the single starts made with no other
// tenant's start in progress (a running estimate: up an eighth for a start
// over it, down a 152nd for one under it), while one came within
// fairBaseWindow, else three times the shortest single start of the last
// two fairBaseWindows. A tenant alone is never capped, and the cap is back
// at its ceiling once no quiet start came for fairWindow.
type fairAdapt struct {
	cap int // the fair cap now (0: not moved yet, the ceiling)
	// alone is the 95th percentile of the single starts with no other
	// tenant's in progress (estimated), the last of which ended at aloneAt.
	alone   time.Duration
	aloneAt time.Time
	// minNow and minPrev are the shortest single starts of this window,
	// begun at windowAt, and of the one before (0: none).
	minNow, minPrev time.Duration
	windowAt        time.Time
	good, calm      int       // quiet starts within the target in a row; quiet starts before the cap may drop again
	quietAt         time.Time // when the last quiet start ended
}

// The fair cap's adaptation (see fairAdapt).
const (
	fairTarget     = 2
	fairBaseWindow = 10 * time.Second
	fairCalm       = 4
	fairRaise      = 4
)

type seenTenant struct {
	tenant string
	at     time.Time
}

// fairWindow is how long a tenant counts as active after its last start
// ended, for FairStartingPerTenant.
const fairWindow = time.Second

// maxGateTenants is how many tenants' (idle) slots the gate keeps before
// it forgets the idle ones.
const maxGateTenants = 256

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
	now := g.clock.Now()
	g.saw(tenant, now)
	s := g.tenants[tenant]
	if s == nil {
		if len(g.tenants) >= maxGateTenants {
			for k, s := range g.tenants {
				if s.n == 0 && len(s.waiters) == 0 {
					delete(g.tenants, k)
				}
			}
		}
		s = &gateSlots{}
		g.tenants[tenant] = s
	}
	if len(s.waiters) == 0 && s.n < g.limit(tenant, s, now) {
		s.single, s.singleAt = s.n == 0, now
		s.n++
		g.busy++
		g.mu.Unlock()
		return nil
	}
	s.single = false
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	for i, w := range s.waiters {
		if w == ch {
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

// leave frees the slot and hands the free slots of the tenant to its
// waiting callers, in order.
func (g *startGate) leave(tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	g.saw(tenant, now)
	s := g.tenants[tenant]
	if s.single && s.n == 1 && g.fair > 0 {
		g.adapt.sample(now.Sub(s.singleAt), g.busy > s.n, now, g.fair)
	}
	s.single = false
	s.n--
	g.busy--
	for len(s.waiters) > 0 && s.n < g.limit(tenant, s, now) {
		close(s.waiters[0])
		s.waiters[0] = nil
		s.waiters = s.waiters[1:]
		s.n++
		g.busy++
	}
}

// limit is how many starts tenant may have in progress now; g.mu is held.
func (g *startGate) limit(tenant string, s *gateSlots, now time.Time) int {
	l := math.MaxInt
	if g.max > 0 {
		l = g.max
	}
	if g.fair > 0 && g.fair < l && g.shared(tenant, s, now) {
		l = min(l, g.adapt.limit(now, g.fair))
	}
	return l
}

// sample records the time d of a start its tenant made alone, ended at
// now; beside says another tenant had starts in progress meanwhile (it is
// a quiet tenant's), and ceiling is FairStartingPerTenant.
func (a *fairAdapt) sample(d time.Duration, beside bool, now time.Time, ceiling int) {
	d = max(d, time.Nanosecond)
	if now.Sub(a.windowAt) >= fairBaseWindow {
		a.minPrev, a.minNow, a.windowAt = a.minNow, 0, now
	}
	if a.minNow == 0 || d < a.minNow {
		a.minNow = d
	}
	if !beside {
		switch {
		case a.alone == 0 || now.Sub(a.aloneAt) >= fairBaseWindow:
			a.alone = d
		case d > a.alone:
			a.alone += a.alone / 8
		default:
			a.alone -= a.alone / 152
		}
		a.aloneAt = now
		return
	}
	cur := a.limit(now, ceiling)
	a.quietAt = now
	if a.calm > 0 {
		a.calm--
	}
	if d > fairTarget*a.base(now) {
		a.good = 0
		if a.calm == 0 {
			a.cap, a.calm = max(1, cur-1), fairCalm
		} else {
			a.cap = cur
		}
		return
	}
	a.cap = cur
	if a.good++; a.good >= fairRaise {
		a.cap, a.good = min(ceiling, cur+1), 0
	}
}

// base is the baseline at now (see fairAdapt).
func (a *fairAdapt) base(now time.Time) time.Duration {
	if a.alone > 0 && now.Sub(a.aloneAt) < fairBaseWindow {
		return a.alone
	}
	m := a.minNow
	if a.minPrev > 0 {
		m = min(m, a.minPrev)
	}
	return 3 * m
}

// limit is the fair cap at now: the ceiling until a quiet start moved it,
// and again once none came for fairWindow.
func (a *fairAdapt) limit(now time.Time, ceiling int) int {
	if a.cap == 0 || now.Sub(a.quietAt) >= fairWindow {
		return ceiling
	}
	return min(a.cap, ceiling)
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
