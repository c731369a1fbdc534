package storetest

import (
	"strconv"
	"sync"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// exerciseConflict checks that optimistic conflicts are detected per key
// read and retried by Update.
func exerciseConflict(t *testing.T, open opener) {
	for _, test := range []struct {
		name string
		// setup is written before the test.
		setup []string
		// first runs in an Update; pause holds its first attempt while
		// between commits.
		first   func(tx store.Txn, pause func()) error
		between func(tx store.Txn) error
		// wantRuns is how often first must run: 2 when between wrote a key
		// first read, 1 otherwise.
		wantRuns int
		want     []kv
	}{
		{
			name:  "read key overwritten",
			setup: []string{"n", "0"},
			first: func(tx store.Txn, pause func()) error {
				n, err := getInt(tx, "n")
				if err != nil {
					return err
				}
				pause()
				return tx.Set([]byte("n"), []byte(strconv.Itoa(n+1)))
			},
			between:  func(tx store.Txn) error { return tx.Set([]byte("n"), []byte("10")) },
			wantRuns: 2,
			want:     []kv{{"n", "11"}},
		},
		{
			name: "missing key created",
			first: func(tx store.Txn, pause func()) error {
				_, err := tx.Get([]byte("m"))
				if !errors.Is(err, store.ErrNotFound) {
					return tx.Set([]byte("saw"), []byte("m"))
				}
				pause()
				return tx.Set([]byte("saw"), []byte("nothing"))
			},
			between:  func(tx store.Txn) error { return tx.Set([]byte("m"), []byte("y")) },
			wantRuns: 2,
			want:     []kv{{"m", "y"}, {"saw", "m"}},
		},
		{
			name:  "scanned key overwritten",
			setup: []string{"p/1", "a", "p/2", "b"},
			first: func(tx store.Txn, pause func()) error {
				got, err := scanAll(tx, store.ScanOptions{Prefix: []byte("p/")})
				if err != nil {
					return err
				}
				pause()
				return tx.Set([]byte("sum"), []byte(got[0].Value+got[1].Value))
			},
			between:  func(tx store.Txn) error { return tx.Set([]byte("p/2"), []byte("B")) },
			wantRuns: 2,
			want:     []kv{{"p/1", "a"}, {"p/2", "B"}, {"sum", "aB"}},
		},
		{
			name:  "reverse scanned key deleted",
			setup: []string{"p/1", "a", "p/2", "b"},
			first: func(tx store.Txn, pause func()) error {
				got, err := scanAll(tx, store.ScanOptions{Prefix: []byte("p/"), Reverse: true, KeysOnly: true})
				if err != nil {
					return err
				}
				pause()
				return tx.Set([]byte("count"), []byte(strconv.Itoa(len(got))))
			},
			between:  func(tx store.Txn) error { return tx.Delete([]byte("p/1")) },
			wantRuns: 2,
			want:     []kv{{"count", "1"}, {"p/2", "b"}},
		},
		{
			name:  "disjoint keys",
			setup: []string{"a", "1"},
			first: func(tx store.Txn, pause func()) error {
				v, err := tx.Get([]byte("a"))
				if err != nil {
					return err
				}
				pause()
				return tx.Set([]byte("a"), append(v, '+'))
			},
			between:  func(tx store.Txn) error { return tx.Set([]byte("b"), []byte("2")) },
			wantRuns: 1,
			want:     []kv{{"a", "1+"}, {"b", "2"}},
		},
		{
			name: "blind writes to one key",
			first: func(tx store.Txn, pause func()) error {
				pause()
				return tx.Set([]byte("k"), []byte("first"))
			},
			between:  func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("between")) },
			wantRuns: 1,
			want:     []kv{{"k", "first"}},
		},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			if len(test.setup) > 0 {
				set(t, s, test.setup...)
			}
			runs := interleave(t, s, test.first, test.between)
			if runs != test.wantRuns {
				t.Errorf("first ran %d times, want %d", runs, test.wantRuns)
			}
			if diff := cmp.Diff(test.want, scan(t, s, store.ScanOptions{})); diff != "" {
				t.Errorf("final state (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("CounterUnderContention", func(t *testing.T) {
		t.Parallel()
		// Many read-modify-write increments of one key at once: every one
		// must land exactly once, which only holds when conflicting commits
		// fail and are run again.
		s := open(t)
		const goroutines, increments = 8, 25
		set(t, s, "counter", "0")
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			runs int
		)
		errc := make(chan error, goroutines)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range increments {
					err := s.Update(t.Context(), func(tx store.Txn) error {
						mu.Lock()
						runs++
						mu.Unlock()
						n, err := getInt(tx, "counter")
						if err != nil {
							return err
						}
						return tx.Set([]byte("counter"), []byte(strconv.Itoa(n+1)))
					})
					if err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Errorf("Update: %v", err)
		}
		got, _ := get(t, s, "counter")
		if want := strconv.Itoa(goroutines * increments); got != want {
			t.Errorf("counter = %s, want %s", got, want)
		}
		t.Logf("%d increments took %d runs of fn", goroutines*increments, runs)
	})
}

// interleave runs first in an Update, holds its first attempt where first
// calls pause until between has committed in another Update, and returns
// how many times first ran.
func interleave(t *testing.T, s store.Store, first func(tx store.Txn, pause func()) error, between func(tx store.Txn) error) int {
	t.Helper()
	paused := make(chan struct{})
	resume := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(resume) }) }
	defer release() // also when the test fails before between commits
	runs := 0
	done := make(chan error, 1)
	go func() {
		done <- s.Update(t.Context(), func(tx store.Txn) error {
			runs++
			return first(tx, func() {
				if runs == 1 {
					close(paused)
					<-resume
				}
			})
		})
	}()
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the first Update ended before pausing: %v", err)
	}
	update(t, s, between)
	release()
	if err := <-done; err != nil {
		t.Fatalf("the first Update: %v", err)
	}
	return runs
}

// getInt reads a decimal integer at key.
func getInt(r store.Reader, key string) (int, error) {
	v, err := r.Get([]byte(key))
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(v))
	return n, errors.Wrapf(err, "value at %q", key)
}
