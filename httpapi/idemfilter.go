package httpapi

import (
	"bytes"
	"context"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
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
// So a key whose record is committed or committing is never reported
// absent; a maybe reads the store. Pairs are never removed (a record
// swept or released only costs a read).
//
// The filter grows with the keys it takes: it is a list of layers, each
// twice the size of the one before (the first idemFilterBits), and a pair
// is added to the newest; when the newest has taken its share of pairs
// (one per idemFilterBitsPerKey bits), a new layer is added, and a lookup
// checks every layer. A layer is never removed, so a pair once added is
// found by every later lookup. The false maybes, each costing one read,
// stay under about 1 in 400 per layer; past idemFilterMaxBits in all no
// layer is added, and the newest takes more than its share: more reads,
// never a wrong answer.
//
// A filter belongs to the workspace, not to one Handler: every Handler of
// a workspace adds its writes to the same filter (idemSharedOf).
type idemFilter struct {
	seed    maphash.Seed
	layers  atomic.Pointer[[]*bloomLayer] // oldest first; pairs go to the last
	growing sync.Mutex                    // held to add a layer
	maxBits int                           // bounds the layers' bits together
	ready   atomic.Bool                   // the records stored before the filter are in it
}

// bloomLayer is one of a filter's Bloom filters.
type bloomLayer struct {
	bits []atomic.Uint64
	mask uint32 // the number of bits, a power of two, less one
	// room is the pairs the layer takes before the next is added; count
	// the pairs it took.
	room  int64
	count atomic.Int64
}

// idemFilterBits is the first layer's size: 2 MiB, which takes a million
// keys (16 bits per key), where a key never stored reads the store about
// once in 400 (idemFilterProbes bits per key). idemFilterMaxBits bounds
// the layers' sizes together: 62 MiB, five layers, 31 million keys.
const (
	idemFilterBits       = 1 << 24
	idemFilterMaxBits    = 1 << 29
	idemFilterBitsPerKey = 16
	idemFilterProbes     = 4
)

func newIdemFilter() *idemFilter { return newIdemFilterOf(idemFilterBits, idemFilterMaxBits) }

// newIdemFilterOf returns a filter whose first layer has bits bits (a power
// of two, at least 64) and whose layers have at most maxBits together.
func newIdemFilterOf(bits, maxBits int) *idemFilter {
	f := &idemFilter{seed: maphash.MakeSeed(), maxBits: maxBits}
	f.layers.Store(&[]*bloomLayer{newBloomLayer(bits)})
	return f
}

func newBloomLayer(bits int) *bloomLayer {
	return &bloomLayer{bits: make([]atomic.Uint64, bits/64), mask: uint32(bits - 1), room: int64(bits / idemFilterBitsPerKey)}
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

// add adds the pair (before its record's write commits).
func (f *idemFilter) add(tenant, id string) {
	f.addHash(f.hash(tenant, id))
}

func (f *idemFilter) addHash(sum uint64) {
	layers := *f.layers.Load()
	l := layers[len(layers)-1]
	a, b := uint32(sum), uint32(sum>>32)|1
	for i := range uint32(idemFilterProbes) {
		bit := (a + i*b) & l.mask
		l.bits[bit/64].Or(1 << (bit % 64))
	}
	if l.count.Add(1) == l.room {
		f.grow(l)
	}
}

// grow adds a layer after full, the newest, unless it would take the
// layers past f.maxBits.
func (f *idemFilter) grow(full *bloomLayer) {
	f.growing.Lock()
	defer f.growing.Unlock()
	layers := *f.layers.Load()
	if layers[len(layers)-1] != full {
		return
	}
	total := 0
	for _, l := range layers {
		total += len(l.bits) * 64
	}
	next := 2 * len(full.bits) * 64
	if total+next > f.maxBits {
		return
	}
	grown := append(layers[:len(layers):len(layers)], newBloomLayer(next))
	f.layers.Store(&grown)
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

// fill adds the pairs of the records st holds, then marks the filter
// ready. It must begin after the filter takes the writes of every writer
// of records (it is made before any Handler of the workspace serves), so
// that a record committed after fill's snapshot was added by its writer.
// On an error (ctx ended: the workspace is closing) the filter stays
// unready: every lookup reads the store.
func (f *idemFilter) fill(ctx context.Context, st store.Store) error {
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
				f.add(tenant, id)
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
	st, log := ws.Store(), ws.Logger()
	ctx, cancel := untilDone(ws.Engine().Done())
	go func() {
		defer cancel()
		if err := f.fill(ctx, st); err != nil && ctx.Err() == nil {
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
