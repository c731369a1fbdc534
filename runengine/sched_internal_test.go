package runengine

import (
	"testing"
	"time"
)

// TestSafetyResetSpacing: the safety tick makes the next look start at the
// first due key only when no timer is in flight, and no sooner than
// fullLookShare times the last such look's scan took (at least safetyTick)
// after it ended: after a million timers fired, that scan steps over a
// million deleted keys.
func TestSafetyResetSpacing(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		took     time.Duration
		after    time.Duration // since the last look from the first due key ended
		inflight bool
		reset    bool
	}{
		{name: "cheap look, a tick later", took: time.Millisecond, after: safetyTick, reset: true},
		{name: "cheap look, just before a tick", took: time.Millisecond, after: safetyTick - time.Nanosecond},
		{name: "costly look, spaced by its cost", took: 100 * time.Millisecond, after: fullLookShare * 100 * time.Millisecond, reset: true},
		{name: "costly look, just before its spacing", took: 100 * time.Millisecond, after: fullLookShare*100*time.Millisecond - time.Nanosecond},
		{name: "costly look, a tick later", took: 100 * time.Millisecond, after: safetyTick},
		{name: "timers in flight", took: time.Millisecond, after: time.Hour, inflight: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(nil)
			s.cursor, s.cursorAt = dueKey(t0, "ten_a", "run_1", "t"), t0
			s.fullTook, s.fullEnded = tc.took, t0
			if tc.inflight {
				s.inflight["k"] = t0
			}
			gen := s.gen
			s.safetyReset(t0.Add(tc.after))
			if got := s.cursor == nil; got != tc.reset {
				t.Errorf("cursor reset: %v, want %v", got, tc.reset)
			}
			if got := s.gen != gen; got != tc.reset {
				t.Errorf("generation moved: %v, want %v", got, tc.reset)
			}
		})
	}
}
