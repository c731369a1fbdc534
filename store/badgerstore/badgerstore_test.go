package badgerstore_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/storetest"
	"github.com/cockroachdb/errors"
	"github.com/dgraph-io/badger/v4"
	"github.com/google/go-cmp/cmp"
)

// quiet drops every log line.
var quiet = slog.New(slog.DiscardHandler)

// open opens a store with opts (quiet unless opts has a Logger) and closes
// it when the test ends.
func open(t testing.TB, opts badgerstore.Options) *badgerstore.Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := badgerstore.Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("InMemory", func(t *testing.T) {
		t.Parallel()
		storetest.Exercise(t, func(t *testing.T) store.Store {
			s, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		})
	})
	t.Run("Disk", func(t *testing.T) {
		t.Parallel()
		openDir := func(t *testing.T, dir string) store.Store {
			s, err := badgerstore.Open(badgerstore.Options{Dir: dir, Logger: quiet})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		}
		storetest.Exercise(t, func(t *testing.T) store.Store { return openDir(t, t.TempDir()) })
		storetest.ExerciseReopen(t, openDir)
	})
}

func TestOpenRejectsBadOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, test := range []struct {
		name string
		opts badgerstore.Options
		want string // in the error
	}{
		{"no place", badgerstore.Options{}, "Options.Dir is empty"},
		{"two places", badgerstore.Options{Dir: dir, InMemory: true}, "both set"},
		{"tiny memtable", badgerstore.Options{InMemory: true, MemTableSize: 1000}, "MemTableSize"},
		{"negative cache", badgerstore.Options{InMemory: true, BlockCacheSize: -1}, "BlockCacheSize"},
		{"negative index cache", badgerstore.Options{InMemory: true, IndexCacheSize: -1}, "IndexCacheSize"},
		{"small value log", badgerstore.Options{InMemory: true, ValueLogFileSize: 1000}, "ValueLogFileSize"},
		{"huge value log", badgerstore.Options{InMemory: true, ValueLogFileSize: 4 << 30}, "ValueLogFileSize"},
		{"negative value threshold", badgerstore.Options{InMemory: true, ValueThreshold: -1}, "ValueThreshold"},
		{"value threshold over 1 MiB", badgerstore.Options{InMemory: true, ValueThreshold: 1<<20 + 1}, "ValueThreshold"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			opts := test.opts
			opts.Logger = quiet
			s, err := badgerstore.Open(opts)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%+v) succeeded, want an error about %s", test.opts, test.want)
			}
			if !strings.Contains(err.Error(), test.want) {
				t.Errorf("Open(%+v) = %v, want an error about %s", test.opts, err, test.want)
			}
		})
	}
}

