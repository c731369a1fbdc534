package runengine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
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

// TestLookEndsPastNow: a look that finds no more due keys up to now (here
// only the deleted keys of timers fired before) leaves the cursor past now,
// so the next look does not walk those deleted keys again; a key due by
// then that is written afterwards moves the cursor back (wakeAt), and one
// written while a look is under way keeps that look from moving it.
func TestLookEndsPastNow(t *testing.T) {
	eng, _ := memEngine(t, Config{})
	ctx := context.Background()
	now := eng.clock.Now()
	keys := make([][]byte, 100)
	for i := range keys {
		keys[i] = dueKey(now.Add(-time.Hour), "ten_a", fmt.Sprintf("run_%03d", i), "t")
	}
	for _, del := range []bool{false, true} {
		err := eng.st.Update(ctx, func(tx store.Txn) error {
			for _, k := range keys {
				if del {
					if err := tx.Delete(k); err != nil {
						return err
					}
				} else if err := tx.Set(k, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s := eng.sched
	if _, err := s.fireDue(); err != nil {
		t.Fatal(err)
	}
	past := store.Key(store.System, "due", now.Add(time.Nanosecond).UnixNano())
	if !bytes.Equal(s.cursor, past) || !s.cursorAt.Equal(now) {
		t.Fatalf("cursor after the look %q at %v, want %q at %v", s.cursor, s.cursorAt, past, now)
	}
	if bytes.Compare(s.cursor, keys[len(keys)-1]) <= 0 {
		t.Fatal("the cursor is not past the deleted keys")
	}

	// A key due by the cursor's time, written since: the next look starts
	// at its time (the keys before it are still handed out).
	gen := s.gen
	at := now.Add(-time.Minute)
	s.wakeAt(at)
	if want := store.Key(store.System, "due", at.UnixNano()); !bytes.Equal(s.cursor, want) || s.gen == gen {
		t.Fatalf("cursor after a key due before it was written: %q (generation %d -> %d), want %q and the generation moved", s.cursor, gen, s.gen, want)
	}
	if k := dueKey(at, "ten_a", "run_x", "t"); bytes.Compare(k, s.cursor) <= 0 || bytes.Compare(keys[0], s.cursor) >= 0 {
		t.Fatal("the cursor is not between the keys before the time and the key of the time")
	}

	// A key due by the time of a look under way: the look keeps its cursor.
	s.mu.Lock()
	s.cursor, s.cursorAt = keys[0], now.Add(-2*time.Hour)
	s.lookNow = now
	gen = s.gen
	s.mu.Unlock()
	s.wakeAt(now.Add(-time.Minute))
	if s.gen == gen || !bytes.Equal(s.cursor, keys[0]) {
		t.Fatalf("a key due by a look's time: generation %d -> %d, cursor %q; want the generation moved and the cursor kept", gen, s.gen, s.cursor)
	}
	gen = s.gen
	s.wakeAt(now.Add(time.Minute))
	if s.gen != gen {
		t.Fatal("a key due after the look's time moved the generation")
	}
}

// TestLookKeepsBeforeAnUncommittedDueKey: a key already due, written in a
// transaction that woke the loop before it committed (an app's SetTimer),
// is found by a look after the commit lands, though a look ran before and
// saw nothing: for uncommittedHold the looks keep their cursor before its
// time. Once the hold ended, a look moves past now again.
func TestLookKeepsBeforeAnUncommittedDueKey(t *testing.T) {
	eng, _ := memEngine(t, Config{})
	ctx := context.Background()
	s := eng.sched
	now := eng.clock.Now()
	at := now.Add(-time.Minute)
	key := dueKey(at, "ten_a", appOwnerPrefix+"test", "tok")

	s.wakeUncommitted(at) // the transaction has not committed yet
	if _, err := s.fireDue(); err != nil {
		t.Fatal(err)
	}
	if bytes.Compare(s.cursor, key) >= 0 {
		t.Fatalf("cursor %q after a look before the commit: past the uncommitted key %q", s.cursor, key)
	}
	if err := eng.st.Update(ctx, func(tx store.Txn) error { return tx.Set(key, nil) }); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	if s.cursor == nil {
		s.mu.Unlock()
		t.Fatal("no cursor") // a reset would find the key by a full look
	}
	s.mu.Unlock()
	if _, err := s.fireDue(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	_, handed := s.inflight[string(key)]
	s.mu.Unlock()
	if !handed {
		// Handed out and settled already by the time we look is fine
		// too: the key is then deleted.
		err := eng.st.View(ctx, func(r store.Reader) error { _, err := r.Get(key); return err })
		if err == nil {
			t.Fatal("the key written after the look was not handed out by the next look")
		}
	}

	// The hold ended just now: a look moves the cursor past now.
	s.mu.Lock()
	s.earlyUntil = time.Now().Add(-time.Nanosecond)
	s.mu.Unlock()
	if _, err := s.fireDue(); err != nil {
		t.Fatal(err)
	}
	past := store.Key(store.System, "due", now.Add(time.Nanosecond).UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if !bytes.Equal(s.cursor, past) {
		t.Fatalf("cursor after the hold %q, want %q (past now)", s.cursor, past)
	}
}

// TestHeldTickReplacedLetsGo: a paused process's held tick replaced by the
// tick of its changed schedule is let go: the looks no longer step over it,
// and the scheduler keeps no trace of it.
func TestHeldTickReplacedLetsGo(t *testing.T) {
	eng, _ := memEngine(t, Config{})
	s := eng.sched
	now := eng.clock.Now()
	prev := dueKey(now.Add(-time.Hour), "ten_a", cronOwnerPrefix+"prc_1", "cron")
	next := dueItem{key: dueKey(now, "ten_a", cronOwnerPrefix+"prc_1", "cron"), at: now, tenant: "ten_a",
		owner: cronOwnerPrefix + "prc_1", token: "cron"}
	s.mu.Lock()
	s.heldTicks = map[pausedRef][]byte{{"ten_a", "prc_1"}: prev}
	s.heldKeys = map[string]struct{}{string(prev): {}}
	s.inflight[string(next.key)] = time.Now()
	s.mu.Unlock()
	s.holdTick(next, "prc_1")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.heldKeys[string(prev)]; ok {
		t.Error("the replaced tick is still held")
	}
	if got := s.heldTicks[pausedRef{"ten_a", "prc_1"}]; bytes.Equal(got, prev) {
		t.Error("the process still holds the replaced tick")
	}
}
