package runengine

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// delta is one unit of change produced by a worker (or another engine
// goroutine): writes applied inside the batch transaction, counter
// increments, and what to do once the batch is durable.
type delta struct {
	apply    func(tx store.Txn) error
	counters []counterInc
	// reads says apply reads keys: such a delta is committed by a
	// transaction of its own view of every earlier commit, never
	// pipelined.
	reads bool
	// after runs once the batch holding the delta committed (err nil) or
	// failed. It must not block.
	after func(err error)
	// tenant, when set, is whose change it is, for the fair share of
	// commits (see commitShare).
	tenant string
	// size estimates the bytes apply writes (as sizedTxn counts them; 0
	// for a small change): the committer starts the next transaction
	// before a change that would not fit beside the open batch (see
	// committer.fit).
	size int
	// settled, when set, is the whole delta: it runs in the committer once
	// every delta before it is durable and none is in flight, and its
	// error is told to after. It writes nothing (see Engine.counts).
	settled func() error
	// fence, when set (several nodes share the store), is the shard lease
	// the delta acts under: its batch checks it in the transaction, and a
	// lease no longer held refuses the delta.
	fence *lease.Lease
	// caller says a caller waits for the delta's commit (see callerHold).
	caller bool
	// goesOn says the delta's run goes on after it: a call or gate
	// decision of the run is in flight (or goes out once the delta is
	// durable), so the run's next change comes when that returns (see
	// anticipation).
	goesOn bool
}

// counterInc adds n to the counter at key (a delta may hold several of
// one key: they add up).
type counterInc struct {
	key string
	n   int64
}

// committer is the group-commit pipeline: one goroutine drains every
// pending delta into one read-write transaction and commits it durably, so
// under load one sync carries many transitions, and idle a single change
// pays one sync.
//
// When the store is a store.Pipeliner, commits overlap: the next
// transaction is filled while the ones before it sync, and when it is
// full (maxBatch changes, or no room beside them) it commits at once, up
// to maxFlights commits in flight; otherwise it commits the moment
// nothing is in flight. Transactions are opened ahead by an opener
// goroutine (a Badger transaction opened after a commit began waits for
// that commit), so filling one never waits for a sync. Commits become
// durable in the order they began, and their deltas are told in that
// order. While several tenants are active, a quiet tenant's change may
// commit alone, and the others' batch may wait a moment for it (see
// commitShare.quiet and anticipation); such a lone commit is told after
// the commits before it that carry its tenant's changes, and a commit after
// it with its tenant's changes after it (see tenantTold), so each tenant's
// deltas are told in the order they were committed; a batch that carries a
// quiet tenant's change tells it first, and the others' once the next
// commit launched (see tellLightFirst). Counters are kept in memory (the
// committer is their only writer), so a batch reads nothing. Deltas that read commit in a
// transaction of their own once nothing is in flight.
type committer struct {
	st       store.Store
	pipe     store.Pipeliner
	maxBatch int

	mu      sync.Mutex
	q       []*delta
	closed  bool
	signal  chan struct{}
	stopped chan struct{}

	// The committer goroutine's own state.
	counters  map[string]int64   // committed-or-in-flight counter values (see forgetCounters)
	opener    *opener            // transactions opened ahead (nil until the first is needed)
	open      store.PipelinedTxn // the transaction being filled (nil until needed)
	openBatch []*delta           // the deltas applied to open
	openSince time.Time          // when the first of them was applied
	openBytes int                // the bytes they wrote (see sizedTxn)
	sized     sizedTxn           // open, counting into openBytes
	// countersLost says a commit failed after its counter increments were
	// added to counters (keepCounters): they count changes that never
	// landed, and are read again before the next counter write (see
	// writeCounters). Set by the commits' callbacks.
	countersLost atomic.Bool
	// maxCounters bounds counters (maxKnownCounters; tests set less).
	maxCounters int
	// fit is the smallest size of a batch the store refused (0 until it
	// refused one): a batch stops short of it.
	fit      int
	flights  int            // pipelined commits not yet durable
	landed   chan struct{}  // one token per commit that became durable
	lastTold chan struct{}  // closed once the latest commit's deltas were told
	alone    sync.WaitGroup // quiet tenants' commits not yet durable (see commitAlone)
	told     tenantTold     // per tenant, its latest commit not yet told

	// batches, deltas and busy measure what was committed (Stats).
	stats           sync.Mutex
	batches, deltas uint64
	busy            time.Duration

	observe Observer // nil when none
	fp      Failpoints

	// nextLaunch, when set, is closed as the committer launches its next
	// commit (or settles): the others' changes of a commit that carried a
	// light tenant's are told then (see launch). The committer
	// goroutine's own.
	nextLaunch chan struct{}
	// othersMax, when set, replaces aheadMax as the longest the others'
	// changes wait (tests).
	othersMax time.Duration

	share commitShare  // the tenants' fair share of commits
	ahead anticipation // a quiet tenant's next change, awaited (see awaitQuiet)
	hold  callerHold   // the callers the last commit answered, awaited
	// clock times the wait for a quiet tenant's next change: nil, the
	// real clock, as a wait of well under a millisecond is no business
	// time (tests set a fake one before the first submit).
	clock clock.Clock
	// shared, when set, is told each tenant of a commit while more than
	// one tenant is active (the start gate's view of who is). Set it
	// before the first submit.
	shared func(tenant string)

	// counted, when set, is told the counter increments of each commit
	// that landed, before its deltas are told (see countCache.landed).
	// Set it before the first submit.
	counted func(sums map[string]int64)

	// cl is set when several nodes share the store: deltas' fences are
	// checked and nothing is pipelined.
	cl *cluster
	// node is appended to every counter key when several nodes share the
	// store (the encoded node id): each node keeps its own share of a
	// counter, so no two nodes' commits write the same key, and readers
	// sum the shares (sumCounter). Empty on a single node.
	node string
}

