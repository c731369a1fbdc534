package runengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
)

func testStore(t *testing.T) store.Store {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func readKeys(t *testing.T, st store.Store, prefix []byte) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: prefix}, func(k, v []byte) error {
			got[string(k[len(prefix):])] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCommitterLandsEveryDelta submits deltas from many goroutines, among
// them deltas that fail, deltas that read what earlier ones wrote, and
// deltas too big to share a transaction, and checks what each was told and
// what the store holds.
func TestCommitterLandsEveryDelta(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	c := newCommitter(st, 50, nil, Failpoints{}, nil)
	prefix := store.Key("t", "k")
	key := func(s string) []byte { return append(append([]byte(nil), prefix...), s...) }
	big := make([]byte, 300<<10) // four of these are over one transaction's limit

	type result struct {
		name string
		err  error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	submit := func(name string, d *delta) {
		wg.Add(1)
		d.after = func(err error) {
			mu.Lock()
			results = append(results, result{name, err})
			mu.Unlock()
			wg.Done()
		}
		c.submit(d)
	}
	want := map[string]string{}
	var wantMu sync.Mutex
	var senders sync.WaitGroup
	for g := range 8 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for i := range 40 {
				name := fmt.Sprintf("g%d-%d", g, i)
				val := name
				if i%10 == 3 {
					val = string(big)
				}
				submit(name, &delta{apply: setKey(key(name), []byte(val)), counters: map[string]int64{"t-count": 1}})
				wantMu.Lock()
				want[name] = val
				wantMu.Unlock()
			}
		}()
	}
	senders.Wait()
	boom := errors.New("boom")
	submit("bad", &delta{apply: func(tx store.Txn) error {
		if err := tx.Set(key("bad"), []byte("half")); err != nil {
			return err
		}
		return boom
	}})
	// A reading delta sees every delta submitted before it.
	submit("reader", &delta{reads: true, apply: func(tx store.Txn) error {
		v, err := tx.Get(key("g7-39"))
		if err != nil {
			return err
		}
		return tx.Set(key("copy"), v)
	}})
	want["copy"] = "g7-39"
	wg.Wait()

	errsByName := map[string]error{}
	for _, r := range results {
		if _, dup := errsByName[r.name]; dup {
			t.Errorf("%s told twice", r.name)
		}
		errsByName[r.name] = r.err
	}
	for name := range want {
		if name != "copy" && errsByName[name] != nil {
			t.Errorf("%s: %v", name, errsByName[name])
		}
	}
	if !errors.Is(errsByName["bad"], boom) || errsByName["reader"] != nil {
		t.Errorf("bad: %v, reader: %v", errsByName["bad"], errsByName["reader"])
	}
	short := cmp.Transformer("short", func(s string) string {
		if len(s) > 32 {
			return fmt.Sprintf("%d bytes", len(s))
		}
		return s
	})
	if diff := cmp.Diff(want, readKeys(t, st, prefix), short); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	var n int64
	if err := st.View(context.Background(), func(r store.Reader) error {
		var err error
		n, err = readCounter(r, []byte("t-count"))
		return err
	}); err != nil || n != 320 {
		t.Errorf("counter = %d, %v; want 320", n, err)
	}
	c.close()
}

// TestCommitterCloseCommitsQueued checks that close commits what was
// submitted before it, and refuses what comes after.
func TestCommitterCloseCommitsQueued(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	c := newCommitter(st, 1000, nil, Failpoints{}, nil)
	prefix := store.Key("t", "q")
	want := map[string]string{}
	errs := make(chan error, 200)
	for i := range 200 {
		name := fmt.Sprintf("%03d", i)
		want[name] = name
		c.submit(&delta{apply: setKey(append(append([]byte(nil), prefix...), name...), []byte(name)), reads: i%50 == 49,
			after: func(err error) { errs <- err }})
	}
	c.close()
	for range 200 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, readKeys(t, st, prefix)); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	late := make(chan error, 1)
	c.submit(&delta{apply: setKey(append(prefix, 'x'), nil), after: func(err error) { late <- err }})
	if err := <-late; !errors.Is(err, errClosed) {
		t.Errorf("after close: %v", err)
	}
}
