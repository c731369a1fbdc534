package access

import (
	"context"
	"sync/atomic"

	"github.com/bas-platform/bas/store"
)

// noWrites is the write count of an entry of decodedRecords that is not
// known to be current: it never matches writeCount.now.
const noWrites = ^uint64(0)

// writeCount counts the service's writes so that Authenticate can tell
// whether what it read earlier is still what the store holds. A write
// counts once when it begins and once when it ends, and is in progress in
// between. A read taken at count n (now, with no write in progress) and
// kept at n is current as long as the count is still n: any write that
// began since moved it, and one that ended before n was taken was already
// visible to the read (an Update returns after its commit is visible).
type writeCount struct {
	n       atomic.Uint64
	writing atomic.Int64
}

// now is the count, or noWrites while a write is in progress (then
// nothing read is known to be current).
func (w *writeCount) now() uint64 {
	n := w.n.Load()
	if w.writing.Load() != 0 {
		return noWrites
	}
	return n
}

// countingStore is the service's store: each Update moves its writeCount
// before it starts and after it ends, whatever it writes and however it
// ends.
type countingStore struct {
	store.Store
	n *writeCount
}

// Update runs fn in a read-write transaction of the store, counted.
func (s *countingStore) Update(ctx context.Context, fn func(store.Txn) error) error {
	s.n.writing.Add(1)
	s.n.n.Add(1)
	defer func() {
		s.n.n.Add(1)
		s.n.writing.Add(-1)
	}()
	return s.Store.Update(ctx, fn)
}

// kept returns the credential under lookup and, for a session, its person,
// as decoded at write count at, when both are current at it (at is not
// noWrites and no write began since they were read).
func (d *decodedRecords) kept(lookup string, at uint64) (*credential, *user, bool) {
	if at == noWrites {
		return nil, nil, false
	}
	c, ok := d.creds.current(lookup, at)
	if !ok {
		return nil, nil, false
	}
	if c.Kind != credSession {
		return c, nil, true
	}
	u, ok := d.users.current(c.Tenant+"\x00"+c.UserID, at)
	if !ok {
		return nil, nil, false
	}
	return c, u, true
}