func newCommitter(st store.Store, maxBatch int, obs Observer, fp Failpoints, cl *cluster) *committer {
	c := &committer{st: st, maxBatch: maxBatch, observe: obs, fp: fp, signal: make(chan struct{}, 1), stopped: make(chan struct{}),
		counters: map[string]int64{}, maxCounters: maxKnownCounters, landed: make(chan struct{}, maxFlights), cl: cl}
	if cl == nil {
		c.pipe, _ = st.(store.Pipeliner)
	} else {
		c.node = string(store.Key(cl.cfg.NodeID))
	}
	go c.loop()
	return c
}

// submit queues d; it never blocks. After close, d fails at once.
func (c *committer) submit(d *delta) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		if d.after != nil {
			d.after(errClosed)
		}
		return
	}
	c.q = append(c.q, d)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// commitWait submits a delta and waits until its batch is durable.
func (c *committer) commitWait(ctx context.Context, d *delta) error {
	done := make(chan error, 1)
	d.after = func(err error) { done <- err }
	c.submit(d)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errors.WithStack(ctx.Err())
	}
}

// close commits what is queued and stops the loop.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	<-c.stopped
}

// launchNow reports whether the open batch is to be launched now (added
// of its changes came in this round): once it is full while fewer than
// maxFlights commits are in flight, and with none in flight unless it
// awaits a quiet tenant's next change (awaitQuiet) or, with one tenant
// active, the callers the last commit answered (callerHold). At close it
// awaits nothing.
func (c *committer) launchNow(closed bool, added int) bool {
	if len(c.openBatch) == 0 {
		return false
	}
	full := c.flights < maxFlights && len(c.openBatch) >= c.maxBatch
	switch {
	case c.flights > 0:
		return full
	case closed:
		return true
	case c.awaitQuiet():
		return full
	case c.share.several():
		return true
	}
	return !c.hold.wait(c.openBatch, added) || full
}

