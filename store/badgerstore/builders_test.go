package badgerstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/dgraph-io/ristretto/v2/z"
	"github.com/google/go-cmp/cmp"
)

// TestIdleBuildersFindsBadgersPool fails when a Badger upgrade moves the
// pool of table-builder allocators: the store would then keep every
// allocator Badger pools (about 90 MiB under a sustained load) without
// saying so.
func TestIdleBuildersFindsBadgersPool(t *testing.T) {
	t.Parallel()
	s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 1 << 20, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch := idleBuilders(s.db)
	if ch == nil {
		t.Fatal("idleBuilders found no pool of table-builder allocators in this Badger version: look where " +
			"table.NewTableBuilder takes its allocator from and update idleBuilders")
	}
	if cap(ch) != 8 {
		t.Errorf("the pool holds %d allocators, want Badger's 8", cap(ch))
	}
	// Writes past a memtable make Badger flush it, building a table in an
	// allocator it then puts back in that pool, where it stays at least
	// until the trimmer's next tick.
	value := make([]byte, 256)
	for i := 0; len(ch) == 0; i++ {
		if i == 1000 { // 64 MiB, 64 memtables
			t.Fatal("Badger put no table builder back in the pool idleBuilders found")
		}
		err := s.Update(context.Background(), func(tx store.Txn) error {
			for j := range (64 << 10) / len(value) {
				if err := tx.Set(fmt.Appendf(nil, "k%04d-%03d", i, j), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestReleaseIdleEmptiesThePool(t *testing.T) {
	t.Parallel()
	ch := make(chan *z.Allocator, 3)
	as := []*z.Allocator{z.NewAllocator(1024, "t"), z.NewAllocator(1024, "t"), z.NewAllocator(1024, "t")}
	defer func() {
		for _, a := range as {
			a.Release()
		}
	}()
	registered := func() []bool {
		var got []bool
		for _, a := range as {
			got = append(got, z.AllocatorFrom(a.Ref) != nil)
		}
		return got
	}
	ch <- as[0]
	ch <- as[1]
	if n := releaseIdle(ch); n != 2 || len(ch) != 0 {
		t.Fatalf("released %d, %d left in the pool; want 2, 0", n, len(ch))
	}
	// Released: dropped from ristretto's registry of allocators, which
	// otherwise keeps their buffers reachable.
	if diff := cmp.Diff([]bool{false, false, true}, registered()); diff != "" {
		t.Errorf("registered allocators (-want +got):\n%s", diff)
	}
	if n := releaseIdle(ch); n != 0 {
		t.Errorf("released %d from an empty pool", n)
	}
}

func TestTrimLoopTicksAndStops(t *testing.T) {
	t.Parallel()
	ch := make(chan *z.Allocator, 8)
	a := z.NewAllocator(1024, "t")
	defer a.Release()
	ch <- a
	tick, stop, done := make(chan time.Time), make(chan struct{}), make(chan struct{})
	go func() {
		trimLoop(ch, tick, stop)
		close(done)
	}()
	tick <- time.Time{}
	tick <- time.Time{} // returns once the first tick was handled
	if len(ch) != 0 || z.AllocatorFrom(a.Ref) != nil {
		t.Errorf("after a tick the idle allocator is still there (%d in the pool)", len(ch))
	}
	close(stop)
	testwait.Recv(t, done, "the trim loop stopped")
}
