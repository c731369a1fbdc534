package runengine

import (
	"sync/atomic"
	"time"
)

// callerHold holds the open batch back, with nothing in flight, for the
// changes of the callers its last commit answered. A caller answered when
// a commit lands (a client starting runs one after another, a person
// completing tasks) usually sends its next change at once. Launched at
// once, the next commit carries only the changes that came while the last
// one synced, and a caller's next change arrives just after it launched:
// it waits for that whole commit, then for its own, about two syncs per
// change. Held until those callers are back (or holdMax passed), their
// changes go in the next commit: one sync each.
//
// It holds only after a commit that answered several callers (a lone
// caller's next change commits at once, as before), never while commits
// are in flight or once the engine closes, and for at most holdMax. It
// holds only while callers have lately come back within that bound on
// average (ret): callers that think between their changes, or hear their
// answers late (a client across a network), would only delay the batches
// held for them; one batch in probeEvery is then held to find out whether
// they now do. Nor while several tenants are active: the tenants' fair
// share shapes the batches then (see commitShare), and one tenant's
// callers must not hold back another's changes. A batch held is committed
// as soon as most of those callers' changes came.
type callerHold struct {
	// last is how many deltas of the last launched batch had a caller
	// waiting (delta.caller).
	last int
	// seen is how many deltas of the open batch wait has looked at, and
	// callers how many of them had a caller waiting; base is how many of
	// those came before the hold began (while the last commit was in
	// flight: not the callers it answered).
	seen, callers, base int
	// since and until are when the hold of the open batch began and
	// ends (zero: not begun).
	since, until time.Time
	// off says the open batch is not held (see ret).
	off bool
	// ret is how long callers took to come back lately (a moving
	// average; a hold they outlasted counts one and a half times its
	// bound), and probe how many more batches launch at once while ret
	// is too long.
	ret   time.Duration
	probe int
	timer *time.Timer
	// flight is how long the last commit took from its launch until it
	// was durable (set by its callback).
	flight atomic.Int64
	// maxWait, when set, replaces holdMax (tests).
	maxWait func() time.Duration
}

// holdMax bounds how long a batch waits for callers to come back: the last
// commit's flight (a change that misses the launch waits a whole one, and
// then its own), at most holdCap.
func (h *callerHold) holdMax() time.Duration {
	if h.maxWait != nil {
		return h.maxWait()
	}
	return min(time.Duration(h.flight.Load()), holdCap)
}

// holdCap bounds holdMax.
const holdCap = 2 * time.Millisecond

// probeEvery is how often a batch is held while callers lately took too
// long to come back (see callerHold.ret).
const probeEvery = 16

// holdFrom is the fewest callers answered by one commit that make the next
// one wait for them.
const holdFrom = 2

// wait reports whether the open batch (nothing in flight) should wait for
// more callers' changes, arming the timer that ends the wait. The last
// fresh deltas of open were added just now, the others before.
func (h *callerHold) wait(open []*delta, fresh int) bool {
	if h.last < holdFrom || h.off {
		return false
	}
	began := h.until.IsZero()
	var bound time.Duration
	if began {
		bound = h.holdMax()
		if h.ret > bound {
			if h.probe > 0 {
				h.probe--
				h.off = true
				return false
			}
			h.probe = probeEvery - 1
		}
		// The first look since the launch: the commit landed just now.
		// The callers of the changes that came while it was in flight
		// are not those it answered.
		h.count(open[:max(len(open)-fresh, 0)])
		h.base = h.callers
	}
	h.count(open)
	want := h.base + h.last - h.last/4 // most of them: stragglers go in the next one
	if h.callers >= want {
		if !began {
			h.note(time.Since(h.since))
		}
		return false
	}
	now := time.Now()
	if began {
		h.since, h.until = now, now.Add(bound)
	}
	if !now.Before(h.until) {
		h.note(h.until.Sub(h.since) * 3 / 2) // they did not come back in time
		return false
	}
	if h.timer == nil {
		h.timer = time.NewTimer(h.until.Sub(now))
	}
	return true
}

// note adds how long callers took to come back to ret.
func (h *callerHold) note(took time.Duration) { h.ret += (took - h.ret) / 4 }

// count counts the callers of open's deltas not counted yet.
func (h *callerHold) count(open []*delta) {
	for _, d := range open[min(h.seen, len(open)):] {
		if d.caller {
			h.callers++
		}
	}
	h.seen = max(h.seen, len(open))
}

// timerC is the channel of the timer that ends a wait; nil when none.
func (h *callerHold) timerC() <-chan time.Time {
	if h.timer == nil {
		return nil
	}
	return h.timer.C
}

// fired notes that the timer ended a wait.
func (h *callerHold) fired() { h.timer = nil }

// launched starts the count over for the next batch, after batch was
// launched.
func (h *callerHold) launched(batch []*delta) {
	h.count(batch)
	h.last = h.callers
	h.seen, h.callers, h.base, h.off = 0, 0, 0, false
	h.since, h.until = time.Time{}, time.Time{}
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}
