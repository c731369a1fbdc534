package automation

import (
	"sync"
	"time"
)

// levelCache keeps the stored levels the gate read, when the workspace is
// its store's only writer (gateMemo), so that a decision of a new item
// reads nothing from the store: a read waits for the commits in flight
// (Badger's read timestamp), which under load made the decision, and with
// it the start of a run that waits for the decision to join its first
// commit, last a commit's sync longer.
//
// Every write of levels in this process is bracketed by writing and the
// function it returns, called once the write's transaction ended
// (committed or not). While any write is open the cache is not used, and
// a read stores what it read only when no write began or ended since the
// read began (gen), so a cached level is never older than the last
// committed write. A write inside another service's transaction
// (ApplyChangeTx) ends when that transaction ends (foureyes.AfterDecided);
// one whose end cannot be known leaves the cache unused for good.
type levelCache struct {
	mu sync.Mutex
	// gen counts the beginnings and ends of writes.
	gen uint64
	// writers is the number of writes begun and not ended.
	writers int
	lv      map[levelKey]storedLevels
	// max bounds lv: when full it is emptied.
	max int
}

// storedLevels is the level in force of a process, resolved from the
// stored levels (the workspace's and the process's own), until the first
// end of an exception of either (zero: none has one): from then on the
// stored levels are read again (lapsing it writes them).
type storedLevels struct {
	e     effective
	until time.Time
}

// newStoredLevels resolves the stored levels ws and proc (nil when never
// written) of processID at now. None has an exception that ended at now.
func newStoredLevels(ws, proc *Level, processID string, now time.Time) storedLevels {
	l := storedLevels{e: resolveLevels(ws, proc, processID, now)}
	for _, lv := range [2]*Level{ws, proc} {
		if lv != nil && lv.Exception != nil && (l.until.IsZero() || lv.Exception.Until.Before(l.until)) {
			l.until = lv.Exception.Until
		}
	}
	return l
}

// at returns the level in force at now, unless an exception ended by then.
func (l storedLevels) at(now time.Time) (effective, bool) {
	if !l.until.IsZero() && !now.Before(l.until) {
		return effective{}, false
	}
	return l.e, true
}

func newLevelCache() *levelCache {
	return &levelCache{lv: map[levelKey]storedLevels{}, max: maxMemoCounts}
}

// writing marks a write of levels begun and returns the function that
// marks it ended (it acts once). A nil c (no cache) returns a no-op.
func (c *levelCache) writing() (end func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	c.writers++
	c.gen++
	clear(c.lv)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.writers--
			c.gen++
			clear(c.lv)
			c.mu.Unlock()
		})
	}
}

// levelWrite is a write of levels that begins only when its transaction
// first writes levels (begin, called before each such write, also across
// retries of the transaction) and ends with done, once the transaction
// ended; a transaction that writes no levels leaves the cache as it was.
// A zero c (no cache) makes both no-ops. One goroutine uses it.
type levelWrite struct {
	c   *levelCache
	end func()
}

// begin marks the write begun, once.
func (w *levelWrite) begin() {
	if w.end == nil {
		w.end = w.c.writing()
	}
}

// done marks the write ended if it began.
func (w *levelWrite) done() {
	if w.end != nil {
		w.end()
	}
}

// get returns the cached levels of k, unless a write is open.
func (c *levelCache) get(k levelKey) (storedLevels, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writers > 0 {
		return storedLevels{}, false
	}
	l, ok := c.lv[k]
	return l, ok
}

// reading returns the generation a read beginning now is stored under
// (see put).
func (c *levelCache) reading() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches l, read by a read that began at generation gen, unless a
// write began or ended since or is open.
func (c *levelCache) put(gen uint64, k levelKey, l storedLevels) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.writers > 0 {
		return
	}
	if len(c.lv) >= c.max {
		clear(c.lv)
	}
	c.lv[k] = l
}
