package badgerstore

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	// one tick of the trimmer.
	value := make([]byte, 64<<10)
	for i := 0; len(ch) == 0; i++ {
		if i == 1000 { // 64 MiB, 64 memtables
			t.Fatal("Badger put no table builder back in the pool idleBuilders found")
		}
		err := s.Update(context.Background(), func(tx store.Txn) error {
			return tx.Set(fmt.Appendf(nil, "k%04d", i), value)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuilderTrimmerReleasesWhatStaysIdle(t *testing.T) {
	t.Parallel()
	ch := make(chan *z.Allocator, 3)
	tr := newBuilderTrimmer(ch)
	a1, a2, a3, a4 := z.NewAllocator(1024, "t"), z.NewAllocator(1024, "t"), z.NewAllocator(1024, "t"), z.NewAllocator(1024, "t")
	defer func() { // those the test leaves registered
		for _, a := range []*z.Allocator{a1, a2, a3, a4} {
			a.Release()
		}
	}()
	live := func() []bool {
		var got []bool
		for _, a := range []*z.Allocator{a1, a2, a3, a4} {
			got = append(got, z.AllocatorFrom(a.Ref) != nil)
		}
		return got
	}
	ch <- a1
	ch <- a2
	if n := tr.trim(); n != 0 || len(ch) != 2 {
		t.Fatalf("first tick: released %d, %d left in the pool; want 0, 2 (none was idle a whole tick)", n, len(ch))
	}
	// A build takes one (Badger's Get takes the oldest) and another comes
	// back.
	if got := <-ch; got != a1 {
		t.Fatal("the trimmer did not keep the pool's order")
	}
	ch <- a3
	if n := tr.trim(); n != 1 || len(ch) != 1 {
		t.Fatalf("second tick: released %d, %d left in the pool; want 1 (a2, idle since the first tick), 1", n, len(ch))
	}
	if diff := cmp.Diff([]bool{true, false, true, true}, live()); diff != "" {
		t.Errorf("registered allocators after the second tick (-want +got):\n%s", diff)
	}
	// a1 comes back, and a4: a3, idle since the second tick, goes.
	ch <- a1
	ch <- a4
	if n := tr.trim(); n != 1 || len(ch) != 2 {
		t.Fatalf("third tick: released %d, %d left in the pool; want 1 (a3), 2", n, len(ch))
	}
	if n := tr.trim(); n != 2 || len(ch) != 0 {
		t.Fatalf("fourth tick: released %d, %d left in the pool; want 2, 0", n, len(ch))
	}
	if diff := cmp.Diff([]bool{false, false, false, false}, live()); diff != "" {
		t.Errorf("registered allocators at the end (-want +got):\n%s", diff)
	}
}

func TestBuilderTrimLoopTicksAndStops(t *testing.T) {
	t.Parallel()
	ch := make(chan *z.Allocator, 8)
	tr := newBuilderTrimmer(ch)
	a := z.NewAllocator(1024, "t")
	defer a.Release()
	ch <- a
	tick, stop, done := make(chan time.Time), make(chan struct{}), make(chan struct{})
	go func() {
		tr.trimLoop(tick, stop)
		close(done)
	}()
	for range 3 { // the third send returns once the second tick was handled
		tick <- time.Time{}
	}
	if len(ch) != 0 || z.AllocatorFrom(a.Ref) != nil {
		t.Errorf("after two ticks the idle allocator is still there (%d in the pool)", len(ch))
	}
	close(stop)
	<-done
}
