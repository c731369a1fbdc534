package httpapi

import (
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/clock"
	"github.com/bas-platform/bas/internal/errs"
)

// rateLimiter is a token bucket per key or session: rate tokens a second, a
// burst of rate (at least 1). A zero rate admits everything.
type rateLimiter struct {
	rate    float64
	clock   clock.Clock
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, c clock.Clock) *rateLimiter {
	return &rateLimiter{rate: rate, clock: c, buckets: map[string]*bucket{}}
}

// allow takes a token for p, or returns a RateLimited error saying when one
// will be there.
func (l *rateLimiter) allow(p *access.Principal) error {
	if l.rate <= 0 {
		return nil
	}
	key := p.KeyID
	if key == "" {
		key = p.SessionID
	}
	burst := l.rate
	if burst < 1 {
		burst = 1
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) > 100_000 {
			l.buckets = map[string]*bucket{} // bound memory; buckets refill anyway
		}
		b = &bucket{tokens: burst, last: now}
		l.buckets[key] = b
	}
	b.tokens += now.Sub(b.last).Seconds() * l.rate
	if b.tokens > burst {
		b.tokens = burst
	}
	b.last = now
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
		return errs.RateLimitedAfter(wait)
	}
	b.tokens--
	return nil
}
