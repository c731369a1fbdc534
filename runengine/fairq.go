package runengine

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/store/clock"
)

// fairQuantum is how many commands of one tenant a worker handles in a
// round while other tenants have commands waiting.
const fairQuantum = 16

// maxQueuedTenants is how many tenants' (empty) queues a worker keeps
// before it forgets the empty ones.
const maxQueuedTenants = 64

// fairQueue is a worker's queue of commands, one FIFO per tenant, handed
// out in rounds: a round takes up to fairQuantum commands of each tenant
// with commands waiting, in turn, so one tenant flooding a worker delays
// another's command by at most a round, not by its whole backlog. That
// holds with one tenant waiting too, while another tenant's commands came
// lately (within mixWindow commands): its round is fairQuantum commands,
// so another tenant's command that comes meanwhile waits for those, not
// for the hundreds a flood may have queued (a round costs the worker a
// lock and no copy: a tenant's FIFO advances a head). A tenant alone gets
// all its commands in a round, as from a plain FIFO.
type fairQueue struct {
	// ordered are commands handed out before any tenant's, in order: the
	// commands that were queued when an engine command (one of no tenant,
	// a cluster node's change of shards) came, then that command. An
	// engine command is a barrier: it is handled after every command
	// queued before it and before every command queued after it.
	ordered []*command
	tenants map[string]*tenantCmds
	// active are the tenants with commands waiting, in the order they are
	// served.
	active []*tenantCmds
	// pushes counts the tenants' commands pushed, mixed is the count at
	// the last one whose tenant was not the one before it's (0: never),
	// and last is that tenant.
	pushes, mixed uint64
	last          string
}

// mixWindow is how many commands after another tenant's last came a lone
// tenant's rounds stay fairQuantum long.
const mixWindow = 4096

// tenantCmds is one tenant's FIFO: its commands waiting are q[head:].
type tenantCmds struct {
	q      []*command
	head   int
	active bool
}

// waiting is how many commands of the tenant wait.
func (t *tenantCmds) waiting() int { return len(t.q) - t.head }

// take appends the next m of the tenant's commands to out and returns it.
// The FIFO's array is reused from its start once it is empty, and its
// waiting commands moved to the start once at least half of it and
// compactAt are taken, so a FIFO that never empties stays about twice its
// backlog and moves each command at most once on average.
func (t *tenantCmds) take(out []*command, m int) []*command {
	out = append(out, t.q[t.head:t.head+m]...)
	clear(t.q[t.head : t.head+m])
	t.head += m
	switch {
	case t.head == len(t.q):
		t.q, t.head = t.q[:0], 0
	case t.head >= compactAt && 2*t.head >= len(t.q):
		n := copy(t.q, t.q[t.head:])
		clear(t.q[n:])
		t.q, t.head = t.q[:n], 0
	}
	return out
}

// compactAt is how many commands taken from a FIFO's front make it worth
// moving the waiting ones to the start of its array.
const compactAt = 256

// push queues c behind its tenant's commands; an engine command (no
// tenant) behind every command queued.
func (f *fairQueue) push(c *command) {
	if c.tenant == "" {
		for len(f.active) > 0 {
			f.ordered = f.tenantRound(f.ordered)
		}
		f.ordered = append(f.ordered, c)
		return
	}
	f.pushes++
	if c.tenant != f.last {
		if f.last != "" {
			f.mixed = f.pushes
		}
		f.last = c.tenant
	}
	t := f.tenants[c.tenant]
	if t == nil {
		if f.tenants == nil {
			f.tenants = map[string]*tenantCmds{}
		} else if len(f.tenants) >= maxQueuedTenants {
			for k, t := range f.tenants {
				if !t.active {
					delete(f.tenants, k)
				}
			}
		}
		t = &tenantCmds{}
		f.tenants[c.tenant] = t
	}
	t.q = append(t.q, c)
	if !t.active {
		t.active = true
		f.active = append(f.active, t)
	}
}

// round appends the commands of the next round to out and returns it.
func (f *fairQueue) round(out []*command) []*command {
	if len(f.ordered) > 0 {
		out = append(out, f.ordered...)
		clear(f.ordered)
		f.ordered = f.ordered[:0]
		return out
	}
	return f.tenantRound(out)
}

