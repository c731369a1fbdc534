package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/bas-platform/bas/store"
)

// An Idempotency-Key's lookup reads the store before the request acts. A
// Badger read first waits for every commit in flight to land (its
// transactions' read timestamps), so a keyed request paid, besides its own
// commit, the rest of whatever group commit was syncing when it came.
// When the workspace is its store's only writer, lookups instead read a
// snapshot shared by all of them (idemSnaps), taken at most
// idemSnapRefresh ago, which waits for nothing.
//
// What the lookup must see is every record of its key that a request
// finished writing before it began: a request still in flight under the
// key holds its claim, and the lookup is then never made (409). Every
// record write of this process happens while its request holds the claim,
// and lands before the claim is released (the engine answers a start once
// it is durable; an Update returns once it is). So idemSnaps counts the
// releases of claims whose requests ran, and keeps each released key with
// its count until a snapshot taken after that release is in use: a lookup
// of a key released after the snapshot in use was taken reads the store
// afresh, as before. A request that ended before its change answered (its
// context ended while the engine's commit may still be on its way) keeps
// its key pinned to fresh reads (idemPinnedMax of them, the oldest let go
// first). Records only a sweep deletes (expired ones) read as absent
// either way.

// Bounds of the lookups' snapshot: a lookup asks for a new one once the
// one in use is idemSnapRefresh old, and the new one retires it; one
// nobody asked to replace is released idemSnapMaxAge after it was taken
// (a held snapshot keeps the versions it may read from compaction, and
// the store's Close waits for it).
const (
	idemSnapRefresh = 5 * time.Millisecond
	idemSnapMaxAge  = 20 * time.Millisecond
	idemPinnedMax   = 4096
)

// idemSnaps hands keyed requests' lookups a shared snapshot of the store
// (see above). One serves a workspace, whatever handlers serve it
// (wiring.Services.Shared).
type idemSnaps struct {
	st store.Snapshotter

	mu         sync.Mutex
	cur        *idemSnap
	refreshing bool
	// released counts the claims released by requests that ran; recent
	// holds each key released since the snapshot in use was taken, with
	// the count at its release.
	released uint64
	recent   map[claimKey]uint64
	// pinned are keys whose requests ended before their change answered;
	// pinOrder is the order they came in (for idemPinnedMax).
	pinned   map[claimKey]struct{}
	pinOrder []claimKey
}

// idemSnap is a snapshot in use.
type idemSnap struct {
	snap store.Snapshot
	// seen is the count of releases before it was taken: every key
	// released by then is in it.
	seen  uint64
	taken time.Time
	users int
	// done says it is no longer handed out: it is released once unused.
	done bool
}

// newIdemSnaps returns the lookups' snapshots of st, or nil when st has
// none.
func newIdemSnaps(st store.Store) *idemSnaps {
	s, ok := store.SnapshotterOf(st)
	if !ok {
		return nil
	}
	return &idemSnaps{st: s, recent: map[claimKey]uint64{}, pinned: map[claimKey]struct{}{}}
}

// acquire returns the snapshot a lookup of k may read, or nil when it must
// read the store afresh; a non-nil one is given back with put.
func (s *idemSnaps) acquire(k claimKey) *idemSnap {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur
	if cur == nil || time.Since(cur.taken) >= idemSnapRefresh {
		s.refresh()
	}
	if cur == nil {
		return nil
	}
	if _, pinned := s.pinned[k]; pinned {
		return nil
	}
	if at, ok := s.recent[k]; ok && at > cur.seen {
		return nil
	}
	cur.users++
	return cur
}

// put gives back a snapshot acquire returned.
func (s *idemSnaps) put(sn *idemSnap) {
	s.mu.Lock()
	sn.users--
	free := sn.done && sn.users == 0
	s.mu.Unlock()
	if free {
		sn.snap.Release()
	}
}

// released records the release of k's claim by a request that ran;
// unsure says its change may still be on its way (k is pinned).
func (s *idemSnaps) release(k claimKey, unsure bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released++
	s.recent[k] = s.released
	if !unsure {
		return
	}
	if _, ok := s.pinned[k]; ok {
		return
	}
	if len(s.pinOrder) >= idemPinnedMax {
		delete(s.pinned, s.pinOrder[0])
		s.pinOrder = append(s.pinOrder[:0], s.pinOrder[1:]...)
	}
	s.pinned[k] = struct{}{}
	s.pinOrder = append(s.pinOrder, k)
}

// refresh takes a new snapshot in the background unless one is being
// taken. s.mu is held.
func (s *idemSnaps) refresh() {
	if s.refreshing {
		return
	}
	s.refreshing = true
	seen := s.released
	go s.take(seen)
}

// take takes a snapshot after seen releases and puts it in use.
func (s *idemSnaps) take(seen uint64) {
	snap, err := s.st.Snapshot(context.Background())
	s.mu.Lock()
	s.refreshing = false
	if err != nil {
		// The store is closing (it waits for the snapshot in use): lookups
		// read it afresh.
		prev := s.cur
		s.cur = nil
		free := prev != nil && s.retire(prev)
		s.mu.Unlock()
		if free {
			prev.snap.Release()
		}
		return
	}
	sn := &idemSnap{snap: snap, seen: seen, taken: time.Now()}
	prev := s.cur
	s.cur = sn
	for k, at := range s.recent {
		if at <= seen {
			delete(s.recent, k)
		}
	}
	free := prev != nil && s.retire(prev)
	s.mu.Unlock()
	if free {
		prev.snap.Release()
	}
	var expire func()
	expire = func() {
		s.mu.Lock()
		if s.cur == sn && s.refreshing {
			// Lookups asked for a newer one, which retires it (or, failing,
			// this one).
			s.mu.Unlock()
			time.AfterFunc(idemSnapMaxAge, expire)
			return
		}
		if s.cur == sn {
			s.cur = nil
		}
		free := s.retire(sn)
		s.mu.Unlock()
		if free {
			sn.snap.Release()
		}
	}
	time.AfterFunc(idemSnapMaxAge, expire)
}

// retire stops handing sn out, and reports whether it is to be released
// now (unused, and not retired before). s.mu is held.
func (s *idemSnaps) retire(sn *idemSnap) bool {
	if sn.done {
		return false
	}
	sn.done = true
	return sn.users == 0
}