func TestOpenSmallMemTable(t *testing.T) {
	t.Parallel()
	// 15% of 4 MiB is below Badger's 1 MiB value threshold: Open lowers
	// the threshold instead of failing, and values up to the new limit
	// still fit.
	s := open(t, badgerstore.Options{InMemory: true, MemTableSize: 4 << 20})
	err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set([]byte("k"), make([]byte, 400<<10)) })
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func TestOpenLockedDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open(t, badgerstore.Options{Dir: dir})
	s, err := badgerstore.Open(badgerstore.Options{Dir: dir, Logger: quiet})
	if err == nil {
		s.Close()
		t.Fatal("a second Open of one directory succeeded")
	}
	if hints := errors.GetAllHints(err); len(hints) == 0 || !strings.Contains(hints[0], "only one process") {
		t.Errorf("second Open: %v with hints %q, want a hint about one process per directory", err, hints)
	}
	if kind := errs.Kind(err); kind != errs.Conflict {
		t.Errorf("second Open: kind %v, want %v", kind, errs.Conflict)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	s, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close %d: %v", i+1, err)
		}
	}
	ran := false
	for name, err := range map[string]error{
		"View":   s.View(t.Context(), func(store.Reader) error { ran = true; return nil }),
		"Update": s.Update(t.Context(), func(store.Txn) error { ran = true; return nil }),
	} {
		if !errors.Is(err, badgerstore.ErrClosed) || !errors.Is(err, errs.Unavailable) {
			t.Errorf("%s after Close: %v, want ErrClosed (errs.Unavailable)", name, err)
		}
	}
	if _, err := s.RunGC(t.Context()); !errors.Is(err, badgerstore.ErrClosed) {
		t.Errorf("RunGC after Close: %v, want ErrClosed", err)
	}
	if ran {
		t.Error("fn ran on a closed store")
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name     string
		inMemory bool
		fn       func(tx store.Txn) error
		tooLarge bool   // want errs.TooLarge
		want     string // in the error
	}{
		{
			name: "transaction too large",
			fn: func(tx store.Txn) error {
				// 3 MB of values below the value threshold (kept in the
				// memtable), over 15% of the 8 MiB memtable.
				for i := range 12_000 {
					if err := tx.Set(store.Key("big", i), make([]byte, 250)); err != nil {
						return err
					}
				}
				return nil
			},
			tooLarge: true,
			want:     "transaction too large",
		},
		{
			name:     "transaction too large in memory",
			inMemory: true,
			fn: func(tx store.Txn) error {
				for i := range 30 { // 3 MB, over 15% of the 8 MiB memtable
					if err := tx.Set(store.Key("big", i), make([]byte, 100<<10)); err != nil {
						return err
					}
				}
				return nil
			},
			tooLarge: true,
			want:     "transaction too large",
		},
		{
			name:     "value over the in-memory limit",
			inMemory: true,
			fn:       func(tx store.Txn) error { return tx.Set([]byte("k"), make([]byte, 1<<20)) },
			tooLarge: true,
			want:     "value of 1048576 bytes",
		},
		{
			name:     "value over the value log file size",
			fn:       func(tx store.Txn) error { return tx.Set([]byte("k"), make([]byte, 64<<20+1)) },
			tooLarge: true,
			want:     "value of 67108865 bytes",
		},
		{
			name:     "key too long",
			inMemory: true,
			fn:       func(tx store.Txn) error { return tx.Set(make([]byte, 65001), nil) },
			tooLarge: true,
			want:     "key of 65001 bytes",
		},
		{
			name:     "empty key",
			inMemory: true,
			fn:       func(tx store.Txn) error { return tx.Set(nil, []byte("v")) },
			want:     "empty key",
		},
		{
			name:     "empty key delete",
			inMemory: true,
			fn:       func(tx store.Txn) error { return tx.Delete(nil) },
			want:     "empty key",
		},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			opts := badgerstore.Options{InMemory: true}
			if !test.inMemory {
				opts = badgerstore.Options{Dir: t.TempDir()}
			}
			s := open(t, opts)
			err := s.Update(t.Context(), func(tx store.Txn) error {
				if err := tx.Set([]byte("before"), []byte("x")); err != nil {
					return err
				}
				return test.fn(tx)
			})
			if err == nil || !strings.Contains(err.Error(), test.want) || errors.Is(err, errs.TooLarge) != test.tooLarge {
				t.Errorf("Update = %v, want an error with %q (errs.TooLarge %v)", err, test.want, test.tooLarge)
			}
			err = s.View(t.Context(), func(r store.Reader) error {
				_, err := r.Get([]byte("before"))
				return err
			})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the failed transaction's first write: %v, want it absent", err)
			}
		})
	}
}

func TestSetCopiesItsArguments(t *testing.T) {
	t.Parallel()
	s := open(t, badgerstore.Options{InMemory: true})
	err := s.Update(t.Context(), func(tx store.Txn) error {
		key, val := []byte("k1"), []byte("v1")
		if err := tx.Set(key, val); err != nil {
			return err
		}
		copy(key, "k2")
		copy(val, "XX")
		if err := tx.Set(key, []byte("v2")); err != nil {
			return err
		}
		del := []byte("k3")
		if err := tx.Set(del, []byte("v3")); err != nil {
			return err
		}
		if err := tx.Delete(del); err != nil {
			return err
		}
		copy(del, "k1")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = s.View(t.Context(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{}, func(k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		})
	})
	if want := "k1=v1 k2=v2"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("stored %q, %v; want %q", got, err, want)
	}
}

