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
// Badger has no option for it. The pool's fields are read once, after Open
// has set them and before anything else reads them; receiving from the
// channel is as safe as Badger's own receives.
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

// builderTrimmer releases the table-builder allocators that stayed idle in
// Badger's pool from one of its ticks to the next: the allocators Badger
// keeps reusing under a steady load stay (a fresh one costs a new
// allocation per table and more garbage collections), the ones a burst of
// parallel builds left behind go.
type builderTrimmer struct {
	ch   chan *z.Allocator
	seen map[uint64]bool // Ref of the allocators put back at the last tick
	held []*z.Allocator
}

func newBuilderTrimmer(ch chan *z.Allocator) *builderTrimmer {
	return &builderTrimmer{ch: ch, seen: map[uint64]bool{}}
}

// trim takes the allocators idle in the pool, releases those that were
// already there at the last tick and puts the others back. It returns how
// many it released. The channel must not be closed (Close stops the
// trimmer before it closes Badger).
func (t *builderTrimmer) trim() (released int) {
	t.held = t.held[:0]
	for len(t.held) < cap(t.ch) {
		select {
		case a := <-t.ch:
			t.held = append(t.held, a)
			continue
		default:
		}
		break
	}
	next := make(map[uint64]bool, len(t.held))
	for _, a := range t.held {
		if t.seen[a.Ref] {
			a.Release()
			released++
			continue
		}
		select {
		case t.ch <- a:
			next[a.Ref] = true
		default: // Badger returned others meanwhile: the pool is full
			a.Release()
			released++
		}
	}
	clear(t.held)
	t.seen = next
	return released
}

// trimLoop calls trim at every tick until stop is closed. Open runs it on
// a real ticker of builderTrimInterval: it is housekeeping of memory, like
// Badger's own tickers, not behaviour a test steps through with a clock.
func (t *builderTrimmer) trimLoop(tick <-chan time.Time, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-tick:
			t.trim()
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
	t := newBuilderTrimmer(ch)
	tick := time.NewTicker(builderTrimInterval)
	go func() {
		defer close(s.trimStopped)
		defer tick.Stop()
		t.trimLoop(tick.C, s.stopGC)
	}()
}