func (c *committer) loop() {
	defer close(c.stopped)
	for {
		select {
		case <-c.signal:
		case <-c.landed:
			c.flights--
		case <-c.ahead.timerC():
			c.ahead.timer = nil
		case <-c.hold.timerC():
			c.hold.fired()
		}
		for {
			c.countLanded()
			c.forgetCounters()
			c.mu.Lock()
			batch := take(&c.q, c.maxBatch-len(c.openBatch))
			closed, more := c.closed, len(c.q) > 0
			c.mu.Unlock()
			c.add(batch)
			c.reuseQueue(batch)
			if c.launchNow(closed, len(batch)) {
				c.launch()
			}
			full := len(c.openBatch) >= c.maxBatch
			if closed {
				if !more && len(batch) == 0 {
					c.ahead.stop()
					c.settle()
					if c.open != nil {
						c.open.Discard()
						c.open = nil
					}
					if c.opener != nil {
						c.opener.stop()
					}
					return
				}
				if full {
					c.landOne()
				}
				continue
			}
			if !more || full {
				break
			}
		}
	}
}

// reuseQueue gives the array of batch, which add is done with (it keeps
// deltas, never the slice), back to the queue when nothing was queued
// since, so the queue does not grow from nothing again at each batch.
func (c *committer) reuseQueue(batch []*delta) {
	if cap(batch) == 0 {
		return
	}
	clear(batch)
	c.mu.Lock()
	if c.q == nil {
		c.q = batch[:0]
	}
	c.mu.Unlock()
}

// maxFlights bounds the pipelined commits in flight at once: while the
// store syncs (or stalls on a compaction) full batches queue behind each
// other and land together, instead of one waiting for the one before.
const maxFlights = 4

// countLanded takes the tokens of the commits that landed meanwhile.
func (c *committer) countLanded() {
	for {
		select {
		case <-c.landed:
			c.flights--
		default:
			return
		}
	}
}

// add applies batch to the open transaction, or commits the deltas that
// read (and any batch the open transaction cannot take) the synchronous way,
// after everything before them.
func (c *committer) add(batch []*delta) { c.addAs(batch, false) }

// addAs is add; free adds batch's deltas as changes of no tenant: none is
// held back for the tenants' fair share nor commits alone, and none counts
// as its tenant's activity (see addAll).
func (c *committer) addAs(batch []*delta, free bool) {
	for i := 0; i < len(batch); i++ {
		d := batch[i]
		if !free && d.tenant != "" && c.ahead.on.Load() && c.ahead.came(d.tenant, c.now()) {
			c.ahead.stop()
		}
		if d.settled != nil {
			c.settle()
			err := d.settled()
			if d.after != nil {
				d.after(err)
			}
			continue
		}
		if c.pipe == nil || d.reads {
			j := i + 1
			for j < len(batch) && (c.pipe == nil || batch[j].reads) && batch[j].settled == nil {
				j++
			}
			c.settle()
			c.commitSync(batch[i:j])
			i = j - 1
			continue
		}
		if !free && c.flights > 0 && c.share.quiet(d) && c.commitAlone(d) {
			continue
		}
		if !free && c.share.hold(d) {
			continue
		}
		if c.fit > 0 && len(c.openBatch) > 0 && c.openBytes+d.size >= c.fit {
			// d would not fit beside the open batch: commit that first.
			c.launchFull()
		}
		if c.open == nil {
			if c.opener == nil {
				c.opener = startOpener(c.pipe) // at the first change, as an engine never used holds no transaction
			}
			tx := c.opener.take()
			if tx == nil {
				c.settle()
				c.commitSync([]*delta{d})
				continue
			}
			c.open = tx
		}
		if len(c.openBatch) == 0 {
			c.openSince = time.Now()
		}
		c.sized = sizedTxn{Txn: c.open, n: &c.openBytes}
		if err := d.apply(&c.sized); err != nil {
			held, refused := c.openBatch, c.openBytes
			c.open.Discard()
			c.open, c.openBatch, c.openBytes = nil, nil, 0
			if len(held) > 0 && errors.Is(err, errs.TooLarge) {
				// d does not fit beside the open batch (a full batch of
				// big changes): commit that batch as it was, which fit,
				// and start the next transaction with d. Later batches
				// stop short of this size.
				if c.fit == 0 || refused < c.fit {
					c.fit = refused
				}
				c.add(held)
				if len(c.openBatch) > 0 {
					c.launchFull()
				}
				i--
				continue
			}
			// The transaction holds part of d: drop it and commit its
			// deltas the synchronous way, which sets a failing one apart.
			c.landAll()
			c.commitSync(append(held, d))
			continue
		}
		c.openBatch = append(c.openBatch, d)
	}
}

