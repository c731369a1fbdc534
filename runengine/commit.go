package runengine

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// delta is one unit of change produced by a worker (or another engine
// goroutine): writes applied inside the batch transaction, counter
// increments, and what to do once the batch is durable.
type delta struct {
	apply    func(tx store.Txn) error
	counters map[string]int64
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
	// fence, when set (several nodes share the store), is the shard lease
	// the delta acts under: its batch checks it in the transaction, and a
	// lease no longer held refuses the delta.
	fence *lease.Lease
}

// committer is the group-commit pipeline: one goroutine drains every
// pending delta into one read-write transaction and commits it durably, so
// under load one sync carries many transitions, and idle a single change
// pays one sync.
//
// When the store is a store.Pipeliner, the next transaction is filled while
// the one before it syncs: it is opened before that one commits (so it
// need not wait for it), takes every delta that arrives meanwhile, and
// commits the moment the one before is durable. The store thus always has
// one commit to work on and one sync per commit, and a change waits at most
// the sync in progress and its own. Counters are kept in memory (the
// committer is their only writer), so a batch reads nothing. Deltas that
// read commit in a transaction of their own once nothing is in flight.
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
	counters  map[string]int64   // committed-or-in-flight counter values
	open      store.PipelinedTxn // the transaction being filled (nil until needed)
	openBatch []*delta           // the deltas applied to open
	openSince time.Time          // when the first of them was applied
	flying    bool               // a pipelined commit is not yet durable
	landed    chan struct{}      // the flying commit became durable
	spare     store.PipelinedTxn // opened with open while tenants share commits, for commitAlone
	alone     sync.WaitGroup     // quiet tenants' commits not yet durable (see commitAlone)

	// batches, deltas and busy measure what was committed (Stats).
	stats           sync.Mutex
	batches, deltas uint64
	busy            time.Duration

	observe Observer // nil when none
	fp      Failpoints

	share commitShare // the tenants' fair share of commits
	// shared, when set, is told each tenant of a commit while more than
	// one tenant is active (the start gate's view of who is). Set it
	// before the first submit.
	shared func(tenant string)

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
		counters: map[string]int64{}, landed: make(chan struct{}, 1), cl: cl}
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

func (c *committer) loop() {
	defer close(c.stopped)
	for {
		select {
		case <-c.signal:
		case <-c.landed:
			c.flying = false
		}
		for {
			c.mu.Lock()
			batch := take(&c.q, c.maxBatch-len(c.openBatch))
			closed, more := c.closed, len(c.q) > 0
			c.mu.Unlock()
			c.add(batch)
			if !c.flying && len(c.openBatch) > 0 {
				c.launch()
			}
			full := c.flying && len(c.openBatch) >= c.maxBatch
			if closed {
				if !more && len(batch) == 0 {
					c.settle()
					if c.open != nil {
						c.open.Discard()
					}
					if c.spare != nil {
						c.spare.Discard()
					}
					return
				}
				if full {
					c.land()
				}
				continue
			}
			if !more || full {
				break
			}
		}
	}
}

// add applies batch to the open transaction, or commits the deltas that
// read (and any batch the open transaction cannot take) the synchronous way,
// after everything before them.
func (c *committer) add(batch []*delta) {
	for i := 0; i < len(batch); i++ {
		d := batch[i]
		if c.pipe == nil || d.reads {
			j := i + 1
			for j < len(batch) && (c.pipe == nil || batch[j].reads) {
				j++
			}
			c.settle()
			c.commitSync(batch[i:j])
			i = j - 1
			continue
		}
		if c.flying && c.share.quiet(d) && c.commitAlone(d) {
			continue
		}
		if c.share.hold(d) {
			continue
		}
		if c.open == nil {
			tx, err := c.pipe.Begin(context.Background())
			if err != nil {
				c.settle()
				c.commitSync([]*delta{d})
				continue
			}
			c.open = tx
		}
		if len(c.openBatch) == 0 {
			c.openSince = time.Now()
		}
		if err := d.apply(c.open); err != nil {
			held := c.openBatch
			c.open.Discard()
			c.open, c.openBatch = nil, nil
			c.land()
			if len(held) > 0 && errors.Is(err, errs.TooLarge) {
				// d does not fit beside the open batch (a full batch of
				// big changes): commit that batch as it was, which fit,
				// and start the next transaction with d.
				c.add(held)
				if !c.flying && len(c.openBatch) > 0 {
					c.launch()
				}
				i--
				continue
			}
			// The transaction holds part of d: drop it and commit its
			// deltas the synchronous way, which sets a failing one apart.
			c.commitSync(append(held, d))
			continue
		}
		c.openBatch = append(c.openBatch, d)
	}
}

