package httpapi

import (
	"bytes"
	"context"
	"hash/maphash"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// idemFilter answers "this Idempotency-Key was never stored" without a
// store read, on a workspace that is its store's only writer (its engine
// is not a cluster node): a Bloom filter of the (tenant, record id) pairs
// of the idempotency records. Every write of a record adds its pair before
// the write commits (keepOp, markActed, keep), and at open a background
// scan adds the pairs stored before; until that scan is done, mayHold
// answers maybe for every key, so the store is read as without a filter.
// So a key whose record is committed or committing, and not expired, is
// never reported absent; a maybe reads the store.
//
// The filter is a list of layers, each a Bloom filter, and a lookup checks
// every layer. A pair is added to the newest layer, which holds the pairs
// whose records expire in its window of time (idemFilterPeriod long) or
// before. It forgets by dropping layers: when a record of a later window
// is added, a new layer begins, and the layers whose window ended
// idemFilterPeriod or more before that record was written are dropped;
// every record they hold has expired by then, and an expired record is
// read as absent all the same (its record is written over; the sweep
// removes what is left). The margin of a period keeps a clock that steps
// back by less than that from reading a record as absent before its
// expiry; a clock that jumps forward for a write and comes back before
// the next drops no layer early either, however often (see next). So a busy
// process holds about (24 h + two periods) of keys, not
// every key since it started.
//
// Within a window the filter grows with the keys it takes: when the newest
// layer has taken its share of pairs (one per idemFilterBitsPerKey bits),
// a layer twice its size is added for the same window. A new window's
// first layer is sized for the keys the window before took (at least
// idemFilterMinBits). The false maybes, each costing one read, stay under
// about 1 in 400 per layer; past idemFilterMaxBits in all no layer is
// added (a new window's keys then go on into the newest, whose window is
// moved on), and the newest takes more than its share: more reads, never
// a wrong answer.
//
// A filter belongs to the workspace, not to one Handler: every Handler of
// a workspace adds its writes to the same filter (idemSharedOf).
type idemFilter struct {
	seed    maphash.Seed
	layers  atomic.Pointer[[]*bloomLayer] // oldest first; pairs go to the last
	growing sync.Mutex                    // held to add or drop a layer
	maxBits int                           // bounds the layers' bits together
	ready   atomic.Bool                   // the records stored before the filter are in it
	// turned is the time (Unix nanoseconds) of the write that began the
	// newest window, math.MinInt64 before any; growing is held to use it.
	turned int64
	// latest is the time (Unix nanoseconds) of the write added last,
	// math.MinInt64 before any.
	latest atomic.Int64
}

// bloomLayer is one of a filter's Bloom filters.
type bloomLayer struct {
	bits []atomic.Uint64
	mask uint32 // the number of bits, a power of two, less one
	// room is the pairs the layer takes before the next is added; count
	// the pairs it took.
	room  int64
	count atomic.Int64
	// window is the last window (a record's expiry in Unix nanoseconds
	// over idemFilterPeriod) of the records whose pairs the layer took; it
	// only grows, and only while the layer is the newest.
	window atomic.Int64
}

// idemFilterBits is the first layer's size: 2 MiB, which takes a million
// keys (16 bits per key), where a key never stored reads the store about
// once in 400 (idemFilterProbes bits per key). idemFilterMinBits is the
// least size of a new window's first layer (32 KiB, 16,384 keys).
// idemFilterMaxBits bounds the layers' sizes together: 64 MiB.
// idemFilterPeriod is a layer's window: an eighth of the records' life,
// so that about ten windows are held.
const (
	idemFilterBits       = 1 << 24
	idemFilterMinBits    = 1 << 18
	idemFilterMaxBits    = 1 << 29
	idemFilterBitsPerKey = 16
	idemFilterProbes     = 4
	idemFilterPeriod     = idempotencyTTL / 8
)

func newIdemFilter() *idemFilter { return newIdemFilterOf(idemFilterBits, idemFilterMaxBits) }

// newIdemFilterOf returns a filter whose first layer has bits bits (a power
// of two, at least 64) and whose layers have at most maxBits together.
func newIdemFilterOf(bits, maxBits int) *idemFilter {
	f := &idemFilter{seed: maphash.MakeSeed(), maxBits: maxBits, turned: math.MinInt64}
	f.latest.Store(math.MinInt64)
	f.layers.Store(&[]*bloomLayer{newBloomLayer(bits, math.MinInt64)})
	return f
}

func newBloomLayer(bits int, window int64) *bloomLayer {
	l := &bloomLayer{bits: make([]atomic.Uint64, bits/64), mask: uint32(bits - 1), room: int64(bits / idemFilterBitsPerKey)}
	l.window.Store(window)
	return l
}

// hash is the pair's 64-bit hash, from which each layer takes its
// idemFilterProbes bits by double hashing.
func (f *idemFilter) hash(tenant, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteString(tenant)
	h.WriteByte(0)
	h.WriteString(id)
	return h.Sum64()
}

// add adds the pair of a record expiring at expires (before its write
// commits).
func (f *idemFilter) add(tenant, id string, expires time.Time) {
	sum := f.hash(tenant, id)
	at := expires.UnixNano()
	w, now := at/int64(idemFilterPeriod), at-int64(idempotencyTTL)
	a, b := uint32(sum), uint32(sum>>32)|1
	prev := f.latest.Swap(now)
	for {
		layers := *f.layers.Load()
		l := layers[len(layers)-1]
		if l.window.Load() < w {
			f.next(l, w, now, prev)
			continue
		}
		for i := range uint32(idemFilterProbes) {
			bit := (a + i*b) & l.mask
			l.bits[bit/64].Or(1 << (bit % 64))
		}
		if l.count.Add(1) == l.room {
			f.next(l, w, now, prev)
		}
		return
	}
}

// next adds a layer after last, the newest, for the record of window w
// written at now (Unix nanoseconds), the write before it at prev: when
// last's window is before w, the first layer of w, and the layers whose
// window ended a period or more before now, and ended before prev and
// before the write that began last's window (see below), are dropped;
// else (last is full) a layer twice its size for its window. Past
// f.maxBits it adds none: last then takes w's pairs.
//
// The conditions on prev and on the write that began last's window keep a
// clock that jumps forward from dropping layers early: a write at a time
// jumped ahead begins a window, but drops only the layers that ended
// before the write before it and before the write that began the window
// before it, times the clock showed before the jump. Only a clock that
// stays ahead for the writes until a later one begins another window (a
// period or more, as windows go) drops what ended before its jump. So a
// clock that jumps forward, then back before its next write, forgets no
// record not yet expired at the time it comes back to (the layers of later
// windows hold the writes made meanwhile), however often it does so.
func (f *idemFilter) next(last *bloomLayer, w, now, prev int64) {
	f.growing.Lock()
	defer f.growing.Unlock()
	layers := *f.layers.Load()
	if layers[len(layers)-1] != last {
		return // another writer added one
	}
	lw := last.window.Load()
	turn := lw < w
	before := f.turned // the time of the write that began lw
	if turn {
		f.turned = now
	}
	switch {
	case turn && last.count.Load() == 0:
		last.window.Store(w) // an empty layer (the first, or after a quiet time) takes w
		return
	case !turn && last.count.Load() < last.room:
		return
	}
	kept := make([]*bloomLayer, 0, len(layers)+1)
	total, taken := 0, int64(0)
	for _, l := range layers[:len(layers)-1] {
		if end := (l.window.Load() + 1) * int64(idemFilterPeriod); turn && end+int64(idemFilterPeriod) <= now && end <= min(before, prev) {
			continue // every record it holds expired a period ago or more, and before the clock's last turn and last write
		}
		kept = append(kept, l)
		total += len(l.bits) * 64
	}
	kept = append(kept, last)
	total += len(last.bits) * 64
	size, window := 2*len(last.bits)*64, lw
	if turn {
		for _, l := range kept {
			if l.window.Load() == lw {
				taken += l.count.Load()
			}
		}
		size, window = idemFilterMinBits, w
		for int64(size) < taken*idemFilterBitsPerKey {
			size *= 2
		}
		for total+size > f.maxBits && size > idemFilterMinBits {
			size /= 2
		}
	}
	if total+size <= f.maxBits {
		kept = append(kept, newBloomLayer(size, window))
	} else if turn {
		last.window.Store(w)
	}
	f.layers.Store(&kept)
}

// mayHold reports whether a record of the pair may be stored: false only
// when it certainly never was.
func (f *idemFilter) mayHold(tenant, id string) bool {
	if !f.ready.Load() {
		return true
	}
	sum := f.hash(tenant, id)
	a, b := uint32(sum), uint32(sum>>32)|1
layers:
	for _, l := range *f.layers.Load() {
		for i := range uint32(idemFilterProbes) {
			bit := (a + i*b) & l.mask
			if l.bits[bit/64].Load()&(1<<(bit%64)) == 0 {
				continue layers
			}
		}
		return true
	}
	return false
}

// fill adds the pairs of the records st holds at now, then marks the
// filter ready. It must begin after the filter takes the writes of every writer
// of records (it is made before any Handler of the workspace serves), so
// that a record committed after fill's snapshot was added by its writer.
// On an error (ctx ended: the workspace is closing) the filter stays
// unready: every lookup reads the store.
func (f *idemFilter) fill(ctx context.Context, st store.Store, now time.Time) error {
	// A record stored before expires within idempotencyTTL of now.
	expires := now.Add(idempotencyTTL)
	n := 0
	err := st.View(ctx, func(rd store.Reader) error {
		// Every record key starts with its tenant, a string part: step
		// from one tenant to the next with one seek each, and scan each
		// tenant's records of the collection.
		after := []byte(nil)
		for {
			var tenantKey []byte
			err := rd.Scan(store.ScanOptions{Prefix: []byte{0x02}, After: after, KeysOnly: true},
				func(key, _ []byte) error {
					tenantKey = append(tenantKey, key...)
					return store.ErrStop
				})
			if err != nil {
				return err
			}
			if tenantKey == nil {
				return nil
			}
			end := bytes.Index(tenantKey[1:], []byte{0x00, 0x01})
			if end < 0 {
				return errors.New("idempotency: a key without a terminated tenant")
			}
			tenantKey = tenantKey[:1+end+2]
			parts, err := store.DecodeKey(tenantKey)
			if err != nil || len(parts) != 1 {
				return errors.New("idempotency: a key without a tenant")
			}
			tenant, _ := parts[0].(string)
			prefix := store.Key(tenant, "r", idempotencyRecords.Name)
			err = rd.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(key, _ []byte) error {
				parts, err := store.DecodeKey(key[len(prefix):])
				if err != nil || len(parts) != 1 {
					return errors.New("idempotency: malformed record key")
				}
				id, _ := parts[0].(string)
				f.add(tenant, id, expires)
				if n++; n%1024 == 0 {
					return ctx.Err()
				}
				return nil
			})
			if err != nil {
				return err
			}
			// The next tenant's keys sort after every key of this one:
			// a part's tag is never 0xff.
			after = append(tenantKey, 0xff)
		}
	})
	if err != nil {
		return err
	}
	f.ready.Store(true)
	return nil
}