// sizedTxn counts what is written through it, as a store holds a
// transaction's writes: keys, values and a few bytes of each entry's own.
type sizedTxn struct {
	store.Txn
	n *int
}

// entryBytes is what a write adds to a transaction beside its key and
// value (Badger: a version, metadata, a value pointer's room).
const entryBytes = 12

// Set counts the write, then makes it.
func (t *sizedTxn) Set(key, value []byte) error {
	*t.n += len(key) + len(value) + entryBytes
	return t.Txn.Set(key, value)
}

// SetKept counts the write, then makes it (see store.ValueKeeper).
func (t *sizedTxn) SetKept(key, value []byte) error {
	*t.n += len(key) + len(value) + entryBytes
	return store.SetKept(t.Txn, key, value)
}

// Delete counts the write, then makes it.
func (t *sizedTxn) Delete(key []byte) error {
	*t.n += len(key) + entryBytes
	return t.Txn.Delete(key)
}

// launchFull commits the open batch, which takes no more changes, once
// fewer than maxFlights commits are in flight.
func (c *committer) launchFull() {
	c.countLanded()
	if c.flights >= maxFlights {
		c.landOne()
	}
	c.launch()
}

// addAll applies batch to the open transaction, holding nothing back. It
// leaves the deltas as they are: one may be told before add returns (it
// failed, and was committed the synchronous way), and a delta told may be
// reused at once (a run's commit value is, see releaseRunCommit).
func (c *committer) addAll(batch []*delta) {
	for _, d := range batch {
		c.addAs([]*delta{d}, true)
	}
}

// launch commits the open transaction (fewer than maxFlights being in
// flight); its deltas are told once it is durable, after those of every
// commit launched before it.
func (c *committer) launch() {
	tx, batch, began := c.open, c.openBatch, c.openSince
	c.open, c.openBatch, c.openBytes = nil, nil, 0
	c.hold.launched(batch)
	sums := sumCounters(batch)
	if err := c.writeCounters(tx, sums, false); err != nil {
		tx.Discard()
		c.landAll()
		c.commitSync(batch)
		if held := c.share.launched(); held != nil {
			c.add(held)
		}
		return
	}
	if err := c.fp.inGroupCommit(len(batch)); err != nil {
		tx.Discard()
		c.landAll()
		c.record(len(batch), time.Since(began), err)
		for _, d := range batch {
			if d.after != nil {
				d.after(err)
			}
		}
		if held := c.share.launched(); held != nil {
			c.add(held)
		}
		return
	}
	if c.shared != nil && c.share.several() {
		for t := range c.share.inOpen {
			c.shared(t)
		}
	}
	c.keepCounters(sums)
	c.flights++
	light := c.share.light()
	sure := light != "" && goesOn(batch, light)
	var next chan struct{} // closed at the next launch: the others are told then
	wait := aheadMax
	if light != "" && mixed(batch, light) && !c.ahead.slow(sure) {
		next = make(chan struct{})
		if c.othersMax > 0 {
			wait = c.othersMax
		}
	}
	prev, told := c.lastTold, make(chan struct{})
	c.lastTold = told
	// The lone commits of its tenants launched before it (see
	// commitAlone) are not on the chain of prev.
	tenants, lone := c.told.batch(c.share.inOpen, told)
	launched := time.Now()
	tx.CommitAsync(func(err error) {
		if prev != nil {
			<-prev // the commits before this one were told first
		}
		for _, ch := range lone {
			<-ch
		}
		c.record(len(batch), time.Since(began), err)
		c.hold.flight.Store(int64(time.Since(launched)))
		if err != nil {
			c.countersLost.Store(true)
		}
		if light != "" && err == nil {
			c.ahead.landed(light, c.now(), sure)
		}
		if err == nil && c.counted != nil {
			c.counted(sums)
		}
		c.landed <- struct{}{}
		if next != nil && err == nil {
			tellLightFirst(batch, light, next, wait)
		} else {
			for _, d := range batch {
				if d.after != nil {
					d.after(err)
				}
			}
		}
		for _, t := range tenants {
			c.told.forget(t, told)
		}
		close(told)
	})
	c.launched(next)
	if held := c.share.launched(); held != nil {
		c.add(held)
	}
}

