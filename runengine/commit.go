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
	// after runs in the committer goroutine once the batch holding the
	// delta committed (err nil) or failed. It must not block.
	after func(err error)
}

// committer is the group-commit pipeline: one goroutine drains every
// pending delta into one read-write transaction and commits it durably, so
// under load one sync carries many transitions, and idle a single change
// pays one sync.
type committer struct {
	st       store.Store
	maxBatch int

	mu      sync.Mutex
	q       []*delta
	closed  bool
	signal  chan struct{}
	stopped chan struct{}

	// batches, deltas and busy measure what was committed (Stats).
	batches, deltas uint64
	busy            time.Duration
}

func newCommitter(st store.Store, maxBatch int) *committer {
	c := &committer{st: st, maxBatch: maxBatch, signal: make(chan struct{}, 1), stopped: make(chan struct{})}
	go c.loop()
	return c
}

// submit queues d; it never blocks. After Close, d fails at once.
func (c *committer) submit(d *delta) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		if d.after != nil {
			d.after(errEngineClosed)
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

// commitWait submits d and waits until its batch is durable.
func (c *committer) commitWait(ctx context.Context, apply func(tx store.Txn) error, counters map[string]int64) error {
	done := make(chan error, 1)
	c.submit(&delta{apply: apply, counters: counters, after: func(err error) { done <- err }})
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

// commit writes batch in one transaction. When it fails, the halves are
// retried apart so one bad delta cannot block the others.
func (c *committer) commit(batch []*delta) {
	began := time.Now()
	err := c.st.Update(context.Background(), func(tx store.Txn) error {
		counters := map[string]int64{}
		for _, d := range batch {
			if err := d.apply(tx); err != nil {
				return err
			}
			for k, v := range d.counters {
				counters[k] += v
			}
		}
		return applyCounters(tx, counters)
	})
	if err != nil && len(batch) > 1 {
		half := len(batch) / 2
		c.commit(batch[:half])
		c.commit(batch[half:])
		return
	}
	c.mu.Lock()
	c.batches++
	c.deltas += uint64(len(batch))
	c.busy += time.Since(began)
	c.mu.Unlock()
	for _, d := range batch {
		if d.after != nil {
			d.after(err)
		}
	}
}

// applyCounters adds each increment to its 8-byte counter key.
func applyCounters(tx store.Txn, counters map[string]int64) error {
	for k, inc := range counters {
		if inc == 0 {
			continue
		}
		key := []byte(k)
		cur, err := readCounter(tx, key)
		if err != nil {
			return err
		}
		if err := tx.Set(key, binary.BigEndian.AppendUint64(nil, uint64(cur+inc))); err != nil {
			return err
		}
	}
	return nil
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

var errEngineClosed = errors.New("runengine: engine is closed")

// Stats describe the commit pipeline's work since the engine opened.
type Stats struct {
	// Commits is the number of synced transactions.
	Commits uint64
	// Deltas is the number of changes they carried.
	Deltas uint64
	// CommitTime is the time spent committing.
	CommitTime time.Duration
}

// Stats returns the commit pipeline's counters.
func (e *Engine) Stats() Stats {
	c := e.commits
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Commits: c.batches, Deltas: c.deltas, CommitTime: c.busy}
}
