package badgerstore

import (
	"reflect"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
)

// builderTrimInterval is how often the allocators of Badger's table builders
// that sit idle in its pool are released (see the package doc, Memory on a
// small machine).
const builderTrimInterval = 250 * time.Millisecond

// idleBuilders returns the channel of Badger's pool of table-builder
// allocators (DB.allocPool.allocCh, up to 8 allocators kept for reuse), or
// nil when this Badger version lays them out differently, in which case
// nothing is trimmed and the store works as before.
//
// Badger builds every table (a memtable flush, each table of a compaction)
// in a z.Allocator taken from that pool and puts it back afterwards with
// every buffer it grew; without jemalloc (a cgo build tag Badger's users
// rarely set) those buffers are Go heap. An allocator that built a table
// from a full memtable keeps about 14 MiB, and over a sustained load every
// pooled one ends up that large: about 90 of 110 MiB of the live heap after
// 40,000 starts. The pool frees one allocator every 2 seconds only when no
// table was built in between, so under a steady load it never shrinks, and
// Badger has no option for it. Badger sets the pool's fields once, in
// Open, before it returns, and never writes them again, so reading them here
// races with nothing; receiving from the channel is as safe as Badger's own
// receives, and an allocator received is the receiver's alone (with the
// jemalloc tag, Release frees its C memory just the same).
func idleBuilders(db *badger.DB) chan *z.Allocator {
	dbv := reflect.ValueOf(db).Elem()
	pf := dbv.FieldByName("allocPool")
	if !pf.IsValid() || pf.Type() != reflect.TypeFor[*z.AllocatorPool]() {
		return nil
	}
	pool := *(**z.AllocatorPool)(unsafe.Pointer(pf.UnsafeAddr()))
	if pool == nil {
		return nil
	}
	cf := reflect.ValueOf(pool).Elem().FieldByName("allocCh")
	if !cf.IsValid() || cf.Type() != reflect.TypeFor[chan *z.Allocator]() {
		return nil
	}
	return *(*chan *z.Allocator)(unsafe.Pointer(cf.UnsafeAddr()))
}

// releaseIdle releases every allocator idle in the pool: its buffers become
// garbage, and the next table build starts a fresh allocator (Badger's own
// path when the pool is empty). It returns how many it released; it takes
// at most the pool's capacity, so a pool that Badger keeps refilling does
// not hold it.
//
// Releasing only those idle for a whole tick, so that the ones Badger keeps
// reusing stay, was tried: the same allocations per HTTP start (a flush
// comes every second or two, long after its last allocator went idle), and
// more memory at the end of 10,000 starts (RSS 122-173 against 116-126 MiB
// releasing every idle one, both at 250 ms ticks).
// So was keeping those of at most one first buffer (2 MiB, what most
// builds start with): the same allocations per start again (the flushes'
// builders, grown to 14 MiB, are what is allocated afresh), and RSS 131-148
// against 117-121 MiB (250 ms ticks).
func releaseIdle(ch chan *z.Allocator) (released int) {
	for released < cap(ch) {
		select {
		case a := <-ch:
			a.Release()
			released++
		default:
			return released
		}
	}
	return released
}

// trimLoop releases the idle allocators of ch at every tick until stop is
// closed. Open runs it on a real ticker of builderTrimInterval: it is
// housekeeping of memory, like Badger's own tickers, not behaviour a test
// steps through with a clock. ch must stay open while it runs (Close
// stops it before it closes Badger, which closes ch).
func trimLoop(ch chan *z.Allocator, tick <-chan time.Time, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
			releaseIdle(ch)
		}
	}
}

// startTrim starts the trim loop of db's table-builder pool, when this
// Badger version has it where idleBuilders looks; s.trimStopped is closed
// when the loop has returned.
func (s *Store) startTrim(db *badger.DB) {
	s.trimStopped = make(chan struct{})
	ch := idleBuilders(db)
	if ch == nil {
		close(s.trimStopped)
		return
	}
	tick := time.NewTicker(builderTrimInterval)
	go func() {
		defer close(s.trimStopped)
		defer tick.Stop()
		trimLoop(ch, tick.C, s.stopGC)
	}()
}