// tenantRound appends the next round of the tenants' commands to out: the
// tenants with the fewest commands waiting first, so a quiet tenant's
// command (a run's next step, after its call returned) is handled before
// the flooding tenant's share of the round, not after it; each tenant's in
// the order they came.
func (f *fairQueue) tenantRound(out []*command) []*command {
	if len(f.active) > 1 {
		slices.SortStableFunc(f.active, func(a, b *tenantCmds) int { return a.waiting() - b.waiting() })
	}
	quantum := fairQuantum
	if len(f.active) == 1 && (f.mixed == 0 || f.pushes-f.mixed > mixWindow) {
		quantum = f.active[0].waiting() // alone lately: all of it
	}
	k := 0
	for _, t := range f.active {
		out = t.take(out, min(t.waiting(), quantum))
		if t.waiting() > 0 {
			f.active[k] = t
			k++
		} else {
			t.active = false
		}
	}
	clear(f.active[k:])
	f.active = f.active[:k]
	return out
}

// commitQuantum is how many changes of one tenant a commit carries while
// another tenant has committed lately: a tenant flooding the engine then
// cannot make the commits others wait for long.
const commitQuantum = 64

// shareWindow is how many commits a tenant counts as active after its
// last change.
const shareWindow = 32

// commitShare is the committer's fair share of commits between tenants:
// while more than one tenant is active, a transaction takes at most
// commitQuantum changes of each, and holds the rest back, in order, for the
// next one. A tenant alone gets whole batches, as before. It is the
// committer goroutine's own state.
type commitShare struct {
	seq    uint64            // commits launched
	recent map[string]uint64 // tenant -> seq of its last commit, for those within shareWindow
	// rate is, per tenant of recent, its changes per commit launched,
	// smoothed (in 1/rateOne changes), and lone its changes committed alone
	// since the last launch: only a tenant lighter than another commits
	// alone (see quiet).
	rate   map[string]int
	lone   map[string]int
	inOpen map[string]int // tenant -> its changes in the open transaction
	held   []*delta       // changes held back, in the order they came
	heldOf map[string]int // tenant -> its changes in held
	// flying are the tenants of the commit launched last, until a change
	// commits alone on their account (see quiet).
	flying []string
}

// hold reports whether d must wait for a later transaction, and keeps it
// if so; otherwise it counts d in the open transaction.
func (s *commitShare) hold(d *delta) bool {
	if d.tenant == "" {
		return false
	}
	if s.inOpen == nil {
		s.inOpen, s.recent, s.heldOf = map[string]int{}, map[string]uint64{}, map[string]int{}
		s.rate, s.lone = map[string]int{}, map[string]int{}
	}
	if s.heldOf[d.tenant] > 0 || (s.inOpen[d.tenant] >= commitQuantum && s.shared(d.tenant)) {
		s.held = append(s.held, d)
		s.heldOf[d.tenant]++
		return true
	}
	s.inOpen[d.tenant]++
	return false
}

// shared reports whether a tenant other than tenant is active: it has
// changes in the open transaction or committed within the window.
func (s *commitShare) shared(tenant string) bool {
	for t := range s.inOpen {
		if t != tenant {
			return true
		}
	}
	for t := range s.recent {
		if t != tenant {
			return true
		}
	}
	return false
}

// quiet reports whether d may commit in a transaction of its own, at once,
// rather than in the open one (the caller checks that commits are in
// flight): its tenant has no change in the open transaction nor held back
// (so none of its changes is overtaken), and another tenant has changes in
// the open transaction or in the commit launched last. A tenant making a
// change now and then is then never behind another's full batch: its
// change goes to the store while the batch in flight syncs, and is
// written as soon as that one is, alone. That holds for its first change
// too, the one that makes it active: when the open transaction is still
// empty, that change would otherwise wait there for the other tenant's
// commit to land and then sync with whatever of that tenant's came
// meanwhile. Only a tenant lighter than that other one commits alone (see
// lighter): two tenants would otherwise take turns at it, and the flooding
// one, its change alone whenever the quiet one's sits in the open
// transaction, would hold that transaction back (a lone commit in flight
// keeps it waiting, see awaitQuiet). It counts d as its tenant's activity.
func (s *commitShare) quiet(d *delta) bool {
	if d.tenant == "" || d.reads || s.inOpen == nil || s.inOpen[d.tenant] > 0 || s.heldOf[d.tenant] > 0 {
		return false
	}
	for t := range s.inOpen {
		if t != d.tenant && s.lighter(d.tenant, t) {
			s.alone(d.tenant)
			return true
		}
	}
	if len(s.inOpen) == 0 {
		for _, t := range s.flying {
			if t != d.tenant && s.lighter(d.tenant, t) {
				// Once per launch: the changes after d find d's tenant
				// active, or another tenant's in the open transaction.
				s.flying = s.flying[:0]
				s.alone(d.tenant)
				return true
			}
		}
	}
	return false
}

// rateOne is one change per commit in commitShare.rate.
const rateOne = 16