// mixed reports whether batch holds a change of a tenant other than light.
func mixed(batch []*delta, light string) bool {
	for _, d := range batch {
		if d.tenant != light {
			return true
		}
	}
	return false
}

// tellLightFirst tells a landed batch's changes of its light tenant (see
// commitShare.light), then, once next is closed (the committer launched
// its next commit) or after wait (aheadMax), the others'. A quiet tenant's
// caller usually sends its next change at once (its run's next step, its
// next run), and on a busy processor what runs first is what was woken
// last: told after the others, as in the batch's order, its goroutine
// runs first, but the goroutines of the others' callers, woken just
// before, are queued ahead of the store's writer when the quiet tenant's
// next commit starts (Badger wakes its writer, then starts the goroutine
// that tells the commit's end, which moves the writer behind every
// goroutine queued), and that commit waits for their work before it is
// written (with the store on tmpfs and 64 starters flooding, the quiet
// tenant's start took 65 µs from its launch to its landing, median,
// against 9 alone; told this way, 30). Told after
// that commit started, they are queued behind the writer. Told first,
// they would run before the quiet tenant's caller, whose next change
// would then come after theirs and commit behind them. Each tenant's
// changes are still told in the order they were committed, and the batch
// is told as a whole before any later commit's changes are. Nor does a
// batch wait for the next launch while the light tenant's next change is
// not awaited (anticipation.slow: it lately came late): the others' would
// wait for it, and the flood behind them, for nothing.
func tellLightFirst(batch []*delta, light string, next chan struct{}, wait time.Duration) {
	// A delta told may be reused at once (a run's commit is, see
	// releaseRunCommit): the others' are picked before any is told.
	var others []func(error)
	for _, d := range batch {
		if d.tenant != light && d.after != nil {
			others = append(others, d.after)
		}
	}
	for _, d := range batch {
		if d.tenant == light && d.after != nil {
			d.after(nil)
		}
	}
	t := time.NewTimer(wait)
	select {
	case <-next:
	case <-t.C:
	}
	t.Stop()
	for _, after := range others {
		after(nil)
	}
}

// launched closes the channel of the commit launched before, whose
// others' changes wait for this launch to be told (see tellLightFirst),
// and keeps next, this commit's (nil when none waits). It is called once
// the commit started, so the goroutines those changes wake are queued
// behind the store's writer.
func (c *committer) launched(next chan struct{}) {
	if c.nextLaunch != nil {
		close(c.nextLaunch)
	}
	c.nextLaunch = next
}

// goesOn reports whether a change of tenant in batch leaves its run going
// on (see delta.goesOn).
func goesOn(batch []*delta, tenant string) bool {
	for _, d := range batch {
		if d.goesOn && d.tenant == tenant {
			return true
		}
	}
	return false
}

