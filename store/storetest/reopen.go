package storetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// openDir opens the store in dir and returns it with a function that
// closes it once; the close is also scheduled for the end of the test.
func openDir(t *testing.T, open func(t *testing.T, dir string) store.Store, dir string) (store.Store, func()) {
	t.Helper()
	s := open(t, dir)
	var once sync.Once
	closeStore := func() {
		once.Do(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(closeStore)
	return s, closeStore
}

// exerciseReopen checks that what was committed survives Close and Open.
func exerciseReopen(t *testing.T, open func(t *testing.T, dir string) store.Store) {
	t.Run("DataSurvivesReopen", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		c := widgets()
		rng := rand.New(rand.NewPCG(3, 4))
		big := make([]byte, 1<<20)
		for i := range big {
			big[i] = byte(rng.Uint32())
		}

		// want is the expected content under "k/".
		want := map[string]string{}
		wantList := func() []kv {
			var out []kv
			for i := range 300 {
				k := fmt.Sprintf("k/%03d", i)
				if v, ok := want[k]; ok {
					out = append(out, kv{k, v})
				}
			}
			return out
		}
		check := func(t *testing.T, s store.Store, round int) {
			t.Helper()
			if diff := cmp.Diff(wantList(), scan(t, s, store.ScanOptions{Prefix: []byte("k/")})); diff != "" {
				t.Errorf("round %d: keys after reopening (-want +got):\n%s", round, diff)
			}
			rev := wantList()
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if diff := cmp.Diff(rev, scan(t, s, store.ScanOptions{Prefix: []byte("k/"), Reverse: true})); diff != "" {
				t.Errorf("round %d: reverse scan after reopening (-want +got):\n%s", round, diff)
			}
			view(t, s, func(r store.Reader) error {
				v, err := r.Get([]byte("big"))
				if err != nil {
					return err
				}
				if !bytes.Equal(v, big) {
					t.Errorf("round %d: the 1 MiB value came back as %d different bytes", round, len(v))
				}
				page, _, err := c.ListBy(r, "acme", "owner", []any{"ann"}, store.Page{Forward: true})
				if err != nil {
					return err
				}
				var ids []string
				for _, w := range page {
					ids = append(ids, w.ID)
				}
				if diff := cmp.Diff([]string{"w1", "w3"}, ids); diff != "" {
					t.Errorf("round %d: ListBy after reopening (-want +got):\n%s", round, diff)
				}
				w, err := c.Lookup(r, "acme", "email", "b@example.com")
				if err != nil || w.ID != "w2" {
					t.Errorf("round %d: Lookup after reopening = %+v, %v; want w2", round, w, err)
				}
				return nil
			})
		}

		s, closeStore := openDir(t, open, dir)
		for batch := range 3 {
			update(t, s, func(tx store.Txn) error {
				for i := batch * 100; i < batch*100+100; i++ {
					k := fmt.Sprintf("k/%03d", i)
					want[k] = fmt.Sprintf("v%d", i)
					if err := tx.Set([]byte(k), []byte(want[k])); err != nil {
						return err
					}
				}
				return nil
			})
		}
		update(t, s, func(tx store.Txn) error {
			for i := 0; i < 300; i += 7 {
				k := fmt.Sprintf("k/%03d", i)
				delete(want, k)
				if err := tx.Delete([]byte(k)); err != nil {
					return err
				}
			}
			for i := 1; i < 300; i += 50 {
				k := fmt.Sprintf("k/%03d", i)
				want[k] = "overwritten"
				if err := tx.Set([]byte(k), []byte(want[k])); err != nil {
					return err
				}
			}
			return nil
		})
		update(t, s, func(tx store.Txn) error { return tx.Set([]byte("big"), big) })
		put(t, s,
			&widget{ID: "w1", Tenant: "acme", Owner: "ann", Seq: 1},
			&widget{ID: "w2", Tenant: "acme", Owner: "ann", Seq: 2, Email: "b@example.com"},
			&widget{ID: "w3", Tenant: "acme", Owner: "bob", Seq: 3},
		)
		put(t, s,
			&widget{ID: "w2", Tenant: "acme", Owner: "bob", Seq: 2, Email: "b@example.com"},
			&widget{ID: "w3", Tenant: "acme", Owner: "ann", Seq: 3},
		)
		check(t, s, 0)
		closeStore()

		s, closeStore = openDir(t, open, dir)
		check(t, s, 1)
		update(t, s, func(tx store.Txn) error {
			want["k/299"] = "after reopen"
			delete(want, "k/002")
			if err := tx.Delete([]byte("k/002")); err != nil {
				return err
			}
			return tx.Set([]byte("k/299"), []byte(want["k/299"]))
		})
		closeStore()

		s, _ = openDir(t, open, dir)
		check(t, s, 2)
	})

	t.Run("ClosedStoreRefusesWork", func(t *testing.T) {
		t.Parallel()
		s, closeStore := openDir(t, open, t.TempDir())
		set(t, s, "k", "v")
		closeStore()
		ran := false
		if err := s.View(t.Context(), func(store.Reader) error { ran = true; return nil }); err == nil || ran {
			t.Errorf("View after Close: %v, fn ran %v; want an error without running fn", err, ran)
		}
		if err := s.Update(t.Context(), func(store.Txn) error { ran = true; return nil }); err == nil || ran {
			t.Errorf("Update after Close: %v, fn ran %v; want an error without running fn", err, ran)
		}
	})
}