// lighter reports whether tenant makes fewer changes than other: per
// commit launched lately, counting those since the last launch as one more
// commit's. A tenant never seen is lighter than any that made one.
func (s *commitShare) lighter(tenant, other string) bool {
	load := func(t string) int { return s.rate[t] + rateOne*(s.inOpen[t]+s.lone[t]) }
	return load(tenant) < load(other)
}

// alone counts a change of tenant committed alone as its activity.
func (s *commitShare) alone(tenant string) {
	s.recent[tenant] = s.seq
	s.lone[tenant]++
}

// several reports whether more than one tenant is active: has changes in
// the open transaction or committed within the window.
func (s *commitShare) several() bool {
	one, n := "", 0
	see := func(t string) {
		if n == 0 || t != one {
			one = t
			n++
		}
	}
	for t := range s.inOpen {
		see(t)
	}
	for t := range s.recent {
		see(t)
	}
	return n > 1
}

// launched records the open transaction's tenants as it commits, forgets
// the tenants not seen within the window, and returns the held changes to
// add to the next transaction.
func (s *commitShare) launched() []*delta {
	if s.inOpen == nil {
		return nil
	}
	s.seq++
	s.flying = s.flying[:0]
	for t := range s.inOpen {
		s.recent[t] = s.seq
		s.flying = append(s.flying, t)
	}
	for t, at := range s.recent {
		if s.seq-at > shareWindow {
			delete(s.recent, t)
			delete(s.rate, t)
			continue
		}
		// rate += (changes - rate) / 8, in 1/rateOne changes.
		s.rate[t] += (s.inOpen[t]+s.lone[t])*rateOne/8 - s.rate[t]/8
	}
	clear(s.inOpen)
	clear(s.lone)
	return s.takeHeld()
}

// takeHeld returns the held changes and holds none.
func (s *commitShare) takeHeld() []*delta {
	if len(s.held) == 0 {
		return nil
	}
	held := s.held
	s.held = nil
	clear(s.heldOf)
	return held
}

// light returns the tenant of the open transaction that makes the fewest
// changes lately (see lighter), if it makes fewer than another active
// tenant (one with changes in the open transaction or committed within the
// window); "" when none does. The commit's light tenant is the one whose
// next change is awaited (see anticipation): a batch holding one change of
// a quiet tenant and one of a flooding tenant, or only the quiet tenant's
// change, has one as long as the flood is active.
func (s *commitShare) light() string {
	light := ""
	for t := range s.inOpen {
		if light == "" || s.lighter(t, light) {
			light = t
		}
	}
	if light == "" {
		return ""
	}
	for t := range s.inOpen {
		if t != light && s.lighter(light, t) {
			return light
		}
	}
	for t := range s.recent {
		if t != light && s.lighter(light, t) {
			return light
		}
	}
	return ""
}

// anticipation is the committer's wait for a quiet tenant's next change,
// as an anticipatory disk scheduler waits for the next read of the process
// it just served: a quiet tenant's change comes soon after its last one
// landed (the step after a run's start, the next run after an end), and
// the store writes commits one after another, each with its own sync. Were
// the flooding tenant's next batch launched the moment the quiet tenant's
// commit landed, the quiet tenant's next change would find it syncing and
// wait for that sync beside its own. So once a commit holding a quiet
// tenant's change lands (one it made alone, or a batch where it is the
// light tenant, see light), the open batch of the others waits, with
// nothing in flight, until that tenant's next change comes and joins it,
// or for aheadMax: its change then pays one sync, and the flood loses at
// most aheadMax per commit of the quiet tenant, and only when the tenant
// does not come back within it (a wait ends as the change comes). The
// wait is not shorter for a tenant whose changes lately came quickly: most
// come within tens of microseconds (a run's next step), but some take a
// few hundred (its next run, after the caller heard of the last one's
// end), more on a busy machine, and one that comes after the wait commits
// alone behind the flood's commit then in flight, paying that commit's sync
// beside its own. A wait learnt from the times lately (their mean plus four
// deviations, and a quarter more than the latest of the last 32) missed the
// late ones often enough to set the quiet tenant's p99: in BenchmarkFairness
// on a busy machine 1.5-3% of its runs' starts committed alone behind a
// flood commit, against 0.4-1.6% with aheadMax. While the time its changes
// took to come, smoothed, is over half of aheadMax (quiet tenants do not
// come back soon: a person completing a task now and then) nothing waits,
// and the time is still measured. A tenant alone never waits.
//
// A commit whose quiet change leaves its run going on (a call or gate
// decision of it in flight, see delta.goesOn) is sure to be followed by
// that run's next change once the call returns; the changes that may never
// come (a caller's next run) are the others. The time each kind took is
// smoothed apart (think, sureThink), and while one kind takes over half of
// aheadMax (slow calls, or callers that think) the batch does not wait for
// that kind.
type anticipation struct {
	flying atomic.Int32 // quiet tenants' commits in flight (commitAlone)
	on     atomic.Bool  // a tenant is awaited
	mu     sync.Mutex
	tenant string    // the awaited tenant
	since  time.Time // when its commit landed
	// sure says the awaited change is sure to come (its run goes on), and
	// sureThink is how long such changes took to come, smoothed.
	sure      bool
	sureThink time.Duration
	think     time.Duration // how long its next change took to come, smoothed (one not sure to)
	// The committer goroutine's own: the timer that ends the wait, and
	// when it fires.
	timer clock.Timer
	at    time.Time
}

