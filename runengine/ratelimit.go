package runengine

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/refs"
	"github.com/cockroachdb/errors"
)

// RateLimit bounds the capability calls runs make: at most Limit calls per
// Per, for each tenant, and for each value of Key when set.
type RateLimit struct {
	// Capability is a capability id (crm.contact.create), or a provider's
	// prefix ending in a dot (crm.) for all of its capabilities.
	Capability string
	// Key, when set, is a path of the call's arguments (args.customer_id):
	// each value has its own limit (a call without one shares the empty
	// value's).
	Key string
	// Limit calls per Per.
	Limit int
	Per   time.Duration
}

func (l RateLimit) matches(capID string) bool {
	if strings.HasSuffix(l.Capability, ".") {
		return strings.HasPrefix(capID, l.Capability)
	}
	return l.Capability == capID
}

func (l RateLimit) String() string {
	s := fmt.Sprintf("rate limit of %s: %d per %s", l.Capability, l.Limit, l.Per)
	if l.Key != "" {
		s += " per " + l.Key
	}
	return s
}

// limiter keeps a token bucket per tenant, limit and key value. A call
// over the limit reserves the next free slot (the bucket goes below zero)
// and its run waits for it in the due-time index, so waiting runs are
// served in the order they came and none polls.
type limiter struct {
	limits  []RateLimit
	mu      sync.Mutex
	buckets map[bucketKey]*bucket
}

type bucketKey struct {
	tenant string
	limit  int
	key    string
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets is how many buckets the limiter keeps before it forgets the
// full ones (which it can make again as they were).
const maxBuckets = 10000

func newLimiter(limits []RateLimit) (*limiter, error) {
	if len(limits) == 0 {
		return nil, nil
	}
	for i, l := range limits {
		if l.Limit <= 0 || l.Per <= 0 || l.Capability == "" {
			return nil, errors.Newf("runengine: RateLimits[%d] needs a Capability, a Limit and a Per above zero", i)
		}
	}
	return &limiter{limits: limits, buckets: map[bucketKey]*bucket{}}, nil
}

// take takes a slot for a call of capID with args by tenant at now: it
// returns 0 when the call may go now, else how long to wait for the slot
// it reserved, and the limit's description.
func (l *limiter) take(tenant, capID string, args any, now time.Time) (time.Duration, string) {
	var wait time.Duration
	var why string
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, lim := range l.limits {
		if !lim.matches(capID) {
			continue
		}
		k := bucketKey{tenant: tenant, limit: i}
		if lim.Key != "" {
			if v, ok := refs.Lookup(map[string]any{"args": args}, lim.Key); ok {
				k.key, _ = refs.Text(v)
			}
		}
		rate := float64(lim.Limit) / float64(lim.Per)
		b := l.buckets[k]
		if b == nil {
			if len(l.buckets) >= maxBuckets {
				l.forgetFull(now)
			}
			b = &bucket{tokens: float64(lim.Limit), at: now}
			l.buckets[k] = b
		}
		b.tokens = min(float64(lim.Limit), b.tokens+float64(now.Sub(b.at))*rate)
		b.at = now
		b.tokens--
		if b.tokens < 0 {
			if w := time.Duration(-b.tokens / rate); w > wait {
				wait, why = w, lim.String()
			}
		}
	}
	return wait, why
}

// forgetFull drops the buckets that are full at now.
func (l *limiter) forgetFull(now time.Time) {
	for k, b := range l.buckets {
		lim := l.limits[k.limit]
		if b.tokens+float64(now.Sub(b.at))*float64(lim.Limit)/float64(lim.Per) >= float64(lim.Limit) {
			delete(l.buckets, k)
		}
	}
}

// rateLimited makes the step wait, in the due-time index, for the slot a
// rate limit reserved for its call, and reports whether it must; the call
// made when the wait ends uses the reservation.
func (x *exec) rateLimited(st *StepRun, capID string, args any) bool {
	lim := x.w.e.limiter
	if lim == nil {
		return false
	}
	if st.internal.RateReserved {
		st.internal.RateReserved = false
		x.dirty = true
		return false
	}
	wait, why := lim.take(x.r.Tenant, capID, args, x.now)
	if wait <= 0 {
		return false
	}
	st.internal.RateReserved = true
	token := "rate-" + x.now.Format("150405.000000")
	st.internal.WaitToken = token
	x.addTimer(x.now.Add(wait), token)
	x.wait(st, StepRunning)
	x.r.WaitingReason = why
	return true
}
