package badgerstore

import (
	"bytes"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/dgraph-io/badger/v4"
)

// maxKeySize is Badger's limit on a key's length.
const maxKeySize = 65000

// errNotFound is what Get of a missing key returns: marked
// store.ErrNotFound, made once (a missing key is an everyday answer).
var errNotFound = errors.Mark(keyNotFound{}, store.ErrNotFound)

// keyNotFound is a missing key; errors.Is finds store.ErrNotFound and
// badger.ErrKeyNotFound in it without comparing marks.
type keyNotFound struct{}

func (keyNotFound) Error() string { return "badgerstore: key not found" }

func (keyNotFound) Is(target error) bool {
	return target == store.ErrNotFound || target == badger.ErrKeyNotFound
}

// maxStepVersions is how many older versions of a key a forward Scan steps
// over before it seeks past the rest.
const maxStepVersions = 4

// reader is the store.Reader of a View (and the read half of an Update).
type reader struct {
	txn *badger.Txn
}

// Get returns a copy of the value at key.
func (r *reader) Get(key []byte) ([]byte, error) {
	item, err := r.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, errors.Wrap(err, "badgerstore: get")
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, errors.Wrap(err, "badgerstore: get value")
	}
	return v, nil
}

// ReadVersion is the version the read sees the store at (Badger's read
// timestamp): a commit after the read began has a greater one.
func (r *reader) ReadVersion() uint64 { return r.txn.ReadTs() }

// KeyVersion is the version of the newest write of key the read sees, 0
// when none (or a deletion's).
func (r *reader) KeyVersion(key []byte) (uint64, error) {
	item, err := r.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, errors.Wrap(err, "badgerstore: get")
	}
	return item.Version(), nil
}

// Scan walks the keys with opts.Prefix. key is valid only during fn (it is
// Badger's, until the iterator moves); value is a buffer Scan reuses for
// the next key. Values are copied out of Badger before fn runs, so fn holds
// no value-log lock and may even commit another transaction.
//
// Seeking: forward, Scan seeks to After, or to Prefix. In reverse Badger's
// Seek lands on the largest key at or below the seek key, so Scan seeks to
// After, or to store.PrefixEnd(Prefix), the smallest key above the prefix,
// or rewinds to the last key when there is none (Prefix all 0xff). In
// every case a first key equal to After or to PrefixEnd is skipped, and the
// walk ends at the first key outside the prefix. Badger's IteratorOptions
// Prefix (which prunes tables) is set only when the seek key lies inside
// the prefix: with it, Badger's Valid reports false on the PrefixEnd key
// instead of letting Scan step past it.
func (r *reader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	prefix := opts.Prefix
	after := opts.After
	if len(after) > 0 && !bytes.HasPrefix(after, prefix) {
		return errors.Newf("badgerstore: scan cursor %q does not start with the scan prefix %q", after, prefix)
	}
	if opts.Reverse {
		return r.scanReverse(opts, fn)
	}
	// Forward over keys rewritten often, the iterator yields every version
	// of a key and Scan seeks past the older ones: Badger's own skipping
	// steps over each version compaction has not dropped yet, and a key
	// rewritten by every commit (a counter) can have thousands. Elsewhere
	// Badger's own iteration is cheaper.
	forward := !opts.Reverse && opts.Rewritten
	io := badger.IteratorOptions{Reverse: opts.Reverse, AllVersions: forward, SinceTs: opts.Since}
	var seek, skip []byte
	switch {
	case len(after) > 0:
		seek, skip = after, after
		io.Prefix = prefix
	case !opts.Reverse:
		seek = prefix
		io.Prefix = prefix
	default:
		seek = store.PrefixEnd(prefix)
		skip = seek
	}
	it := r.txn.NewIterator(io)
	defer it.Close()
	if len(seek) == 0 {
		it.Rewind()
	} else {
		it.Seek(seek)
	}
	var val, last []byte
	older := 0
	first := true
	for it.Valid() {
		item := it.Item()
		key := item.Key()
		if forward {
			// Every version of a key comes, newest first: take the newest
			// and step over a few older ones, seek past the rest (a seek
			// costs about as much as stepping over a few versions).
			if last != nil && bytes.Equal(key, last) {
				if older++; older < maxStepVersions {
					it.Next()
				} else {
					it.Seek(append(last, 0))
				}
				continue
			}
			last, older = append(last[:0], key...), 0
		}
		if first {
			first = false
			if skip != nil && bytes.Equal(key, skip) {
				it.Next()
				continue
			}
		}
		if !bytes.HasPrefix(key, prefix) {
			return nil
		}
		if forward && item.IsDeletedOrExpired() {
			it.Next()
			continue
		}
		if opts.KeysOnly {
			val = nil
		} else {
			var err error
			if val, err = item.ValueCopy(val[:0]); err != nil {
				return errors.Wrap(err, "badgerstore: scan value")
			}
		}
		if err := fn(key, val); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
		it.Next()
	}
	return nil
}

