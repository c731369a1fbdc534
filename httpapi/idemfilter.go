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
// swept or released only costs a read), and the filter has a fixed size
// (idemFilterBits): past a few million keys its false maybes grow, each
// costing one read, never a wrong answer.
//
// A filter belongs to the workspace, not to one Handler: every Handler of
// a workspace adds its writes to the same filter (idemSharedOf).
type idemFilter struct {
	seed  maphash.Seed
	bits  []atomic.Uint64
	ready atomic.Bool // the records stored before the filter are in it
}

// idemFilterBits is the filter's size: 2 MiB, about 16 bits per key at a
// million keys, where a key never stored reads the store about once in
// 400 (idemFilterProbes bits per key).
const (
	idemFilterBits   = 1 << 24
	idemFilterProbes = 4
)

func newIdemFilter() *idemFilter {
	return &idemFilter{seed: maphash.MakeSeed(), bits: make([]atomic.Uint64, idemFilterBits/64)}
}

// probes are the pair's bits: idemFilterProbes of them, from its 64-bit
// hash by double hashing.
func (f *idemFilter) probes(tenant, id string) (bits [idemFilterProbes]uint32) {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteString(tenant)
	h.WriteByte(0)
	h.WriteString(id)
	sum := h.Sum64()
	a, b := uint32(sum), uint32(sum>>32)|1
	for i := range bits {
		bits[i] = (a + uint32(i)*b) % idemFilterBits
	}
	return bits
}

// add adds the pair (before its record's write commits).
func (f *idemFilter) add(tenant, id string) {
	for _, bit := range f.probes(tenant, id) {
		f.bits[bit/64].Or(1 << (bit % 64))
	}
}

// mayHold reports whether a record of the pair may be stored: false only
// when it certainly never was.
func (f *idemFilter) mayHold(tenant, id string) bool {
	if !f.ready.Load() {
		return true
	}
	for _, bit := range f.probes(tenant, id) {
		if f.bits[bit/64].Load()&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
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
	st, done, log := ws.Store(), ws.Engine().Done(), ws.Logger()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the fill ends when the workspace closes
		select {
		case <-done:
		case <-ctx.Done():
		}
		cancel()
	}()
	go func() {
		defer cancel()
		if err := f.fill(ctx, st); err != nil && ctx.Err() == nil {
			log.Warn("idempotency: the filter of stored keys could not be filled; every keyed request reads the store",
				"error", err.Error())
		}
	}()
}
