package badgerstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestSnapshot: a snapshot reads what had landed when it was taken, not
// what lands after; several goroutines read it at once; it is found
// through Hooked; Close waits for its Release; after Close no snapshot is
// taken.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	put := func(k, v string) {
		t.Helper()
		if err := s.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte(k), []byte(v)) }); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1")
	sn, ok := store.SnapshotterOf(store.Hooked(s))
	if !ok {
		t.Fatal("SnapshotterOf(Hooked(badgerstore)) found none")
	}
	snap, err := sn.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	put("a", "2")
	put("b", "1")

	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := snap.Get([]byte("a"))
			_, errB := snap.Get([]byte("b"))
			n := 0
			errS := snap.Scan(store.ScanOptions{}, func(_, _ []byte) error { n++; return nil })
			got[i] = string(v)
			if err != nil || !errors.Is(errB, store.ErrNotFound) || errS != nil || n != 1 {
				got[i] = "bad"
			}
		}()
	}
	wg.Wait()
	want := []string{"1", "1", "1", "1", "1", "1", "1", "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reads of the snapshot (-want +got):\n%s", diff)
	}

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a snapshot was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	snap.Release()
	snap.Release() // harmless
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not return after the snapshot's Release")
	}
	if _, err := s.Snapshot(ctx); !errors.Is(err, badgerstore.ErrClosed) {
		t.Errorf("Snapshot after Close: %v, want ErrClosed", err)
	}
}
