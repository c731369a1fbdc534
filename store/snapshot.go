package store

import "context"

// Snapshotter is an optional ability of a Store: a read-only snapshot its
// taker may hold for a while and read from several goroutines at once.
// A View may wait for commits in flight to land before it reads (Badger's
// transactions do); a snapshot taken once and shared pays that wait once,
// and its readers see what had landed when it was taken. Close waits
// until every snapshot was released.
type Snapshotter interface {
	Snapshot(ctx context.Context) (Snapshot, error)
}

// Snapshot is a read-only view of a store as it was when taken. Its Get
// and Scan may be called from several goroutines at once. Release ends
// it; no read may follow or be in progress. Releasing twice is harmless.
type Snapshot interface {
	Reader
	Release()
}

// SnapshotterOf returns st's Snapshotter, looking through the wrapper of
// Hooked, or false when st has none.
func SnapshotterOf(st Store) (Snapshotter, bool) {
	switch h := st.(type) {
	case *hooked:
		st = h.Store
	case *hookedPipeliner:
		st = h.Store
	}
	s, ok := st.(Snapshotter)
	return s, ok
}
