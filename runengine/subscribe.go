package runengine

import (
	"context"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/cockroachdb/errors"
)

// SubscribeParams choose the events a subscription delivers.
type SubscribeParams struct {
	// Tenant whose events are delivered. Required.
	Tenant string
	// Names keeps events of these names; a name ending in ".*" keeps every
	// name that starts with what comes before the "*" (task.* keeps
	// task.created and task.completed). Empty keeps every event.
	Names []string
	// After resumes right after the event whose Notice carried this
	// cursor. Empty starts with the events committed after Subscribe is
	// called. The kept events live in memory: a cursor from before the
	// workspace last opened (a restart) is handed ErrMissed at once, and
	// the subscriber reads the state again.
	After string
}

// Notice is an event delivered to a subscriber.
type Notice struct {
	// Event is the event, a copy the subscriber may keep.
	Event *Event
	// Cursor resumes a subscription right after this event
	// (SubscribeParams.After).
	Cursor string
}

// ErrMissed is what a subscription yields when the subscriber fell behind
// the events the engine keeps (Config.SubscribeBuffer), or resumed from a
// cursor the engine no longer holds (it was reopened, or the tenant had no
// subscriber for a while). The events in between are lost to it, never the
// state they told of: runs, tasks and approvals are read again with
// ListRuns, ListTasks and ListApprovals. It is marked bas.ErrConflict.
var ErrMissed = errors.Mark(errors.New("runengine: the subscriber missed events; read the state again"), errs.Conflict)

// Subscribe delivers the events of a tenant once their commit is durable:
// runs started and completed, tasks created and completed, approvals
// requested and decided, events apps emit and events published, in the
// order the engine dispatches them. The engine never waits for a
// subscriber: it keeps the last Config.SubscribeBuffer events, and a
// subscriber that falls further behind is handed ErrMissed (with the
// cursor it continues from) and goes on with the oldest kept event. An
// event may be delivered twice after a crash.
//
// The subscription starts when Subscribe is called and ends when ctx
// does or when the loop over it stops; ranging over it a second time
// continues where the first stopped. While a tenant has a subscriber,
// every event of it is written to the outbox (otherwise only events some
// process or run listens to are).
//
// On a node of a cluster (Config.Cluster) a subscription delivers every
// node's events: those another node made arrive through a feed in the
// store that the node dispatching the outbox writes (a little later than
// this node's own), from when that node knows of the subscription (within
// about half a second of its start; it may also be handed events made a
// few seconds before). A cursor belongs to the node that gave it.
func (e *Engine) Subscribe(ctx context.Context, p SubscribeParams) iter.Seq2[Notice, error] {
	s := e.hub.subscribe(p)
	stop := context.AfterFunc(ctx, s.close)
	return func(yield func(Notice, error) bool) {
		defer func() {
			stop()
			s.close()
		}()
		if p.Tenant == "" {
			yield(Notice{}, errs.Invalidf([]any{"tenant"}, "missing", "is required"))
			return
		}
		for {
			batch, missed, wake := s.next()
			if missed != "" {
				if !yield(Notice{Cursor: missed}, ErrMissed) {
					return
				}
			}
			for _, n := range batch {
				if !yield(n, nil) {
					return
				}
			}
			if len(batch) > 0 || missed != "" {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(Notice{}, errors.WithStack(ctx.Err()))
				return
			case <-e.ctx.Done():
				yield(Notice{}, errClosed)
				return
			}
		}
	}
}

// hub keeps the latest events of tenants that have a subscriber, in a
// ring numbered by sequence.
type hub struct {
	epoch string // tells this engine's cursors from another's
	any   atomic.Int64

	mu      sync.Mutex
	ring    []*Event
	next    uint64            // sequence of the next event
	wake    chan struct{}     // closed at the next publish
	tenants map[string]int    // subscribers by tenant
	quiet   map[string]uint64 // sequence when a tenant's last subscriber left
}