// commitAlone commits d in a transaction of its own, started at once while
// commits are in flight (see commitShare.quiet), and reports whether
// it did; false leaves d to the open transaction. d is told once its
// tenant's changes in the commits launched before it were told, not
// waiting for the others' (see tenantTold).
func (c *committer) commitAlone(d *delta) bool {
	if c.opener == nil {
		return false
	}
	var tx store.PipelinedTxn
	select {
	case tx = <-c.opener.ready: // opened before the commits in flight
	default:
		return false
	}
	began := time.Now()
	sums := sumCounters([]*delta{d})
	if err := d.apply(tx); err != nil {
		tx.Discard()
		return false
	}
	if err := c.writeCounters(tx, sums, false); err != nil {
		tx.Discard()
		return false
	}
	if err := c.fp.inGroupCommit(1); err != nil {
		tx.Discard()
		c.record(1, time.Since(began), err)
		if d.after != nil {
			d.after(err)
		}
		return true
	}
	c.keepCounters(sums)
	if c.shared != nil {
		c.shared(d.tenant)
	}
	c.alone.Add(1)
	c.ahead.flying.Add(1)
	told := make(chan struct{})
	// d may be reused once told (a run's commit is): keep what the
	// callback needs after telling it.
	tenant, after, sure := d.tenant, d.after, d.goesOn
	earlier := c.told.alone(tenant, told)
	tx.CommitAsync(func(err error) {
		c.record(1, time.Since(began), err)
		if err != nil {
			c.countersLost.Store(true)
		}
		if earlier != nil {
			<-earlier // its tenant's changes in commits launched before were told first
		}
		if err == nil {
			c.ahead.landed(tenant, c.now(), sure)
			if c.counted != nil {
				c.counted(sums)
			}
		}
		c.ahead.flying.Add(-1)
		select {
		case c.signal <- struct{}{}:
		default:
		}
		if after != nil {
			after(err)
		}
		c.told.forget(tenant, told)
		close(told)
		c.alone.Done()
	})
	c.launched(nil)
	return true
}

// tenantTold is, per tenant, the latest commit in flight that carries its
// changes, until that commit is told. Commits launched with the open
// transaction are told in the order they were launched (each waits for the
// one before), but a lone commit (commitAlone) is on no such chain: it
// waits for its tenant's latest commit to be told, and a commit launched
// after it with its tenant's changes waits for it. So each tenant's changes
// are told in the order they were committed, and a quiet tenant's lone
// commit never waits for commits that carry only others' changes. An entry
// goes once its commit is told: the map holds the tenants of the commits
// in flight.
type tenantTold struct {
	mu   sync.Mutex
	last map[string]toldMark
}

type toldMark struct {
	told chan struct{} // closed once the commit was told
	lone bool          // a lone commit's
}

// batch records told as the latest commit of the open transaction's
// tenants, and returns them and the channels of their lone commits still
// in flight, which the commit must wait for.
func (r *tenantTold) batch(inOpen map[string]int, told chan struct{}) (tenants []string, lone []chan struct{}) {
	if len(inOpen) == 0 {
		return nil, nil
	}
	tenants = make([]string, 0, len(inOpen))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]toldMark{}
	}
	for t := range inOpen {
		tenants = append(tenants, t)
		if m, ok := r.last[t]; ok && m.lone {
			lone = append(lone, m.told)
		}
		r.last[t] = toldMark{told: told}
	}
	return tenants, lone
}

// alone records told as the latest commit of tenant, a lone one, and
// returns the channel of its commit before still in flight, if any.
func (r *tenantTold) alone(tenant string, told chan struct{}) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]toldMark{}
	}
	m := r.last[tenant]
	r.last[tenant] = toldMark{told: told, lone: true}
	return m.told
}

// forget drops tenant's entry if it is still told's, as told is told.
func (r *tenantTold) forget(tenant string, told chan struct{}) {
	r.mu.Lock()
	if r.last[tenant].told == told {
		delete(r.last, tenant)
	}
	r.mu.Unlock()
}

// landOne waits until one commit in flight, if any, is durable.
func (c *committer) landOne() {
	if c.flights > 0 {
		<-c.landed
		c.flights--
	}
}

// landAll waits until nothing is in flight.
func (c *committer) landAll() {
	for c.flights > 0 {
		<-c.landed
		c.flights--
	}
}

// settle commits the open transaction and waits until nothing is in
// flight, so that what follows sees every earlier delta.
func (c *committer) settle() {
	if held := c.share.takeHeld(); held != nil {
		c.addAll(held)
	}
	if len(c.openBatch) > 0 {
		c.launchFull()
	}
	c.launched(nil) // the commits in flight tell all their changes once landed
	c.landAll()
	c.alone.Wait()
}

// opener keeps transactions of a store.Pipeliner open ahead of need: a
// transaction opened while commits are in flight waits until they are
// durable, and the committer should not.
type opener struct {
	ready chan store.PipelinedTxn
	quit  chan struct{}
	done  chan struct{}
}