// idemShared is what the Handlers of one workspace share for its
// Idempotency-Keys: the claims on keys in flight (a second Handler's
// request under a claimed key is a conflict, as the first Handler's own)
// and the filter of stored keys (nil on a cluster node, whose store other
// servers write too).
type idemShared struct {
	claims idemClaims
	filter *idemFilter
}

// idemShares are the shares of the open workspaces, each dropped when its
// workspace is collected (a workspace opened again on the same directory
// is another workspace: its claims begin empty, as a restarted process's).
var idemShares struct {
	mu sync.Mutex
	m  map[weak.Pointer[bas.Workspace]]*idemShared
}

// idemSharedOf returns ws's share, made on first use, when the fill of
// its filter begins.
func idemSharedOf(ws *bas.Workspace) *idemShared {
	key := weak.Make(ws)
	idemShares.mu.Lock()
	defer idemShares.mu.Unlock()
	if sh := idemShares.m[key]; sh != nil {
		return sh
	}
	if idemShares.m == nil {
		idemShares.m = map[weak.Pointer[bas.Workspace]]*idemShared{}
	}
	sh := &idemShared{}
	idemShares.m[key] = sh
	runtime.AddCleanup(ws, func(key weak.Pointer[bas.Workspace]) {
		idemShares.mu.Lock()
		delete(idemShares.m, key)
		idemShares.mu.Unlock()
	}, key)
	if !ws.Engine().Clustered() {
		sh.filter = newIdemFilter()
		sh.filter.startFill(ws)
	}
	return sh
}

// startFill begins the fill of f from ws's store in the background; it
// ends when ws closes.
func (f *idemFilter) startFill(ws *bas.Workspace) {
	st, log, now := ws.Store(), ws.Logger(), ws.Clock().Now()
	ctx, cancel := untilDone(ws.Engine().Done())
	go func() {
		defer cancel()
		if err := f.fill(ctx, st, now); err != nil && ctx.Err() == nil {
			log.Warn("idempotency: the filter of stored keys could not be filled; every keyed request reads the store",
				"error", err.Error())
		}
	}()
}

// untilDone returns a context that ends when done closes (the fill ends
// when the workspace closes), or when cancel is called.
func untilDone(done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}
