package badgerstore

import (
	"bytes"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/dgraph-io/badger/v4"
)

// maxGetSteps bounds how many keys GetSorted steps over on its way to the
// next key it wants before it seeks to it. A step costs about a seventh of
// a Get, which looks the key up in every level of the tree, and a seek
// about twice a Get: keys read together are rarely further apart than
// this (runs started together and spread over four workers: one in 100),
// and keys that are read with a Get each after two seeks in a row.
const maxGetSteps = 16

// GetSorted reads keys (ascending, see store.SortedGetter) by walking one
// iterator over the range they span while they lie close together, as the
// records of runs started together do: each is then found by stepping from
// the one before instead of by a lookup in every level (at a million runs,
// about 0.6 µs against 3.5 µs per key read one after another, 1.8 against
// 4 for every fourth). The iterator is limited to the keys' common prefix,
// so Badger passes over the tables that hold none of them. A key more than
// maxGetSteps keys past the one before is sought; after two such keys in a
// row the rest are read with a Get each.
func (r *reader) GetSorted(keys [][]byte, fn func(i int, value []byte, found bool) error) error {
	i, err := r.walkSorted(keys, fn)
	if err != nil {
		return err
	}
	for ; i < len(keys); i++ {
		v, err := r.Get(keys[i])
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := fn(i, v, found); err != nil {
			return err
		}
	}
	return nil
}

// walkSorted reads keys with one iterator until they lie too far apart; it
// returns the index of the first key it did not read. keys are ascending
// (store.GetSorted checked them once; they are not compared again at each
// step).
func (r *reader) walkSorted(keys [][]byte, fn func(i int, value []byte, found bool) error) (int, error) {
	if len(keys) < 2 {
		return 0, nil
	}
	first, last := keys[0], keys[len(keys)-1]
	it := r.txn.NewIterator(badger.IteratorOptions{Prefix: store.SharedPrefix(first, last)})
	defer it.Close()
	it.Seek(first)
	// steps counts the keys stepped over towards keys[i]; sought says
	// keys[i] was sought; far counts the keys in a row that were.
	steps, sought, far := 0, false, 0
	for i := 0; i < len(keys); {
		if !it.Valid() { // no key at or after keys[i] under the prefix
			if err := fn(i, nil, false); err != nil {
				return i, err
			}
			i++
			continue
		}
		item := it.Item()
		switch c := bytes.Compare(item.Key(), keys[i]); {
		case c >= 0: // keys[i] is found, or missing when c > 0
			var v []byte
			if c == 0 {
				var err error
				if v, err = item.ValueCopy(nil); err != nil {
					return i, errors.Wrap(err, "badgerstore: get value")
				}
			}
			if err := fn(i, v, c == 0); err != nil {
				return i, err
			}
			i++
			if !sought {
				far = 0
			}
			steps, sought = 0, false
			if c == 0 {
				it.Next()
			}
		case steps < maxGetSteps:
			steps++
			it.Next()
		case far < 1:
			far++
			steps, sought = 0, true
			it.Seek(keys[i])
		default:
			return i, nil
		}
	}
	return len(keys), nil
}
