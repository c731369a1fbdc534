// Package storetest is the conformance suite of store.Store: every
// implementation runs it from a one-line test, and every change to the
// Store contract extends it.
//
//	func TestStore(t *testing.T) {
//		storetest.Exercise(t, func(t *testing.T) store.Store {
//			s, err := mystore.Open(mystore.Options{InMemory: true})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// # What it checks
//
// One file per area: kv.go (Get, Set, Delete, copies, large values),
// scan.go (prefix scans forwards and backwards, cursors, keys-only, early
// stop, neighbour prefixes and 0xff bytes), txn.go (commit, rollback,
// read-your-writes, snapshot isolation, cancellation), conflict.go
// (optimistic conflicts are detected per key and retried, also under
// contention), concurrency.go (concurrent writers), collection.go
// (store.Collection on the store: indexes, pages, unique indexes, tenant
// isolation, forged cursors) and reopen.go (data survives Close and a new
// Open of the same directory).
//
// The suite assumes what the store package documents, and in particular
// optimistic concurrency: Updates run at the same time and a commit fails
// only when a key it read was written since it began. Several tests hold
// one transaction open while another commits, so a store that serializes
// its transactions with a lock would deadlock in them rather than pass.
//
// Every test is parallel and opens its own store, so the suite fits a
// store that is cheap to open (an in-memory mode); ExerciseReopen covers
// the on-disk paths.
package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Exercise runs the conformance suite. open returns a new, empty store each
// time it is called; the suite closes every store it opens when the test
// that opened it ends.
func Exercise(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	o := func(t *testing.T) store.Store {
		t.Helper()
		s := open(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	t.Run("KV", func(t *testing.T) { exerciseKV(t, o) })
	t.Run("Scan", func(t *testing.T) { exerciseScan(t, o) })
	t.Run("GetSorted", func(t *testing.T) { exerciseGetSorted(t, o) })
	t.Run("Txn", func(t *testing.T) { exerciseTxn(t, o) })
	t.Run("Conflict", func(t *testing.T) { exerciseConflict(t, o) })
	t.Run("Concurrency", func(t *testing.T) { exerciseConcurrency(t, o) })
	t.Run("Collection", func(t *testing.T) { exerciseCollection(t, o) })
}

// ExerciseReopen runs the tests that close a store and open it again. open
// opens the store kept in dir, a directory the suite creates (empty the
// first time); the suite closes every store it opens, each exactly once.
func ExerciseReopen(t *testing.T, open func(t *testing.T, dir string) store.Store) {
	t.Helper()
	t.Run("Reopen", func(t *testing.T) { exerciseReopen(t, open) })
}

// opener opens a new, empty store whose Close the suite has scheduled.
type opener func(t *testing.T) store.Store

// update runs fn in s.Update and fails the test on an error.
func update(t *testing.T, s store.Store, fn func(store.Txn) error) {
	t.Helper()
	if err := s.Update(t.Context(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// view runs fn in s.View and fails the test on an error.
func view(t *testing.T, s store.Store, fn func(store.Reader) error) {
	t.Helper()
	if err := s.View(t.Context(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// set writes key/value pairs (given as strings) in one Update.
func set(t *testing.T, s store.Store, kvs ...string) {
	t.Helper()
	if len(kvs)%2 != 0 {
		panic("storetest: set needs key/value pairs")
	}
	update(t, s, func(tx store.Txn) error {
		for i := 0; i < len(kvs); i += 2 {
			if err := tx.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
}

// get reads key in a View; ok is false when it is missing.
func get(t *testing.T, s store.Store, key string) (val string, ok bool) {
	t.Helper()
	err := s.View(t.Context(), func(r store.Reader) error {
		v, err := r.Get([]byte(key))
		if err != nil {
			return err
		}
		val = string(v)
		return nil
	})
	switch {
	case err == nil:
		return val, true
	case isNotFound(err):
		return "", false
	}
	t.Fatalf("Get %q: %v", key, err)
	return "", false
}

// kv is a key and value seen by a scan.
type kv struct {
	Key, Value string
}

func (p kv) String() string { return fmt.Sprintf("%q=%q", p.Key, p.Value) }

// scanAll collects what a Scan with opts returns in r.
func scanAll(r store.Reader, opts store.ScanOptions) ([]kv, error) {
	var out []kv
	err := r.Scan(opts, func(key, value []byte) error {
		p := kv{Key: string(key)}
		if value != nil {
			p.Value = string(value)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// scan collects what a Scan with opts returns in a View.
func scan(t *testing.T, s store.Store, opts store.ScanOptions) []kv {
	t.Helper()
	var out []kv
	view(t, s, func(r store.Reader) error {
		var err error
		out, err = scanAll(r, opts)
		return err
	})
	return out
}

// keys returns the keys of kvs.
func keys(kvs []kv) []string {
	out := make([]string, len(kvs))
	for i, p := range kvs {
		out[i] = p.Key
	}
	return out
}

// canceled returns a context that is already cancelled.
func canceled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// isNotFound reports whether err is marked store.ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
