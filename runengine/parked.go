package runengine

import (
	"time"

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

// parkedKey is a due key a look steps over until its retry time.
type parkedKey struct {
	until time.Time     // on the engine's clock
	delay time.Duration // the last wait
}

// park lets go of a timer's due key whose run record cannot be decoded,
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

// isParked reports whether a look at now steps over key; s.mu held.
func (s *scheduler) isParked(key []byte, now time.Time) bool {
	p, ok := s.parked[string(key)]
	return ok && now.Before(p.until)
}