func newHub(size int) *hub {
	// The epoch is made on the wall clock by a generator of its own: the
	// engine's ids follow its clock, which tests may hold in the past.
	var g ids.Generator
	return &hub{epoch: strings.ReplaceAll(g.New("sub", time.Now()), "_", ""), ring: make([]*Event, size),
		next: 1, wake: make(chan struct{}), tenants: map[string]int{}, quiet: map[string]uint64{}}
}

// wants reports whether tenant has a subscriber.
func (h *hub) wants(tenant string) bool {
	if h.any.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tenants[tenant] > 0
}

// subscribed returns the tenants with a subscriber.
func (h *hub) subscribed() []string {
	if h.any.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.tenants))
	for t := range h.tenants {
		out = append(out, t)
	}
	return out
}

// publish keeps the events of tenants with a subscriber and wakes them.
func (h *hub) publish(evs []*Event) {
	if h.any.Load() == 0 {
		return
	}
	h.mu.Lock()
	kept := false
	for _, ev := range evs {
		if h.tenants[ev.Tenant] == 0 {
			continue
		}
		h.ring[h.next%uint64(len(h.ring))] = ev
		h.next++
		kept = true
	}
	var wake chan struct{}
	if kept {
		wake = h.wake
		h.wake = make(chan struct{})
	}
	h.mu.Unlock()
	if wake != nil {
		close(wake)
	}
}

func (h *hub) cursor(seq uint64) string { return h.epoch + "." + strconv.FormatUint(seq, 10) }

// subscription is one subscriber's place in the hub.
type subscription struct {
	hub    *hub
	p      SubscribeParams
	pos    uint64 // sequence of the next event to deliver
	missed bool   // the first delivery says events were missed
	once   sync.Once
}

func (h *hub) subscribe(p SubscribeParams) *subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &subscription{hub: h, p: p, pos: h.next}
	if p.After != "" {
		epoch, seq, ok := strings.Cut(p.After, ".")
		n, err := strconv.ParseUint(seq, 10, 64)
		switch {
		case !ok || err != nil || epoch != h.epoch || n >= h.next:
			s.missed = true
		case h.tenants[p.Tenant] == 0 && h.quiet[p.Tenant] > n:
			// Nothing kept the tenant's events since the cursor.
			s.missed = true
		default:
			s.pos = n + 1
		}
	}
	h.tenants[p.Tenant]++
	h.any.Add(1)
	return s
}

func (s *subscription) close() {
	s.once.Do(func() {
		h := s.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.tenants[s.p.Tenant]--; h.tenants[s.p.Tenant] == 0 {
			delete(h.tenants, s.p.Tenant)
			h.quiet[s.p.Tenant] = h.next
		}
		h.any.Add(-1)
	})
}

// next returns the events to deliver, when some were missed first the
// cursor the subscriber goes on from, and a channel closed when more may
// come.
func (s *subscription) next() (batch []Notice, missed string, wake <-chan struct{}) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if oldest := h.next - min(h.next-1, uint64(len(h.ring))); s.pos < oldest {
		s.pos, s.missed = oldest, true
	}
	if s.missed {
		s.missed = false
		missed = h.cursor(s.pos - 1)
	}
	for ; s.pos < h.next && len(batch) < 256; s.pos++ {
		ev := h.ring[s.pos%uint64(len(h.ring))]
		if ev.Tenant != s.p.Tenant || !s.keeps(ev.Name) {
			continue
		}
		batch = append(batch, Notice{Event: cloneEvent(ev), Cursor: h.cursor(s.pos)})
	}
	return batch, missed, h.wake
}

func (s *subscription) keeps(name string) bool {
	if len(s.p.Names) == 0 {
		return true
	}
	for _, n := range s.p.Names {
		if prefix, ok := strings.CutSuffix(n, "*"); ok && strings.HasPrefix(name, prefix) || n == name {
			return true
		}
	}
	return false
}