func startOpener(p store.Pipeliner) *opener {
	tick := time.NewTicker(openerRefresh)
	return newOpener(p, tick.C, tick.Stop)
}

// openerRefresh is how often an opener replaces the transactions it holds
// ready while nothing takes them. An open transaction holds back the
// store's read mark: Badger keeps the commits after it for conflict checks
// and its compactions keep the versions they would drop, for as long as it
// stays open, so an engine left idle while other writers commit must not
// hold one for long.
const openerRefresh = time.Second

// newOpener starts an opener whose ready transactions are replaced at each
// tick of refresh; ended is called when it stops opening them.
func newOpener(p store.Pipeliner, refresh <-chan time.Time, ended func()) *opener {
	o := &opener{ready: make(chan store.PipelinedTxn, maxFlights), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		defer ended()
		for {
			tx, err := p.Begin(context.Background())
			if err != nil {
				return // the store closed: take returns nil
			}
			for sent := false; !sent; {
				select {
				case o.ready <- tx:
					sent = true
				case <-refresh:
					// The ready ones were opened a tick ago or more:
					// drop them and open them again (tx too).
					o.drain()
					tx.Discard()
					if tx, err = p.Begin(context.Background()); err != nil {
						return
					}
				case <-o.quit:
					tx.Discard()
					return
				}
			}
		}
	}()
	return o
}

// drain discards the ready transactions.
func (o *opener) drain() {
	for {
		select {
		case tx := <-o.ready:
			tx.Discard()
		default:
			return
		}
	}
}

// take returns an open transaction, waiting for one; nil when there is
// none and will be none (no Pipeliner, or the store closed).
func (o *opener) take() store.PipelinedTxn {
	if o == nil {
		return nil
	}
	select {
	case tx := <-o.ready:
		return tx
	case <-o.done:
		select {
		case tx := <-o.ready:
			return tx
		default:
			return nil
		}
	}
}

// stop ends the opener and discards the transactions it opened.
func (o *opener) stop() {
	close(o.quit)
	<-o.done
	o.drain()
}

// commitSync writes batch in one Update. When it fails, the halves are
// retried apart so one bad delta cannot block the others.
func (c *committer) commitSync(batch []*delta) {
	if c.cl != nil {
		if batch = c.refuseFenced(batch); len(batch) == 0 {
			return
		}
	}
	began := time.Now()
	sums := sumCounters(batch)
	err := c.st.Update(context.Background(), func(tx store.Txn) error {
		if c.cl != nil {
			if err := c.checkFences(tx, batch); err != nil {
				return err
			}
		}
		for _, d := range batch {
			if err := d.apply(tx); err != nil {
				return err
			}
		}
		if err := c.writeCounters(tx, sums, true); err != nil {
			return err
		}
		return c.fp.inGroupCommit(len(batch))
	})
	if err != nil && len(batch) > 1 {
		half := len(batch) / 2
		c.commitSync(batch[:half])
		c.commitSync(batch[half:])
		return
	}
	if err == nil {
		c.keepCounters(sums)
		if c.counted != nil {
			c.counted(sums)
		}
	}
	c.record(len(batch), time.Since(began), err)
	for _, d := range batch {
		if d.after != nil {
			d.after(err)
		}
	}
}

func (c *committer) record(n int, d time.Duration, err error) {
	c.stats.Lock()
	c.batches++
	c.deltas += uint64(n)
	c.busy += d
	c.stats.Unlock()
	if c.observe != nil {
		c.observe.Committed(n, d, err)
	}
}

func sumCounters(batch []*delta) map[string]int64 {
	var sums map[string]int64
	for _, d := range batch {
		for _, inc := range d.counters {
			if sums == nil {
				sums = map[string]int64{}
			}
			sums[inc.key] += inc.n
		}
	}
	return sums
}