// aheadMax is how long the open batch waits for a quiet tenant's next
// change; aheadThink is the basis of the time such changes take, smoothed,
// before any was measured.
const (
	aheadMax   = time.Millisecond
	aheadThink = 250 * time.Microsecond
	// aheadForget is how long after its commit landed a tenant's next
	// change stops being awaited (and is counted as aheadMax late).
	aheadForget = 4 * aheadMax
)

// landed records that a commit holding tenant's change landed at now: its
// next change is awaited, sure to come when the commit left a run of it
// going on.
func (a *anticipation) landed(tenant string, now time.Time, sure bool) {
	a.mu.Lock()
	a.tenant, a.since, a.sure = tenant, now, sure
	a.on.Store(true)
	a.mu.Unlock()
}

// came records a change of tenant at now, and reports whether it is the
// awaited one: then the wait ends and its length (at most aheadMax) is
// smoothed into think or sureThink.
func (a *anticipation) came(tenant string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tenant != a.tenant {
		return false
	}
	took := min(now.Sub(a.since), aheadMax)
	if a.sure {
		a.sureThink += (took - a.sureThink) / 4
	} else {
		a.measured(took)
	}
	a.tenant = ""
	a.on.Store(false)
	return true
}

// measured smooths took, the time a quiet tenant's next change (one not
// sure to come) took to come, into think; a.mu is held.
func (a *anticipation) measured(took time.Duration) {
	if a.think == 0 {
		a.think = aheadThink
	}
	a.think += (took - a.think) / 4
}

// slow reports whether a quiet tenant's next change, sure to come or not,
// lately took over half of aheadMax to come: then nothing waits for it.
func (a *anticipation) slow(sure bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slowLocked(sure)
}

// slowLocked is slow; a.mu is held.
func (a *anticipation) slowLocked(sure bool) bool {
	if sure {
		return a.sureThink > aheadMax/2
	}
	return a.think > aheadMax/2
}

// timerC is the channel of the timer that ends a wait; nil when none.
func (a *anticipation) timerC() <-chan time.Time {
	if a.timer == nil {
		return nil
	}
	return a.timer.C()
}

// stop stops the timer.
func (a *anticipation) stop() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}

// awaitQuiet reports whether the open batch, with nothing in flight, must
// wait for an awaited quiet tenant's change (see anticipation), and sets
// the timer that ends the wait if so.
func (c *committer) awaitQuiet() bool {
	a := &c.ahead
	if a.flying.Load() > 0 {
		return true // its landing signals the committer
	}
	if !a.on.Load() {
		return false
	}
	now := c.now()
	a.mu.Lock()
	tenant, since, until := a.tenant, a.since, a.since.Add(aheadMax)
	slow := a.slowLocked(a.sure)
	if tenant != "" && now.Sub(since) >= aheadForget {
		// It did not come back: count it as late as can be.
		if a.sure {
			a.sureThink += (aheadMax - a.sureThink) / 4
		} else {
			a.measured(aheadMax)
		}
		a.tenant = ""
		a.on.Store(false)
	}
	a.mu.Unlock()
	if tenant == "" || slow || c.share.inOpen[tenant] > 0 || !now.Before(until) {
		return false // came() still measures how late its change comes
	}
	if a.timer == nil || !a.at.Equal(until) {
		a.stop()
		a.timer, a.at = c.clockOf().NewTimer(until.Sub(now)), until
	}
	return true
}

// clockOf returns the committer's clock.
func (c *committer) clockOf() clock.Clock {
	if c.clock == nil {
		return clock.Real{}
	}
	return c.clock
}

// now reads the committer's clock.
func (c *committer) now() time.Time {
	if c.clock == nil {
		return time.Now()
	}
	return c.clock.Now()
}
