package runengine

import (
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// errCorruptRun marks the error of a run record that cannot be decoded.
var errCorruptRun = errors.New("runengine: a run record that cannot be decoded")

// A timer whose run record cannot be decoded keeps its due key, and is
// retried after parkFirst, then after twice as long each time up to
// parkMost: before, every look from the first due key (about five a
// second on an idle engine) handed it out again, silently, for good.
const (
	parkFirst = time.Second
	parkMost  = time.Hour
)

// dueKey is the due key c came in (a timer's, or a command forwarded by
// another cluster node: its inbox key); nil for a command of no due key.
func (c *command) dueKey() []byte {
	switch {
	case c.cl != nil && c.cl.inbox != nil:
		return c.cl.inbox
	case c.kind == cmdTimer && c.timer != nil:
		return c.timer.key
	}
	return nil
}

// parkedKey is a due key a look steps over until its retry time.
type parkedKey struct {
	until time.Time     // on the engine's clock
	delay time.Duration // the last wait
}

// park lets go of a due key whose run record cannot be decoded (a
// timer's, or a forwarded command's),
// and has the looks step over it for a while: the first time it is
// logged, each time after it waits twice as long (up to parkMost). The
// key stays stored, so the timer fires once the record is repaired; it is
// forgotten once a commit deletes it (letGo).
func (s *scheduler) park(tenant, runID string, key []byte, err error) {
	now := s.e.clock.Now()
	s.mu.Lock()
	p, again := s.parked[string(key)]
	resume := s.letGo(key) // forgets it in s.parked
	p.delay = min(max(2*p.delay, parkFirst), parkMost)
	p.until = now.Add(p.delay)
	if s.parked == nil {
		s.parked = map[string]parkedKey{}
	}
	s.parked[string(key)] = p
	s.mu.Unlock()
	if !again {
		s.e.log.Error("runengine: a timer's run record cannot be decoded; the timer is kept and retried, at most hourly, until the record is repaired or removed",
			"tenant", tenant, "run", runID, "error", err)
	}
	if resume {
		s.signal()
	}
}

// forgetGoneParked forgets the parked keys due for their retry at now
// that the look will not find: deleted by another path than their own
// commit (the run was cancelled, or removed), or, on a cluster node, of a
// run whose shard another node now holds. r is the look's snapshot; s.mu
// not held. A key still there is left to the look, which hands it out.
func (s *scheduler) forgetGoneParked(r store.Reader, now time.Time) error {
	s.mu.Lock()
	var due []string
	var until []time.Time
	for key, p := range s.parked {
		if !now.Before(p.until) {
			due, until = append(due, key), append(until, p.until)
		}
	}
	s.mu.Unlock()
	var gone []int
	for i, key := range due {
		if cl := s.e.cluster; cl != nil {
			if parts, err := store.DecodeKey([]byte(key)); err == nil && len(parts) == 6 {
				if owner, _ := parts[4].(string); !cl.owns(owner) {
					gone = append(gone, i)
					continue
				}
			}
		}
		_, err := r.Get([]byte(key))
		switch {
		case errors.Is(err, store.ErrNotFound):
			gone = append(gone, i)
		case err != nil:
			return err
		}
	}
	if len(gone) == 0 {
		return nil
	}
	s.mu.Lock()
	for _, i := range gone {
		if p, ok := s.parked[due[i]]; ok && p.until.Equal(until[i]) { // not parked again since
			delete(s.parked, due[i])
		}
	}
	s.mu.Unlock()
	return nil
}

// isParked reports whether a look at now steps over key; s.mu held.
func (s *scheduler) isParked(key []byte, now time.Time) bool {
	p, ok := s.parked[string(key)]
	return ok && now.Before(p.until)
}