// scanReverse is Scan in reverse key order, walking every version of each
// key (oldest first in reverse) and taking the newest. Badger's own reverse
// iteration keeps one live key ahead of the one it returns, and to find it
// steps over every deleted key below, past the prefix too: below a range
// of deleted keys (the index entries of a million runs that ended, until
// compaction drops them) a reverse scan of a few keys, or of none, would
// walk them all. Walking the versions itself, the scan ends at the first
// key outside the prefix. It seeks to After, or to store.PrefixEnd(Prefix)
// (rewinding when there is none), and skips the versions of that key.
//
// The iterator is Badger's for the bytes Prefix and the key sought share
// (Prefix itself with After; without, Prefix up to the byte PrefixEnd
// raised), which starts on the tables whose keys may fall between them
// only: without a prefix Badger starts on every table, and a store of a
// million runs has hundreds.
func (r *reader) scanReverse(opts store.ScanOptions, fn func(key, value []byte) error) error {
	seek := opts.After
	if len(seek) == 0 {
		seek = store.PrefixEnd(opts.Prefix)
	}
	var pick []byte
	if len(seek) > 0 {
		pick = store.SharedPrefix(opts.Prefix, seek)
	}
	it := r.txn.NewIterator(badger.IteratorOptions{Reverse: true, AllVersions: true, Prefix: pick, SinceTs: opts.Since})
	defer it.Close()
	if len(seek) == 0 {
		it.Rewind()
	} else {
		it.Seek(seek)
	}
	return walkReverse(it, opts, seek, fn)
}

// walkReverse is scanReverse's walk from where it sought: every version of
// each key, taking the newest, to the first key outside the prefix.
func walkReverse(it *badger.Iterator, opts store.ScanOptions, seek []byte, fn func(key, value []byte) error) error {
	var key, val []byte // the key at hand and its newest version's value so far
	have, live := false, false
	tell := func() error {
		if !have || !live {
			return nil
		}
		if opts.KeysOnly {
			return fn(key, nil)
		}
		return fn(key, val)
	}
	for ; it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if !bytes.HasPrefix(k, opts.Prefix) {
			if len(seek) > 0 && bytes.Equal(k, seek) {
				continue // the PrefixEnd key's versions
			}
			break
		}
		if len(opts.After) > 0 && bytes.Equal(k, opts.After) {
			continue
		}
		if !have || !bytes.Equal(k, key) {
			if err := tell(); err != nil {
				return stopped(err)
			}
			key, have = append(key[:0], k...), true
		}
		if live = !item.IsDeletedOrExpired(); live && !opts.KeysOnly {
			var err error
			if val, err = item.ValueCopy(val[:0]); err != nil {
				return errors.Wrap(err, "badgerstore: scan value")
			}
		}
	}
	return stopped(tell())
}

// stopped is err, or nil for store.ErrStop (the scan's fn ended it).
func stopped(err error) error {
	if errors.Is(err, store.ErrStop) {
		return nil
	}
	return err
}

// writer is the store.Txn of an Update.
type writer struct {
	reader
	s *Store
	// slab holds the copies of the keys and values written, which Badger
	// keeps until the transaction ends: one allocation per few kilobytes
	// written instead of two per write. Only its unused tail is written.
	slab []byte
	// entries holds the Badger entries of the values set, for the same
	// reason: one allocation per entriesMax of them instead of one each.
	entries []badger.Entry
}

// entriesMin and entriesMax bound a chunk of writer.entries (an entry is
// about 100 bytes).
const (
	entriesMin = 8
	entriesMax = 128
)

// entry returns a new entry setting value at key, from the writer's chunk
// of them.
func (w *writer) entry(key, value []byte) *badger.Entry {
	if len(w.entries) == cap(w.entries) {
		w.entries = make([]badger.Entry, 0, min(max(2*cap(w.entries), entriesMin), entriesMax))
	}
	w.entries = append(w.entries, badger.Entry{Key: key, Value: value})
	return &w.entries[len(w.entries)-1]
}

// Slab sizes: the first chunk of a transaction, and the largest; a write
// of more than slabCopyMax bytes gets a copy of its own.
const (
	slabMin     = 1 << 10
	slabMax     = 32 << 10 // the largest small allocation: a larger one is zeroed and mapped apart
	slabCopyMax = 4 << 10
)

// copyOf returns a copy of b that nothing else writes.
func (w *writer) copyOf(b []byte) []byte {
	if len(b) == 0 {
		return []byte{}
	}
	if len(b) > slabCopyMax {
		return bytes.Clone(b)
	}
	if cap(w.slab)-len(w.slab) < len(b) {
		size := min(max(2*cap(w.slab), slabMin), slabMax)
		w.slab = make([]byte, 0, size)
	}
	n := len(w.slab)
	w.slab = append(w.slab, b...)
	return w.slab[n:len(w.slab):len(w.slab)]
}

// Set writes value at key. It copies both: the caller may reuse them.
func (w *writer) Set(key, value []byte) error { return w.set(key, value, true) }

// SetKept writes value at key (store.ValueKeeper): it copies key, and
// hands value to Badger as it is, which holds it until the transaction
// ended.
func (w *writer) SetKept(key, value []byte) error { return w.set(key, value, false) }

// set is Set, or SetKept unless copyValue.
func (w *writer) set(key, value []byte, copyValue bool) error {
	if err := w.check(key); err != nil {
		return err
	}
	if int64(len(value)) > w.s.maxValue {
		return errs.TooLargef("value of %d bytes is over the store's limit of %d bytes", len(value), w.s.maxValue)
	}
	key = w.copyOf(key)
	switch {
	case copyValue:
		value = w.copyOf(value)
	case len(value) == 0:
		value = []byte{}
	}
	return w.modify(w.txn.SetEntry(w.entry(key, value)))
}

// Delete removes key. It copies key.
func (w *writer) Delete(key []byte) error {
	if err := w.check(key); err != nil {
		return err
	}
	return w.modify(w.txn.Delete(w.copyOf(key)))
}

func (w *writer) check(key []byte) error {
	switch {
	case len(key) == 0:
		return errors.New("badgerstore: empty key")
	case len(key) > maxKeySize:
		return errs.TooLargef("key of %d bytes is over the store's limit of %d bytes", len(key), maxKeySize)
	}
	return nil
}

func (w *writer) modify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrTxnTooBig):
		return w.s.tooBig(err)
	default:
		return errors.Wrap(err, "badgerstore: write")
	}
}