func TestScanCursorOutsidePrefix(t *testing.T) {
	t.Parallel()
	s := open(t, badgerstore.Options{InMemory: true})
	err := s.View(t.Context(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: []byte("a/"), After: []byte("b/1")}, func(_, _ []byte) error {
			t.Error("fn ran")
			return nil
		})
	})
	if err == nil || !strings.Contains(err.Error(), "does not start with the scan prefix") {
		t.Errorf("Scan with After outside Prefix = %v, want an error", err)
	}
}

func TestPanicInFnLeavesStoreUsable(t *testing.T) {
	t.Parallel()
	s, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	catch := func(name string, fn func()) {
		defer func() {
			if recover() == nil {
				t.Errorf("%s: the panic did not propagate", name)
			}
		}()
		fn()
	}
	if err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set([]byte("a"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	// Panics inside a scan also leave its iterator open: the store must
	// close it before discarding the transaction.
	catch("Update", func() {
		_ = s.Update(t.Context(), func(tx store.Txn) error {
			if err := tx.Set([]byte("b"), []byte("2")); err != nil {
				return err
			}
			return tx.Scan(store.ScanOptions{}, func(_, _ []byte) error { panic("in scan") })
		})
	})
	catch("View", func() {
		_ = s.View(t.Context(), func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Reverse: true}, func(_, _ []byte) error { panic("in scan") })
		})
	})
	var got []string
	err = s.View(t.Context(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{}, func(k, _ []byte) error { got = append(got, string(k)); return nil })
	})
	if err != nil || strings.Join(got, ",") != "a" {
		t.Errorf("after the panics the store holds %q, %v; want just a", got, err)
	}
	// Close returns: the panicking calls are no longer counted in flight.
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestUpdateGivesUpOnContextDuringConflicts(t *testing.T) {
	t.Parallel()
	// fn keeps conflicting (it reads a key, then commits a write to that
	// key from a nested Update before its own commit). Cancelling ctx ends
	// the retries with the context's error.
	s := open(t, badgerstore.Options{InMemory: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runs := 0
	err := s.Update(ctx, func(tx store.Txn) error {
		runs++
		if _, err := tx.Get([]byte("hot")); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if runs == 5 {
			cancel()
		}
		if err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set([]byte("hot"), []byte{byte(runs)}) }); err != nil {
			return err
		}
		return tx.Set([]byte("mine"), []byte("x"))
	})
	if !errors.Is(err, context.Canceled) || runs != 5 {
		t.Errorf("Update = %v after %d runs, want context.Canceled after 5", err, runs)
	}
}

func TestConflictSurvivingRetriesIsMarked(t *testing.T) {
	t.Parallel()
	s := open(t, badgerstore.Options{InMemory: true})
	runs := 0
	err := s.Update(t.Context(), func(tx store.Txn) error {
		runs++
		if _, err := tx.Get([]byte("hot")); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set([]byte("hot"), []byte("x")) }); err != nil {
			return err
		}
		return tx.Set([]byte("mine"), []byte("x"))
	})
	if !errors.Is(err, store.ErrConflict) || !errors.Is(err, errs.Conflict) || runs != store.MaxConflictRetries {
		t.Errorf("Update = %v after %d runs, want store.ErrConflict after %d", err, runs, store.MaxConflictRetries)
	}
	err = s.View(t.Context(), func(r store.Reader) error {
		_, err := r.Get([]byte("mine"))
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the write of the conflicting Update: %v, want it absent", err)
	}
}

