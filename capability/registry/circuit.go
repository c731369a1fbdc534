package registry

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// ErrCircuitOpen marks the errs.Unavailable error of a call refused at once
// because the circuit of its provider and capability is open (or half-open
// with its trial call under way).
var ErrCircuitOpen = errors.New("capability: circuit open")

// Circuit states shown in CircuitOut.State.
const (
	CircuitOpen     = "open"
	CircuitHalfOpen = "half_open"
)

// CircuitOut is the circuit breaker of one capability of a provider that is
// not closed (GET /v1/connections).
type CircuitOut struct {
	// Capability is the capability id.
	Capability string `json:"capability"`
	// State is open (calls fail at once until RetryAt) or half_open (the
	// cool-down is over: the next call is a trial).
	State string `json:"state"`
	// Failures is the number of consecutive failures that are the
	// provider's fault.
	Failures int `json:"failures"`
	// RetryAt is when the cool-down ends and one trial call is let through.
	RetryAt time.Time `json:"retry_at"`
}

type circuitState uint8

const (
	stateClosed circuitState = iota
	stateOpen
	stateHalfOpen // the cool-down is over and a trial call is under way
)

// circuit is the breaker of one provider and capability. hot is false
// while it is closed without failures, so a healthy call takes no lock.
type circuit struct {
	hot atomic.Bool

	mu       sync.Mutex
	state    circuitState
	failures int
	retryAt  time.Time
}

// circuits holds the breakers of one provider, by capability. It survives
// Refresh (the provider entry is rebuilt, its circuits carried over).
type circuits struct {
	m sync.Map // capability -> *circuit
}

func (cs *circuits) get(capID string) *circuit {
	if c, ok := cs.m.Load(capID); ok {
		return c.(*circuit)
	}
	c, _ := cs.m.LoadOrStore(capID, &circuit{})
	return c.(*circuit)
}

// admit reports whether a call may go to the provider; trial says it is the
// half-open trial. A refused call gets an ErrCircuitOpen error.
func (r *Registry) admit(c *circuit, provider, capID string) (trial bool, err error) {
	if !c.hot.Load() {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case stateOpen:
		now := r.cfg.Clock.Now()
		if now.Before(c.retryAt) {
			return false, errors.Mark(errs.Unavailablef(
				"the circuit of provider %s for %s is open after %d consecutive failures; it lets a trial call through at %s",
				provider, capID, c.failures, c.retryAt.UTC().Format(time.RFC3339)), ErrCircuitOpen)
		}
		c.state = stateHalfOpen
		return true, nil
	case stateHalfOpen:
		return false, errors.Mark(errs.Unavailablef(
			"the circuit of provider %s for %s is half-open and its trial call is under way; retry shortly",
			provider, capID), ErrCircuitOpen)
	}
	return false, nil
}

// record notes the outcome of an admitted call.
func (r *Registry) record(ctx context.Context, c *circuit, trial bool, err error, provider, capID string) {
	fault := providerFault(ctx, err)
	if !trial && !c.hot.Load() && !fault {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case fault:
		c.failures++
		if trial || c.failures >= r.cfg.CircuitFailures {
			c.state = stateOpen
			c.retryAt = r.cfg.Clock.Now().Add(r.cfg.CircuitCoolDown)
			r.log.Warn("circuit opened", "provider", provider, "capability", capID,
				"failures", c.failures, "retry_at", c.retryAt)
		}
		c.hot.Store(true)
	case err != nil && !answered(err) && ctx.Err() != nil:
		// The caller gave up: that says nothing of the provider. A trial
		// cut short leaves the next call to be the trial.
		if trial {
			c.state = stateOpen
		}
	default:
		if c.state != stateClosed {
			r.log.Info("circuit closed", "provider", provider, "capability", capID)
		}
		c.state, c.failures, c.retryAt = stateClosed, 0, time.Time{}
		c.hot.Store(false)
	}
}

// answered reports whether err is an answer of the provider that is the
// caller's fault (invalid arguments, not found, conflict, refused, too
// large, rate limited): the provider is working.
func answered(err error) bool {
	switch errs.Kind(err) {
	case errs.Invalid, errs.NotFound, errs.Conflict, errs.Forbidden, errs.Unauthenticated, errs.TooLarge, errs.RateLimited:
		return true
	}
	return false
}

// providerFault reports whether err counts against the provider's
// circuit: a timeout, an unavailable provider, malformed output, a panic
// or another error without a caller's kind. A call the caller cancelled
// does not count.
func providerFault(ctx context.Context, err error) bool {
	switch {
	case err == nil || answered(err):
		return false
	case errors.Is(err, capability.ErrTimeout), errors.Is(err, capability.ErrMalformedOutput):
		return true
	case ctx.Err() != nil:
		return false
	}
	return true
}

// openCircuits returns the circuits of cs that are not closed, sorted by
// capability.
func (r *Registry) openCircuits(cs *circuits) []CircuitOut {
	var out []CircuitOut
	now := r.cfg.Clock.Now()
	cs.m.Range(func(k, v any) bool {
		c := v.(*circuit)
		if !c.hot.Load() {
			return true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		var state string
		switch {
		case c.state == stateHalfOpen, c.state == stateOpen && !now.Before(c.retryAt):
			state = CircuitHalfOpen
		case c.state == stateOpen:
			state = CircuitOpen
		default:
			return true
		}
		out = append(out, CircuitOut{Capability: k.(string), State: state, Failures: c.failures, RetryAt: c.retryAt})
		return true
	})
	slices.SortFunc(out, func(a, b CircuitOut) int { return strings.Compare(a.Capability, b.Capability) })
	return out
}
