package badgerstore

import (
	"context"
	"sync"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

var _ store.Snapshotter = (*Store)(nil)

// Snapshot takes a read-only snapshot of the store (store.Snapshotter):
// a Badger read transaction, which waits once for the commits in flight
// to land, as a View does; its reads then wait for nothing. Badger's reads
// of a read-only transaction share no state, so its Get and Scan may run
// from several goroutines at once. A snapshot counts as a call in progress
// until Release: Close waits for it. While it is held, compactions keep
// the versions it may read.
func (s *Store) Snapshot(ctx context.Context) (store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.WithStack(err)
	}
	done, err := s.begin()
	if err != nil {
		return nil, err
	}
	return &snapshot{reader: reader{txn: s.db.NewTransaction(false)}, done: done}, nil
}

// snapshot is a held read transaction.
type snapshot struct {
	reader
	done func()
	once sync.Once
}

// Release discards the transaction; only the first call does.
func (sn *snapshot) Release() {
	sn.once.Do(func() {
		sn.txn.Discard()
		sn.done()
	})
}
