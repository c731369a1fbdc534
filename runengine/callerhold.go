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
// are in flight or once the engine closes, and for at most holdMax: when
// the callers did not come back by then, the next batches (1, 2, 4 ... up
// to maxBackoff) launch at once. Nor
// while several tenants are active: the tenants' fair share shapes the
// batches then (see commitShare), and one tenant's callers must not hold
// back another's changes.
// A batch held is committed as soon as most of those callers' changes came.
type callerHold struct {
	// last is how many deltas of the last launched batch had a caller
	// waiting (delta.caller).
	last int
	// seen is how many deltas of the open batch wait has looked at, and
	// callers how many of them had a caller waiting; base is how many of
	// those came before the hold began (while the last commit was in
	// flight: not the callers it answered).
	seen, callers, base int
	// until is when the hold of the open batch ends (zero: not begun).
	until time.Time
	// skip is how many more batches launch without a hold, after one
	// whose callers did not come back in time; backoff is how many the
	// last such hold made skip (doubled at each, up to maxBackoff;
	// cleared when callers come back in time).
	skip, backoff int
	timer         *time.Timer
	c             <-chan time.Time
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

// maxBackoff bounds callerHold.backoff: while callers keep not coming back
// in time, one batch in maxBackoff+1 is held (and finds out whether they
// now do).
const maxBackoff = 64

// holdFrom is the fewest callers answered by one commit that make the next
// one wait for them.
const holdFrom = 2

// wait reports whether the open batch (nothing in flight) should wait for
// more callers' changes, arming the timer that ends the wait. The last
// fresh deltas of open were added just now, the others before.
func (h *callerHold) wait(open []*delta, fresh int) bool {
	if h.last < holdFrom || h.skip > 0 {
		return false
	}
	began := h.until.IsZero()
	if began {
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
			h.backoff = 0 // they came back in time
		}
		return false
	}
	now := time.Now()
	if began {
		h.until = now.Add(h.holdMax())
	}
	if !now.Before(h.until) {
		// They did not come back in time: such callers (a client that
		// thinks between its changes, or is slow to hear its answer) only
		// delay the batches held for them. Try again later.
		h.backoff = min(max(2*h.backoff, 1), maxBackoff)
		h.skip = h.backoff + 1 // this batch's launch counts one
		return false
	}
	if h.timer == nil {
		h.timer = time.NewTimer(h.until.Sub(now))
		h.c = h.timer.C
	}
	return true
}

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
func (h *callerHold) timerC() <-chan time.Time { return h.c }

// fired notes that the timer ended a wait.
func (h *callerHold) fired() { h.timer, h.c = nil, nil }

// launched starts the count over for the next batch, after batch was
// launched.
func (h *callerHold) launched(batch []*delta) {
	h.count(batch)
	h.last = h.callers
	if h.skip > 0 {
		h.skip--
	}
	h.seen, h.callers, h.base, h.until = 0, 0, 0, time.Time{}
	if h.timer != nil {
		h.timer.Stop()
		h.timer, h.c = nil, nil
	}
}