// addAll applies batch to the open transaction, holding nothing back.
func (c *committer) addAll(batch []*delta) {
	for _, d := range batch {
		t := d.tenant
		d.tenant = ""
		c.add([]*delta{d})
		d.tenant = t
	}
}

// launch commits the open transaction, nothing being in flight, and opens
// the next before it, so the next need not wait for this commit.
func (c *committer) launch() {
	tx, batch, began := c.open, c.openBatch, c.openSince
	c.open, c.openBatch = nil, nil
	sums := sumCounters(batch)
	if err := c.writeCounters(tx, sums, false); err != nil {
		tx.Discard()
		c.commitSync(batch)
		if held := c.share.launched(); held != nil {
			c.add(held)
		}
		return
	}
	if err := c.fp.inGroupCommit(len(batch)); err != nil {
		tx.Discard()
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
	if next, err := c.pipe.Begin(context.Background()); err == nil {
		c.open = next
	}
	// A transaction opened after this one commits would wait for it.
	if c.spare != nil {
		c.spare.Discard()
		c.spare = nil
	}
	if c.share.several() {
		if spare, err := c.pipe.Begin(context.Background()); err == nil {
			c.spare = spare
		}
		if c.shared != nil {
			for t := range c.share.inOpen {
				c.shared(t)
			}
		}
	}
	c.keepCounters(sums)
	c.flying = true
	tx.CommitAsync(func(err error) {
		c.record(len(batch), time.Since(began), err)
		c.landed <- struct{}{}
		for _, d := range batch {
			if d.after != nil {
				d.after(err)
			}
		}
	})
	if held := c.share.launched(); held != nil {
		c.add(held)
	}
}

// commitAlone commits d in a transaction of its own, started at once while
// the open transaction fills (see commitShare.quiet), and reports whether
// it did; false leaves d to the open transaction.
func (c *committer) commitAlone(d *delta) bool {
	tx := c.spare
	if tx == nil {
		return false
	}
	c.spare = nil
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
	tx.CommitAsync(func(err error) {
		c.record(1, time.Since(began), err)
		if d.after != nil {
			d.after(err)
		}
		c.alone.Done()
	})
	return true
}

// land waits until the flying commit, if any, is durable.
func (c *committer) land() {
	if c.flying {
		<-c.landed
		c.flying = false
	}
}

// settle commits the open transaction and waits until nothing is in
// flight, so that what follows sees every earlier delta.
func (c *committer) settle() {
	if held := c.share.takeHeld(); held != nil {
		c.addAll(held)
	}
	c.land()
	if len(c.openBatch) > 0 {
		c.launch()
		c.land()
	}
	c.alone.Wait()
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
		for k, v := range d.counters {
			if sums == nil {
				sums = map[string]int64{}
			}
			sums[k] += v
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
	err := r.Scan(store.ScanOptions{Prefix: key}, func(k, v []byte) error {
		if len(v) != 8 {
			return errors.Newf("runengine: counter %q has %d bytes", k, len(v))
		}
		n += int64(binary.BigEndian.Uint64(v))
		return nil
	})
	return n, err
}

func readCounter(r store.Reader, key []byte) (int64, error) {
	raw, err := r.Get(key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
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
