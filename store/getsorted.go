package store

import (
	"bytes"

	"github.com/cockroachdb/errors"
)

// SortedGetter is an optional ability of a Reader: reading many keys at
// once, given in ascending order, more cheaply than with a Get each when
// they lie close together in the store (store/badgerstore walks one
// iterator over them instead of looking each key up in every level of its
// tree). Use it through GetSorted.
type SortedGetter interface {
	// GetSorted calls fn for each of keys, in order, with its index, a
	// copy of its value that fn may keep, and whether it exists (value is
	// nil when not). keys are ascending, without duplicates (the
	// function GetSorted checks that). An error from fn ends the reads and
	// is returned.
	GetSorted(keys [][]byte, fn func(i int, value []byte, found bool) error) error
}

// GetSorted reads keys, which must be ascending and without duplicates,
// calling fn as SortedGetter.GetSorted does: with r's GetSorted when it has
// one, else with a Get of each key.
func GetSorted(r Reader, keys [][]byte, fn func(i int, value []byte, found bool) error) error {
	if err := checkSorted(keys); err != nil {
		return err
	}
	if sg, ok := r.(SortedGetter); ok {
		return sg.GetSorted(keys, fn)
	}
	for i, k := range keys {
		v, err := r.Get(k)
		found := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := fn(i, v, found); err != nil {
			return err
		}
	}
	return nil
}

// ErrUnsortedKeys is what GetSorted returns for keys that are not
// ascending or hold a duplicate.
var ErrUnsortedKeys = errors.New("store: GetSorted keys are not ascending")

// checkSorted returns ErrUnsortedKeys unless keys are ascending without
// duplicates.
func checkSorted(keys [][]byte) error {
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			return ErrUnsortedKeys
		}
	}
	return nil
}