// TestMissingKey checks that a Get of a missing key is store.ErrNotFound
// and badger.ErrKeyNotFound, and that checking it allocates nothing (a
// missing key is an everyday answer: idempotency keys, sessions, gate
// decisions).
func TestMissingKey(t *testing.T) {
	st := open(t, badgerstore.Options{InMemory: true})
	err := st.View(t.Context(), func(r store.Reader) error {
		_, err := r.Get([]byte("missing"))
		return err
	})
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, badger.ErrKeyNotFound) {
		t.Fatalf("Get of a missing key: %v, want store.ErrNotFound and badger.ErrKeyNotFound", err)
	}
	if errors.Is(err, store.ErrConflict) {
		t.Errorf("Get of a missing key is a conflict: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = errors.Is(err, store.ErrNotFound) }); n != 0 {
		t.Errorf("errors.Is(err, store.ErrNotFound) allocates %v times", n)
	}
}

// TestOpenAfterEmptyMemTableLog opens a directory where a crash left a
// memtable's log file empty (created, not yet sized): the store opens, and
// what was committed before is there.
func TestOpenAfterEmptyMemTableLog(t *testing.T) {
	dir := t.TempDir()
	s, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("open after an empty memtable log: %v", err)
	}
	defer s.Close()
	var got []byte
	if err := s.View(t.Context(), func(r store.Reader) error {
		got, err = r.Get([]byte("k"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if string(got) != "v" {
		t.Fatalf("got %q, want %q", got, "v")
	}
}

// TestScanSince: a commit's version is above the version its transaction
// read at, a key's version is that of its newest write, and a scan with
// ScanOptions.Since (both ways, with and without After, in tables after a
// reopen and in the memtable) sees only the keys last written after it.
func TestScanSince(t *testing.T) {
	dir := t.TempDir()
	s := open(t, badgerstore.Options{Dir: dir})
	ctx := context.Background()
	key := func(id string) []byte { return store.Key("t", "r", "run", id) }
	put := func(ids ...string) (read uint64) {
		t.Helper()
		err := s.Update(ctx, func(tx store.Txn) error {
			read = tx.(store.VersionReader).ReadVersion()
			for _, id := range ids {
				if err := tx.Set(key(id), []byte(id)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return read
	}
	version := func(st *badgerstore.Store, id string) (v uint64) {
		t.Helper()
		err := st.View(ctx, func(r store.Reader) error {
			var err error
			v, err = r.(store.VersionReader).KeyVersion(key(id))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	put("a", "b", "c", "d")
	read := put("b", "e") // b rewritten
	if v := version(s, "b"); v <= read {
		t.Fatalf("b written at version %d, by a commit that read at %d", v, read)
	}
	if v := version(s, "missing"); v != 0 {
		t.Fatalf("a missing key's version %d, want 0", v)
	}
	since := version(s, "b") - 1
	scan := func(st *badgerstore.Store, opts store.ScanOptions) []string {
		t.Helper()
		got := []string{}
		err := st.View(ctx, func(r store.Reader) error {
			return r.Scan(opts, func(_, val []byte) error { got = append(got, string(val)); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	prefix := store.Key("t", "r", "run")
	check := func(st *badgerstore.Store, what string) {
		t.Helper()
		for _, tc := range []struct {
			opts store.ScanOptions
			want []string
		}{
			{store.ScanOptions{Prefix: prefix}, []string{"a", "b", "c", "d", "e"}},
			{store.ScanOptions{Prefix: prefix, Since: since}, []string{"b", "e"}},
			{store.ScanOptions{Prefix: prefix, Since: since, Reverse: true}, []string{"e", "b"}},
			{store.ScanOptions{Prefix: prefix, Since: since, Reverse: true, After: key("e")}, []string{"b"}},
			{store.ScanOptions{Prefix: prefix, Since: since, After: key("b")}, []string{"e"}},
			{store.ScanOptions{Prefix: prefix, Since: since, Rewritten: true}, []string{"b", "e"}},
			{store.ScanOptions{Prefix: prefix, Since: since + 1}, []string{}},
		} {
			if diff := cmp.Diff(tc.want, scan(st, tc.opts)); diff != "" {
				t.Errorf("%s: scan %+v (-want +got):\n%s", what, tc.opts, diff)
			}
		}
	}
	check(s, "in the memtable")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(open(t, badgerstore.Options{Dir: dir}), "in tables after a reopen")
}
