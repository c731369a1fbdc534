package runengine

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

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
}

// committer is the group-commit pipeline: one goroutine drains every
// pending delta into one read-write transaction and commits it durably, so
// under load one sync carries many transitions, and idle a single change
// pays one sync.
//
// When the store is a store.Pipeliner, commits overlap: pipelineDepth
// transactions are kept open ahead, batches that only write commit with
// CommitAsync in order as soon as they are filled, and the store joins the
// batches that queue behind a sync into its next one, so the sync of one
// batch never waits for the filling of the next. Counters are kept in
// memory (the committer is their only writer), so a batch reads nothing.
type committer struct {
	st       store.Store
	pipe     store.Pipeliner
	maxBatch int

	mu      sync.Mutex
	q       []*delta
	closed  bool
	signal  chan struct{}
	stopped chan struct{}

	counters map[string]int64 // committed-or-in-flight counter values (committer goroutine only)
	ahead    chan openTxn     // transactions opened ahead (pipelineDepth of them, open or opening)
	inflight sync.WaitGroup   // pipelined commits not yet durable

	// batches, deltas and busy measure what was committed (Stats).
	stats           sync.Mutex
	batches, deltas uint64
	busy            time.Duration
}

type openTxn struct {
	txn store.PipelinedTxn
	err error
}

func newCommitter(st store.Store, maxBatch int) *committer {
	c := &committer{st: st, maxBatch: maxBatch, signal: make(chan struct{}, 1), stopped: make(chan struct{}),
		counters: map[string]int64{}}
	if p, ok := st.(store.Pipeliner); ok {
		c.pipe = p
		c.ahead = make(chan openTxn, pipelineDepth)
		for range pipelineDepth {
			go c.openAhead()
		}
	}
	go c.loop()
	return c
}

// pipelineDepth is how many pipelined commits may be in flight at once.
// Begin waits until the commits in flight when it is called are applied,
// so a transaction opened before a commit starts lets the next batch
// follow it without waiting for its sync.
const pipelineDepth = 4

// openAhead opens one transaction before it is needed. Every transaction
// taken from ahead is replaced by one call, so pipelineDepth are always
// open or opening.
func (c *committer) openAhead() {
	t, err := c.pipe.Begin(context.Background())
	c.ahead <- openTxn{t, err}
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
	defer func() {
		c.inflight.Wait()
		if c.pipe != nil {
			for range pipelineDepth {
				if o := <-c.ahead; o.txn != nil {
					o.txn.Discard()
				}
			}
		}
	}()
	for range c.signal {
		for {
			c.mu.Lock()
			batch := c.q
			if len(batch) > c.maxBatch {
				batch = batch[:c.maxBatch:c.maxBatch]
				c.q = c.q[c.maxBatch:]
			} else {
				c.q = nil
			}
			closed := c.closed
			c.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			c.commit(batch)
		}
	}
}

// commit writes batch, pipelined when it can be.
func (c *committer) commit(batch []*delta) {
	if c.pipe != nil && !readsAny(batch) {
		if c.commitPipelined(batch) {
			return
		}
	}
	// A batch that reads sees every earlier commit.
	c.inflight.Wait()
	c.commitSync(batch)
}

func readsAny(batch []*delta) bool {
	for _, d := range batch {
		if d.reads {
			return true
		}
	}
	return false
}

// commitPipelined fills the transaction opened ahead with batch and starts
// its commit; it returns false when the batch must go the synchronous way
// (the transaction could not be had or the batch does not fit).
func (c *committer) commitPipelined(batch []*delta) bool {
	o := <-c.ahead
	if o.err != nil {
		go c.openAhead()
		return false
	}
	tx := o.txn
	sums := sumCounters(batch)
	began := time.Now()
	err := func() error {
		for _, d := range batch {
			if err := d.apply(tx); err != nil {
				return err
			}
		}
		return c.writeCounters(tx, sums, false)
	}()
	if err != nil {
		tx.Discard()
		go c.openAhead()
		return false
	}
	c.keepCounters(sums)
	c.inflight.Add(1)
	tx.CommitAsync(func(err error) {
		defer c.inflight.Done()
		c.record(len(batch), time.Since(began))
		for _, d := range batch {
			if d.after != nil {
				d.after(err)
			}
		}
	})
	go c.openAhead()
	return true
}

// commitSync writes batch in one Update. When it fails, the halves are
// retried apart so one bad delta cannot block the others.
func (c *committer) commitSync(batch []*delta) {
	began := time.Now()
	sums := sumCounters(batch)
	err := c.st.Update(context.Background(), func(tx store.Txn) error {
		for _, d := range batch {
			if err := d.apply(tx); err != nil {
				return err
			}
		}
		return c.writeCounters(tx, sums, true)
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
	c.record(len(batch), time.Since(began))
	for _, d := range batch {
		if d.after != nil {
			d.after(err)
		}
	}
}

func (c *committer) record(n int, d time.Duration) {
	c.stats.Lock()
	c.batches++
	c.deltas += uint64(n)
	c.busy += d
	c.stats.Unlock()
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
// right because only the committer writes counters and a counter it never
// touched has no commit in flight.
func (c *committer) writeCounters(tx store.Txn, sums map[string]int64, canRead bool) error {
	for k, inc := range sums {
		if inc == 0 {
			continue
		}
		cur, ok := c.counters[k]
		if !ok {
			var err error
			if canRead {
				cur, err = readCounter(tx, []byte(k))
			} else {
				err = c.st.View(context.Background(), func(r store.Reader) error {
					cur, err = readCounter(r, []byte(k))
					return err
				})
			}
			if err != nil {
				return err
			}
			c.counters[k] = cur
		}
		if err := tx.Set([]byte(k), binary.BigEndian.AppendUint64(nil, uint64(cur+inc))); err != nil {
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
