package runengine

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"
)

// startGate caps the starts of a tenant being made at once
// (Config.MaxStartingPerTenant): a caller over the cap waits, parked and
// in the order it came, for one of the tenant's starts in progress to be
// durable. One tenant's many callers then cannot fill the workers' queues
// and the commits, nor keep the processors busy with goroutines ready to
// run, while another tenant's start goes in at once.
type startGate struct {
	max     int
	mu      sync.Mutex
	tenants map[string]*gateSlots
}

type gateSlots struct {
	n       int
	waiters []chan struct{}
}

func newStartGate(max int) *startGate {
	if max <= 0 {
		return nil
	}
	return &startGate{max: max, tenants: map[string]*gateSlots{}}
}

// enter waits for a slot of tenant; the caller calls leave once its start
// is answered. It fails only when ctx ends first.
func (g *startGate) enter(ctx context.Context, tenant string) error {
	g.mu.Lock()
	s := g.tenants[tenant]
	if s == nil {
		s = &gateSlots{}
		g.tenants[tenant] = s
	}
	if s.n < g.max {
		s.n++
		g.mu.Unlock()
		return nil
	}
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

// leave hands the slot to the tenant's next waiting caller, or frees it.
func (g *startGate) leave(tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.tenants[tenant]
	if len(s.waiters) > 0 {
		close(s.waiters[0])
		s.waiters[0] = nil
		s.waiters = s.waiters[1:]
		return
	}
	if s.n--; s.n == 0 {
		delete(g.tenants, tenant)
	}
}
