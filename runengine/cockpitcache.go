package runengine

import (
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// countCache holds the cockpit counters of the tenants whose cockpit was
// read lately, so a cockpit reads no counter from the store: on a store of
// a million runs each read seeks through the memtables and every level of
// the tree. It is kept only when the engine is its store's only writer
// (not on a cluster, whose nodes each write their own shares).
//
// The store stays the truth. A tenant's counters are read from it once,
// by the committer at a moment when nothing is in flight (see load), and
// from then on every commit adds its counter increments once it is
// durable, and only when it succeeded (see landed). A commit that landed
// before the read is in it, one after adds its own: none is missed or
// counted twice. Memory grows with the tenants read lately, not with
// history: at most max tenants (the least recently read go first), and
// of each its counters by function and assignee and the days of the
// cockpit's window.
//
// Of the same tenants it holds the ids of the newest runs (see
// tenantCounts.recent), so the cockpit of a tenant with many runs reads
// its recent runs, and the run list its first page, with a scan between
// them: a reverse scan of all the run records starts an iterator over
// every table that holds some, hundreds at a million runs.
type countCache struct {
	mu      sync.Mutex
	tenants map[string]*tenantCounts // by the tenant's encoded key part (store.Key(tenant))
	byName  map[string]*tenantCounts // the same, by the tenant
	lru     list.List                // of *tenantCounts, the most recently read first
	max     int
	// held is len(tenants), read without mu: while no tenant is held a
	// commit's increments cost one atomic load.
	held atomic.Int32
}

// maxCountTenants bounds the tenants a countCache holds.
const maxCountTenants = 1024

// tenantCounts are one tenant's cockpit counters as of the commits that
// landed.
type tenantCounts struct {
	tenant string
	// cells are the counters by their key (counterKey's form).
	cells map[string]*countCell
	// from is the oldest day held of the daily counters (YYYY-MM-DD): the
	// ones before it are not held, and an increment of one is dropped.
	from string
	elem *list.Element
	// recent holds ids of the tenant's runs, ascending, at most recentHeld:
	// every run whose id is at least recent[0] is among them (or every run
	// of the tenant, unless cut). They are read at the load; an id is
	// added when a change writing a run's first record is applied, before
	// its commit, so one whose commit failed or has not landed may be
	// among them (a read finds no record).
	recent []string
	// after holds, for each of recent, a store version its run's record
	// was last written after (ScanOptions.Since): the version of its
	// record when read at the load, less one, or the version the commit
	// that wrote its first record read at; 0 when the store gives none.
	after []uint64
	// cut says the tenant may have runs older than recent[0].
	cut bool
}

// recentHeld bounds tenantCounts.recent: the first page of the run list
// (50 and one to tell whether there are more), the cockpit's ten, and room
// for runs whose commit has not landed.
const recentHeld = 64

// countCell is one counter: its name (inflight, waiting, overdue,
// tasks-open, approvals-pending, completed, minutes), the part after the
// name (function, assignee or day; "" for none) and its value.
type countCell struct {
	name, part string
	n          int64
}

// daily reports whether a counter of name is kept per day.
func daily(name string) bool { return name == "completed" || name == "minutes" }

func newCountCache(max int) *countCache {
	return &countCache{tenants: map[string]*tenantCounts{}, byName: map[string]*tenantCounts{}, max: max}
}

// landed adds the increments of a commit that is durable (sums, by
// counter key) to the counters of the tenants held. The committer calls
// it before it tells the commit's deltas, so a caller told of its change
// reads the cockpit with it.
func (k *countCache) landed(sums map[string]int64) {
	if k.held.Load() == 0 || len(sums) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, inc := range sums {
		if inc == 0 {
			continue
		}
		t := k.tenants[tenantPart(key)]
		if t == nil {
			continue
		}
		if c := t.cells[key]; c != nil {
			c.n += inc
			continue
		}
		name, part, ok := counterParts([]byte(key))
		if !ok || (daily(name) && part < t.from) {
			continue
		}
		t.cells[key] = &countCell{name: name, part: part, n: inc}
	}
}

// ran notes the first record of tenant's run id, applied in a commit that
// read the store at version after (0 when the store gives none): the
// committer calls it before the commit can land.
func (k *countCache) ran(tenant, id string, after uint64) {
	if k.held.Load() == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if t := k.byName[tenant]; t != nil {
		t.addRecent(id, after)
	}
}

// addRecent adds id, last written after the store version after, to
// t.recent, forgetting the oldest beyond recentHeld.
func (t *tenantCounts) addRecent(id string, after uint64) {
	i, found := slices.BinarySearch(t.recent, id)
	if found || (i == 0 && t.cut) {
		return // held, or older than the runs held, which may miss some older still
	}
	t.recent = slices.Insert(t.recent, i, id)
	t.after = slices.Insert(t.after, i, after)
	if len(t.recent) > recentHeld {
		t.recent = slices.Delete(t.recent, 0, 1)
		t.after = slices.Delete(t.after, 0, 1)
		t.cut = true
	}
}

// recentRange returns the oldest and newest ids of tenant's runs held, a
// store version each of their records was last written after (0 for
// none), and whether older runs than those may exist; cut is false also
// when the tenant is not held. Called inside a read of the store, the
// range is as of a moment after it began: every run the read sees whose
// id is at least oldest is among those held, so none is newer than newest.
func (k *countCache) recentRange(tenant string) (oldest, newest string, since uint64, cut bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t := k.byName[tenant]
	if t == nil || len(t.recent) == 0 {
		return "", "", 0, false
	}
	return t.recent[0], t.recent[len(t.recent)-1], slices.Min(t.after), t.cut
}

// tenantPart is the encoded first part (the tenant) of key, a counter
// key: up to the first string terminator (a 0x00 of the string is stored
// as 0x00 0xff), so no tenant's part is a prefix of another's.
func tenantPart(key string) string {
	i := strings.Index(key, "\x00\x01")
	if i < 0 {
		return ""
	}
	return key[:i+2]
}

// counterParts decodes a counter key: its name and the one part after it
// ("" for overdue and approvals-pending, which have none). ok is false for
// any other key, a node's share among them.
func counterParts(key []byte) (name, part string, ok bool) {
	parts, err := store.DecodeKey(key)
	if err != nil || len(parts) < 3 {
		return "", "", false
	}
	name, _ = parts[2].(string)
	if name == "overdue" || name == "approvals-pending" {
		return name, "", len(parts) == 3
	}
	if len(parts) != 4 {
		return "", "", false
	}
	part, ok = parts[3].(string)
	return name, part, ok
}

// cockpitNames are the counters a cockpit reads, in key order.
var cockpitNames = []string{"approvals-pending", "completed", "inflight", "minutes", "overdue", "tasks-open", "waiting"}

// loadCounts reads tenant's cockpit counters from r, the daily ones from
// the day from on, and the ids of its newest runs.
func loadCounts(r store.Reader, tenant, from string) (*tenantCounts, error) {
	t := &tenantCounts{tenant: tenant, cells: map[string]*countCell{}, from: from}
	for _, name := range cockpitNames {
		prefix := store.Key(tenant, "count", name)
		opts := store.ScanOptions{Prefix: prefix, Rewritten: true}
		if daily(name) {
			opts.After = store.AppendKey(store.Key(tenant, "count", name), dayBefore(from))
		}
		err := r.Scan(opts, func(key, val []byte) error {
			cell := key
			parts, err := store.DecodeKey(key)
			if err == nil && len(parts) == 5 && name != "tasks-open" {
				// A node's share, kept while the store was a cluster's:
				// the cockpit sums the shares of the counters it scans
				// (by function and by day) into their counter.
				cell = store.AppendKey(nil, parts[:4]...)
			}
			cname, part, ok := counterParts(cell)
			if !ok {
				return nil
			}
			n, err := counterValue(key, val)
			if err != nil {
				return err
			}
			if c := t.cells[string(cell)]; c != nil {
				c.n += n
			} else {
				t.cells[string(cell)] = &countCell{name: cname, part: part, n: n}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	next, err := runs.IDs(r, tenant, store.Page{Limit: recentHeld}, func(id string) error {
		t.recent = append(t.recent, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(t.recent)
	t.after = make([]uint64, len(t.recent))
	if vr, ok := r.(store.VersionReader); ok {
		for i, id := range t.recent {
			v, err := vr.KeyVersion(runs.RecordKey(tenant, id))
			if err != nil {
				return nil, err
			}
			t.after[i] = max(v, 1) - 1
		}
	}
	t.cut = next != ""
	return t, nil
}

// dayBefore is the day before day (YYYY-MM-DD), to scan from day on.
func dayBefore(day string) string {
	d, err := time.Parse("2006-01-02", day)
	if err != nil {
		return day
	}
	return d.Add(-24 * time.Hour).Format("2006-01-02")
}

// counts returns tenant's counters (held, or read once nothing is in
// flight) for a cockpit whose window starts at day from, and calls fill
// with them under the cache's lock. It fails with errClosed once the
// engine's committer is closed.
func (e *Engine) counts(ctx context.Context, tenant, from string, fill func(*tenantCounts)) error {
	k := e.countCache
	key := string(store.Key(tenant))
	for range 2 {
		k.mu.Lock()
		if t := k.tenants[key]; t != nil {
			if from >= t.from {
				k.lru.MoveToFront(t.elem)
				t.prune(from)
				fill(t)
				k.mu.Unlock()
				return nil
			}
			// The window starts before the days held (the clock went
			// back): read them again.
			k.drop(t)
		}
		k.mu.Unlock()
		err := e.commits.commitWait(ctx, &delta{settled: func() error {
			var t *tenantCounts
			err := e.st.View(context.Background(), func(r store.Reader) error {
				var err error
				t, err = loadCounts(r, tenant, from)
				return err
			})
			if err != nil {
				return err
			}
			k.mu.Lock()
			if k.tenants[key] == nil {
				k.add(key, t)
			}
			k.mu.Unlock()
			return nil
		}})
		if err != nil {
			return err
		}
	}
	return errCountsMoved
}

// errCountsMoved is when a tenant's counters read for a cockpit were gone
// again (evicted by other tenants' reads) before it could use them: the
// cockpit then reads the store.
var errCountsMoved = errors.New("runengine: the tenant's counters were forgotten as they were read")

// add holds t under key, forgetting the least recently read tenant beyond
// k.max. k.mu is held.
func (k *countCache) add(key string, t *tenantCounts) {
	k.tenants[key] = t
	k.byName[t.tenant] = t
	t.elem = k.lru.PushFront(t)
	for len(k.tenants) > k.max {
		k.drop(k.lru.Back().Value.(*tenantCounts))
	}
	k.held.Store(int32(len(k.tenants)))
}

// drop forgets t. k.mu is held.
func (k *countCache) drop(t *tenantCounts) {
	k.lru.Remove(t.elem)
	delete(k.tenants, string(store.Key(t.tenant)))
	delete(k.byName, t.tenant)
	k.held.Store(int32(len(k.tenants)))
}

// prune forgets the daily counters before from, the oldest day of the
// cockpit's window, and holds none before it from then on.
func (t *tenantCounts) prune(from string) {
	if from <= t.from {
		return
	}
	t.from = from
	for key, c := range t.cells {
		if daily(c.name) && c.part < from {
			delete(t.cells, key)
		}
	}
}