// writeCounters writes each counter's new value. A counter not yet known
// is read first: from tx when canRead, else from a snapshot, which is
// right because only this committer writes its counters (on a cluster,
// each node writes its own share of them) and a counter it never touched
// has no commit in flight.
func (c *committer) writeCounters(tx store.Txn, sums map[string]int64, canRead bool) error {
	if len(sums) > 0 && c.countersLost.Load() {
		// A commit failed after its increments were kept: wait until
		// every commit in flight landed or failed, then read the
		// counters again from what the store holds. (A commit launched
		// after the failed one, before its failure was told, may
		// already hold values that count it.)
		c.landAll()
		c.alone.Wait()
		c.countersLost.Store(false)
		clear(c.counters)
		canRead = false
	}
	for k, inc := range sums {
		if inc == 0 {
			continue
		}
		key := []byte(k)
		if c.node != "" {
			key = append(key, c.node...)
		}
		cur, ok := c.counters[k]
		if !ok {
			var err error
			if canRead {
				cur, err = readCounter(tx, key)
			} else {
				err = c.st.View(context.Background(), func(r store.Reader) error {
					cur, err = readCounter(r, key)
					return err
				})
			}
			if err != nil {
				return err
			}
			c.counters[k] = cur
		}
		if err := tx.Set(key, binary.BigEndian.AppendUint64(nil, uint64(cur+inc))); err != nil {
			return err
		}
	}
	return nil
}

// maxKnownCounters is how many counter values the committer keeps before it
// forgets them all (see forgetCounters): daily counters add keys every day,
// so without a bound a long-lived engine would keep every day it ever
// counted.
const maxKnownCounters = 1 << 16

// forgetCounters forgets the known counter values once there are more than
// c.maxCounters of them and no commit is in flight: every value is then
// durable, so a counter's next write reads it back (writeCounters) and
// finds what the map held.
func (c *committer) forgetCounters() {
	if len(c.counters) <= c.maxCounters || c.flights > 0 || c.ahead.flying.Load() > 0 {
		return
	}
	clear(c.counters)
}

// keepCounters adds a batch's increments to the known values once the
// batch was written.
func (c *committer) keepCounters(sums map[string]int64) {
	for k, inc := range sums {
		c.counters[k] += inc
	}
}

// take removes up to n items from the front of *q and returns them.
func take[T any](q *[]T, n int) []T {
	batch := *q
	if len(batch) > n {
		batch = batch[:n:n]
		*q = (*q)[n:]
	} else {
		*q = nil
	}
	return batch
}

// sumCounter reads the counter at key: its value plus the shares of it
// the nodes of a cluster keep under key followed by their node id.
func sumCounter(r store.Reader, key []byte) (int64, error) {
	var n int64
	err := r.Scan(store.ScanOptions{Prefix: key, Rewritten: true}, func(k, v []byte) error {
		c, err := counterValue(k, v)
		n += c
		return err
	})
	return n, err
}

// counter reads the counter at key as this engine's nodes keep it: with
// one Get on a single node, summing the nodes' shares on a cluster.
func (e *Engine) counter(r store.Reader, key []byte) (int64, error) {
	if e.commits.node == "" {
		return readCounter(r, key)
	}
	return sumCounter(r, key)
}

func readCounter(r store.Reader, key []byte) (int64, error) {
	raw, err := r.Get(key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return counterValue(key, raw)
}

// counterValue decodes the counter at key from its stored value.
func counterValue(key, raw []byte) (int64, error) {
	if len(raw) != 8 {
		return 0, errors.Newf("runengine: counter %q has %d bytes", key, len(raw))
	}
	return int64(binary.BigEndian.Uint64(raw)), nil
}

// Stats describe the commit pipeline's work since the engine opened.
type Stats struct {
	// Commits is the number of synced transactions.
	Commits uint64
	// Deltas is the number of changes they carried.
	Deltas uint64
	// CommitTime is the time from filling a transaction to its durability,
	// summed over commits.
	CommitTime time.Duration
}

// Stats returns the commit pipeline's counters.
func (e *Engine) Stats() Stats {
	c := e.commits
	c.stats.Lock()
	defer c.stats.Unlock()
	return Stats{Commits: c.batches, Deltas: c.deltas, CommitTime: c.busy}
}
