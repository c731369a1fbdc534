package runengine

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
)

// defCacheMax bounds the definitions a defCache keeps.
const defCacheMax = 4096

// defCache keeps the current definitions Start loaded, so that a start of a
// known process opens no read of the store (with Badger a read waits for
// the commits in flight, another tenant's among them). It serves one node
// only: on a cluster another node changes definitions without this node's
// hooks, and the engine has no cache.
//
// Every change of a definition runs the engine's change hook (changed) in
// its transaction, before the commit, perhaps several times (retries), and
// perhaps for a transaction that then fails. changed drops the entry, moves
// the generation, and marks the definition pending with the digest of the
// JSON the change writes (32 bytes a definition, however large it is and
// however long it stays unstarted). A fill (after a miss, the read of the definition) is kept only
//   - when the generation did not move since before its read: no change's
//     hook ran meanwhile, so what it read is not older than any change
//     whose hook ran before it began and that committed before it read; and
//   - when the definition is pending, only if what it read is what the
//     pending change writes: the change committed (the pending mark is then
//     cleared), or the stored definition already is what it will be.
//
// A change whose hook ran before a fill and that commits after it would
// break this; it cannot happen: each change of a definition reads it in
// its transaction first (create writes a new id nobody reads before its
// commit), so of two changes in flight on one definition the store commits
// one, and the other runs again (and its hook with it) or fails. A pending
// mark left by a transaction that failed costs reads of that definition
// until its next change, never a stale entry.
type defCache struct {
	mu      sync.Mutex
	limit   int
	gen     uint64                   // moved by every change's hook
	entries map[defKey]*list.Element // of lru; Value is *defEntry
	lru     list.List                // most recently used first
	pending map[defKey]defDigest     // changes no fill has seen committed: the digest of what each writes
}

// defDigest is the SHA-256 of a definition's JSON; the zero digest is no
// definition's (a change whose definition does not encode marks it so, and
// no read matches it).
type defDigest [sha256.Size]byte

// digestDef returns the digest of def's JSON, streamed into the hash, and
// whether def encodes.
func digestDef(def *process.Definition) (defDigest, bool) {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(def); err != nil {
		return defDigest{}, false
	}
	var d defDigest
	h.Sum(d[:0])
	return d, true
}

type defKey struct{ tenant, id string }

type defEntry struct {
	key defKey
	def *process.Definition
}

func newDefCache(limit int) *defCache {
	return &defCache{limit: limit, entries: map[defKey]*list.Element{}, pending: map[defKey]defDigest{}}
}

// get returns the cached definition of the tenant's process id, if any.
func (c *defCache) get(tenant, id string) (*process.Definition, bool) {
	k := defKey{tenant, id}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*defEntry).def, true
}

// generation returns the generation a fill must see unmoved: read it before
// the read of the definition.
func (c *defCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// fill keeps def, read after generation returned gen, unless a change may
// have made it stale (see defCache).
func (c *defCache) fill(tenant, id string, gen uint64, def *process.Definition) {
	if def.ID != id {
		return
	}
	k := defKey{tenant, id}
	var got defDigest
	c.mu.Lock()
	pending, isPending := c.pending[k]
	c.mu.Unlock()
	if isPending {
		var ok bool
		if got, ok = digestDef(def); !ok {
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if p, ok := c.pending[k]; ok {
		if !isPending || p != pending || p != got {
			return
		}
		delete(c.pending, k)
	}
	if el, ok := c.entries[k]; ok {
		el.Value.(*defEntry).def = def
		c.lru.MoveToFront(el)
		return
	}
	c.entries[k] = c.lru.PushFront(&defEntry{key: k, def: def})
	for c.lru.Len() > c.limit {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*defEntry).key)
	}
}

// changed is the process change hook: def is what the transaction writes.
// It has an effect outside the transaction, a harmless one: a change that
// does not commit only costs reads.
func (c *defCache) changed(_ store.Txn, tenant string, _, def *process.Definition) error {
	k := defKey{tenant, def.ID}
	d, _ := digestDef(def) // the zero digest when def does not encode: it matches no read, and the definition is read until its next change
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.pending[k] = d
	if el, ok := c.entries[k]; ok {
		c.lru.Remove(el)
		delete(c.entries, k)
	}
	return nil
}

// size returns the number of cached definitions.
func (c *defCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// loadDef returns the current definition of the tenant's process id: the
// cached one when there is one, else the one the store holds (kept for the
// next start when no change raced the read).
func (e *Engine) loadDef(ctx context.Context, tenant, id string) (*process.Definition, error) {
	c := e.defs
	var gen uint64
	if c != nil {
		if def, ok := c.get(tenant, id); ok {
			return def, nil
		}
		gen = c.generation()
	}
	var def *process.Definition
	if err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		def, err = e.cfg.Processes.Load(r, tenant, id)
		return err
	}); err != nil {
		return nil, err
	}
	if c != nil {
		c.fill(tenant, id, gen, def)
	}
	return def, nil
}
