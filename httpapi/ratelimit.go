package httpapi

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// limiter is a token bucket per key: rate tokens a second up to burst
// (at least 1). A zero rate admits everything.
type limiter struct {
	rate, burst float64
	clock       clock.Clock
	msg         string // the 429's detail; "" for "rate limited"
	mu          sync.Mutex
	buckets     map[string]*bucket
	// overflow is the one bucket the keys share that arrive while
	// buckets is full of keys still in use: a flood of new keys limits
	// itself and never resets the buckets of the callers already known.
	overflow *bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds a limiter's memory: beyond it, buckets that have
// refilled are dropped (they hold nothing a new bucket would not).
const maxBuckets = 100_000

func newLimiter(rate, burst float64, c clock.Clock, msg string) *limiter {
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: burst, clock: c, msg: msg, buckets: map[string]*bucket{}}
}

// take takes a token for the key of parts (joined by NULs), or returns a
// RateLimited error saying when one will be there. The key is made as a
// string only for a new bucket.
func (l *limiter) take(parts ...string) error {
	if l == nil || l.rate <= 0 {
		return nil
	}
	var buf [128]byte
	key := buf[:0]
	for i, p := range parts {
		if i > 0 {
			key = append(key, 0)
		}
		key = append(key, p...)
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[string(key)]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.sweep(now)
		}
		switch {
		case len(l.buckets) < maxBuckets:
			b = &bucket{tokens: l.burst, last: now}
			l.buckets[string(key)] = b
		case l.overflow == nil:
			l.overflow = &bucket{tokens: l.burst, last: now}
			b = l.overflow
		default:
			b = l.overflow
		}
	}
	b.tokens += now.Sub(b.last).Seconds() * l.rate
	if b.tokens > l.burst {
		b.tokens = l.burst
	}
	b.last = now
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
		return errors.Mark(&errs.RateLimit{RetryAfter: wait, Msg: l.msg}, errs.RateLimited)
	}
	b.tokens--
	return nil
}

// sweep drops the buckets that have refilled by now (they hold nothing a
// new bucket would not). Buckets still in use stay: new keys then share
// the overflow bucket.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// source is the client address a request came from (its connection's
// host; a host behind a proxy sets RemoteAddr from the proxy's header
// before the handler sees the request).
func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// addressKey is the key of a per-address budget: route and address, the
// address in lower case.
func addressKey(route, addr string) string {
	return route + "\x00" + strings.ToLower(strings.TrimSpace(addr))
}

// principalKey is the key of an authenticated caller's share (its open
// streams; its request budget is the limiter's key of the same parts):
// its tenant and person, so that the keys a person makes share one.
func principalKey(tenant, user string) string { return tenant + "\x00" + user }
