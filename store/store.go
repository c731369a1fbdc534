// Package store is the storage seam of bas: a small ordered key-value store
// with transactions, and, built once on top of it for every implementation,
// tenant-prefixed typed record collections with secondary indexes and paged
// lists (see Collection).
//
// An implementation (store/badgerstore is the default) provides Store and
// passes the conformance suite in store/storetest. The contract:
//
//   - Update runs fn in a read-write transaction and returns only when the
//     commit is durable. When the commit conflicts with another (a key fn
//     read was written by a transaction that committed after this one
//     began), Update runs fn again; fn must therefore have no outside
//     effects. Concurrent Updates may share one sync.
//   - View runs fn in a read-only snapshot.
//   - Keys are ordered bytewise; Scan walks a prefix forwards or backwards,
//     starting after a cursor key.
//   - Get of a missing key returns an error marked ErrNotFound.
package store

import (
	"context"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// Store is the storage seam.
type Store interface {
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Reader) error) error
	// Update runs fn in a read-write transaction and commits it durably,
	// re-running fn on optimistic conflicts.
	Update(ctx context.Context, fn func(Txn) error) error
	// Close releases the store. In-flight transactions end first.
	Close() error
}

// Reader reads within a transaction.
type Reader interface {
	// Get returns a copy of the value at key, or an error marked ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Scan calls fn for each key with the given prefix, in key order (or
	// reverse order), starting strictly after opts.After when it is set.
	// key and value are valid only during the call. Returning ErrStop from
	// fn ends the scan without error.
	Scan(opts ScanOptions, fn func(key, value []byte) error) error
}

// Txn reads and writes within a read-write transaction.
type Txn interface {
	Reader
	// Set writes value at key.
	Set(key, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(key []byte) error
}

// ValueKeeper is an optional ability of a Txn: SetKept is Set of a value
// its caller leaves unchanged until the transaction ended (it committed,
// failed or was discarded; for a PipelinedTxn, once CommitAsync's done was
// called, not when CommitAsync returned), so the store may hold it
// without a copy.
type ValueKeeper interface {
	SetKept(key, value []byte) error
}

// SetKept writes value at key in tx, as tx.Set does; its caller leaves
// value unchanged until tx ended, which spares the copy of a store that
// can hold it as it is (see ValueKeeper).
func SetKept(tx Txn, key, value []byte) error {
	if k, ok := tx.(ValueKeeper); ok {
		return k.SetKept(key, value)
	}
	return tx.Set(key, value)
}

// Pipeliner is an optional ability of a Store: commits that overlap. A
// transaction opened with Begin commits with CommitAsync, which returns as
// soon as the commit's place in the order of commits is fixed and reports
// durability later, so the next transaction can be filled while this one
// syncs. Such a transaction must only write (reads are not protected by
// conflict detection), and Begin may block until earlier commits are
// applied. The run engine's commit pipeline uses it when present.
type Pipeliner interface {
	Begin(ctx context.Context) (PipelinedTxn, error)
}

// Waker is implemented by a store several processes share that can wake
// the others promptly (PostgreSQL's LISTEN/NOTIFY in store/pgstore): Wake
// signals every process listening on topic, Listen calls fn each time a
// signal on topic arrives (from one goroutine; signals sent close together
// may arrive as one) until ctx ends or the store closes. A signal is a
// hint to look again, never data: it may be lost (a listener reconnecting)
// and a listener still polls. Stores one process owns (Badger) need not
// implement it. Topics are short lowercase words.
type Waker interface {
	Wake(ctx context.Context, topic string) error
	Listen(ctx context.Context, topic string, fn func()) error
}

// PipelinedTxn is a write-only transaction of a Pipeliner.
type PipelinedTxn interface {
	Txn
	// CommitAsync starts the commit and returns once later commits are
	// ordered after it; done is called when it is durable, or with the
	// error that stopped it. A commit ordered after one that fails may
	// still be applied (Badger's writer goes on with its next write group;
	// PostgreSQL's are transactions of their own): a caller whose write
	// must not land without an earlier one's starts it once the earlier
	// one's done was called without error.
	CommitAsync(done func(error))
	// Discard drops the transaction without committing.
	Discard()
}

// ScanOptions select the keys a Scan walks.
type ScanOptions struct {
	// Prefix limits the scan to keys that start with it.
	Prefix []byte
	// After, when set, starts the scan strictly after this key (strictly
	// before it when Reverse). It must start with Prefix.
	After []byte
	// Reverse walks from the largest key down.
	Reverse bool
	// KeysOnly lets the implementation skip loading values; fn gets nil.
	KeysOnly bool
	// Rewritten tells that the keys under Prefix are rewritten often
	// (counters): an implementation that keeps older versions of a key
	// until it compacts them may seek past them instead of stepping over
	// each. The keys and values seen are the same either way.
	Rewritten bool
	// Since, when not 0, is a version a VersionReader gave: a store that
	// versions its writes may pass over what was written at or before it
	// (Badger: the tables that hold nothing newer, at every level). Set it
	// only when every key the scan must see was last written after it; the
	// keys and values seen are then the same either way.
	Since uint64
}

// VersionReader is an optional ability of a Reader (and of a Txn) of a
// store that versions its writes (store/badgerstore): the versions
// ScanOptions.Since takes.
type VersionReader interface {
	// ReadVersion is the version the read sees the store at: whatever
	// commits after the read began has a greater version.
	ReadVersion() uint64
	// KeyVersion is the version of the newest write of key the read sees
	// (0 when none).
	KeyVersion(key []byte) (uint64, error)
}

// ErrNotFound marks a Get of a missing key. It is bas.ErrNotFound, so a missing
// record maps to 404 wherever it surfaces.
var ErrNotFound = errs.NotFound

// ErrConflict marks an optimistic commit conflict. Implementations mark a
// conflicting commit with both ErrConflict (so Retry re-runs it) and
// bas.ErrConflict (so a conflict that survives every retry maps to 409); a
// business conflict returned by fn (one marked bas.ErrConflict) is not retried.
var ErrConflict = errors.New("store: transaction conflict")

// ErrStop ends a Scan early without error.
var ErrStop = errors.New("store: stop scan")

// MaxConflictRetries bounds how often Retry re-runs a conflicting transaction.
const MaxConflictRetries = 64

// Retry runs attempt until it returns something other than a conflict, up to
// MaxConflictRetries times, with a short growing pause between tries. It is
// what implementations use to keep the "conflicts are retried" promise.
func Retry(ctx context.Context, attempt func() error) error {
	var err error
	for i := 0; i < MaxConflictRetries; i++ {
		err = attempt()
		if err == nil || !errors.Is(err, ErrConflict) {
			return err
		}
		if i >= 2 {
			d := time.Duration(i*i) * 50 * time.Microsecond
			if d > 20*time.Millisecond {
				d = 20 * time.Millisecond
			}
			select {
			case <-ctx.Done():
				return errors.WithStack(ctx.Err())
			case <-time.After(d):
			}
		}
	}
	return err
}
