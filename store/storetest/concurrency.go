package storetest

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// exerciseConcurrency checks concurrent transactions on disjoint keys.
func exerciseConcurrency(t *testing.T, open opener) {
	t.Run("DisjointWriters", func(t *testing.T) {
		t.Parallel()
		// Each goroutine does read-modify-write on its own counter and
		// writes its own keys, while readers scan. Nothing is shared, so no
		// Update may conflict: fn runs exactly once per Update.
		s := open(t)
		const writers, writes = 8, 20
		var runs atomic.Int64
		var wg sync.WaitGroup
		errc := make(chan error, 2*writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				counter := []byte(fmt.Sprintf("c/%d", w))
				for i := range writes {
					err := s.Update(t.Context(), func(tx store.Txn) error {
						runs.Add(1)
						n, err := getInt(tx, string(counter))
						if err != nil && !errors.Is(err, store.ErrNotFound) {
							return err
						}
						if err := tx.Set(counter, []byte(strconv.Itoa(n+1))); err != nil {
							return err
						}
						return tx.Set([]byte(fmt.Sprintf("w/%d/%03d", w, i)), []byte(fmt.Sprintf("%d.%d", w, i)))
					})
					if err != nil {
						errc <- err
						return
					}
				}
			}()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A reader: every snapshot holds a prefix of this writer's
				// keys, in order.
				prefix := []byte(fmt.Sprintf("w/%d/", w))
				for range writes {
					got := 0
					err := s.View(t.Context(), func(r store.Reader) error {
						return r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(key, _ []byte) error {
							if want := fmt.Sprintf("w/%d/%03d", w, got); string(key) != want {
								return errors.Newf("snapshot key %d is %q, want %q", got, key, want)
							}
							got++
							return nil
						})
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
			t.Error(err)
		}
		if got := runs.Load(); got != writers*writes {
			t.Errorf("fn ran %d times for %d Updates on disjoint keys: some conflicted", got, writers*writes)
		}
		var want []kv
		for w := range writers {
			want = append(want, kv{fmt.Sprintf("c/%d", w), strconv.Itoa(writes)})
		}
		for w := range writers {
			for i := range writes {
				want = append(want, kv{fmt.Sprintf("w/%d/%03d", w, i), fmt.Sprintf("%d.%d", w, i)})
			}
		}
		if diff := cmp.Diff(want, scan(t, s, store.ScanOptions{})); diff != "" {
			t.Errorf("final state (-want +got):\n%s", diff)
		}
	})
}
