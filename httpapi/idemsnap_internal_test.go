package httpapi

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
)

// countedSnapshots counts the snapshots taken and released, and tells
// each release on released.
type countedSnapshots struct {
	st           store.Snapshotter
	taken, freed atomic.Int64
	released     chan struct{}
	failing      atomic.Bool
}

func (c *countedSnapshots) Snapshot(ctx context.Context) (store.Snapshot, error) {
	if c.failing.Load() {
		return nil, badgerstore.ErrClosed
	}
	sn, err := c.st.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	c.taken.Add(1)
	return &countedSnapshot{Snapshot: sn, c: c}, nil
}

type countedSnapshot struct {
	store.Snapshot
	c *countedSnapshots
}

func (s *countedSnapshot) Release() {
	s.Snapshot.Release()
	s.c.freed.Add(1)
	s.c.released <- struct{}{}
}

// takeNow takes a snapshot as a lookup's refresh does, but now.
func takeNow(s *idemSnaps) {
	s.mu.Lock()
	s.refreshing = true
	seen := s.released
	s.mu.Unlock()
	s.take(seen)
}

// TestIdemSnaps: a lookup of a key released after the snapshot in use was
// taken reads afresh, until a snapshot taken after the release is in use;
// a key whose request ended before its change answered stays pinned to
// fresh reads (at most idemPinnedMax keys); a replaced snapshot is
// released once its last lookup gave it back; one nobody replaces is
// released idemSnapMaxAge after it was taken; a failed take releases the
// one in use.
func TestIdemSnaps(t *testing.T) {
	t.Parallel()
	bs, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	c := &countedSnapshots{st: bs, released: make(chan struct{}, 64)}
	s := &idemSnaps{st: c, recent: map[claimKey]uint64{}, pinned: map[claimKey]struct{}{}}
	k1, k2, k3 := claimKey{"t", "1"}, claimKey{"t", "2"}, claimKey{"t", "3"}
	reads := func(keys ...claimKey) []bool {
		t.Helper()
		var out []bool
		for _, k := range keys {
			sn := s.acquire(k)
			out = append(out, sn != nil)
			if sn != nil {
				s.put(sn)
			}
		}
		return out
	}
	check := func(step string, want []bool, got []bool) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: snapshot read of k1, k2, k3 (-want +got):\n%s", step, diff)
		}
	}
	waitFreed := func(n int64) {
		t.Helper()
		for c.freed.Load() < n {
			select {
			case <-c.released:
			case <-time.After(time.Minute):
				t.Fatalf("%d snapshots released, want %d", c.freed.Load(), n)
			}
		}
	}

	takeNow(s)
	check("first snapshot", []bool{true, true, true}, reads(k1, k2, k3))
	s.release(k1, false)
	check("k1 released after it", []bool{false, true, true}, reads(k1, k2, k3))

	held := s.acquire(k2)
	takeNow(s)
	if n := c.freed.Load(); n != 0 {
		t.Errorf("a replaced snapshot still in use was released (%d)", n)
	}
	check("a snapshot taken after k1's release", []bool{true, true, true}, reads(k1, k2, k3))
	if len(s.recent) != 0 {
		t.Errorf("recent keys %v, want none", s.recent)
	}
	s.put(held)
	waitFreed(1)

	s.release(k3, true)
	takeNow(s)
	waitFreed(2)
	check("k3 pinned", []bool{true, true, false}, reads(k1, k2, k3))
	for i := range idemPinnedMax {
		s.release(claimKey{"t", fmt.Sprint("p", i)}, true)
	}
	takeNow(s)
	waitFreed(3)
	check("k3 let go after idemPinnedMax more", []bool{true, true, true}, reads(k1, k2, k3))
	if len(s.pinned) != idemPinnedMax || len(s.pinOrder) != idemPinnedMax {
		t.Errorf("%d pinned keys (%d in order), want %d", len(s.pinned), len(s.pinOrder), idemPinnedMax)
	}

	waitFreed(4) // nobody replaced it: released at idemSnapMaxAge
	s.mu.Lock()
	expired := s.cur == nil
	s.mu.Unlock()
	if !expired {
		t.Error("the snapshot is still in use after idemSnapMaxAge")
	}

	takeNow(s)
	c.failing.Store(true)
	taken := c.taken.Load()
	takeNow(s)
	waitFreed(taken)
	if s.cur != nil {
		t.Error("a snapshot is in use after a failed take")
	}
}
