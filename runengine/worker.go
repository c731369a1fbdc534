package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

type cmdKind uint8

const (
	cmdStart cmdKind = iota
	cmdAdvance
	cmdCallResult
	cmdCompleteTask
	cmdDecide
	cmdTimer
	cmdEvent
	cmdCancel
	cmdReload
	cmdFlush
	cmdPause
	cmdResume
	cmdAssignTask
	cmdDropShards
	// cmdCall makes a call in the worker (see worker.callHere), then
	// takes its result as cmdCallResult.
	cmdCall
)

// command is one thing for a worker to do to one run.
type command struct {
	kind cmdKind
	// view asks for the run's JSON view (the HTTP layer's fast path)
	// instead of a snapshot in the reply; admitted says a run waiting
	// under a run cap was given its slot; resumes says the command is one
	// of Open's recovery, counted once handled (see Engine.recover).
	// (Beside kind, the four take one word.)
	view     bool
	admitted bool
	resumes  bool

	tenant string
	runID  string
	actor  string
	// job is the bulk job whose action the command is (a cancel, pause or
	// resume): a command that changes the run marks it as the job's in the
	// change's commit (see jobRunKey).
	job string

	start  *startArgs
	result *callResult
	task   *taskArgs
	decide *decideArgs
	timer  *timerArgs
	event  *eventArgs
	assign *assignArgs

	// reply, when set, receives the outcome once it is durable (see
	// view); keep, when set, adds a write of the answer to the change's
	// commit (see KeepAnswer).
	reply chan reply
	keep  AnswerKeeper

	// cl is what a cluster node adds to a command (nil on one node).
	cl *clusterArgs
	// call is the call a cmdCall makes.
	call *pendingCall
}

// reply is a command's outcome: snapshots of the run and of the task or
// approval it changed, which share nothing with the worker's state.
type reply struct {
	run      *Run
	view     json.RawMessage
	task     *Task
	approval *Approval
	err      error
	// changed says a bulk job's action changed the run (see command.job).
	changed bool
}

type startArgs struct {
	version *process.Version
	subject Subject
	trigger RunTrigger
	actor   string
	// ops are written in the run's first commit (a dedupe key, the next
	// cron fire); reads says they read keys.
	ops   []func(tx store.Txn) error
	reads bool
	// post runs once the first commit is durable; settled once it
	// succeeded or failed.
	post    []func()
	settled []func(err error)
	// rerun, when set, makes the run a rerun (see Engine.Rerun).
	rerun *rerunArgs
	// priority is the run's (see Run.Priority).
	priority string
}

type callResult struct {
	token string
	out   json.RawMessage
	err   error
	gate  *GateDecision
	// writes are what a built-in provider handed the engine to commit
	// with the call's result (see callwrites): applied by callOutcome when
	// the call succeeded, dropped with the result otherwise.
	writes callwrites.Writes
	// gateWrites are what the autonomy gate handed over with its decision
	// (see callwrites): its record and counts, committed with the
	// command that takes the decision (stepEnv.Gate), whatever the call's
	// outcome.
	gateWrites callwrites.Batch
	// cut says the call, or the gate's decision before it, failed once the
	// engine began to close, which cancels the calls' context: the failure
	// may be the close's. The worker drops such a result, so the call is
	// no failed attempt (no retry later, no approval asked instead): the
	// run stays running with its call in flight, and is resumed, the call
	// made again with the same idempotency key, on the next Open.
	cut bool
}

// errDropped tells a call's writes that its result was dropped without a
// commit.
var errDropped = errs.Unavailablef("the call's result was dropped")

// drop tells the writes of a result that is dropped without a commit.
func (r *callResult) drop() {
	r.gateWrites.Drop(errDropped)
	b := r.writes.TakeAll()
	b.Drop(errDropped)
}

type taskArgs struct {
	taskID string
	action string
	fields map[string]any
}

type decideArgs struct {
	approvalID string
	approve    bool
	args       map[string]any
	reason     string
	digest     string   // the digest the decider was shown; empty when not given
	aliases    []string // the decider's other names (DecideParams.Aliases)
}

type timerArgs struct {
	key   []byte
	token string
	// run is the run's record as the scheduler read it with the due key
	// (nil when it did not), when Engine.forgets stood at seen before
	// that read (see worker.readAhead).
	run  []byte
	seen uint64
}

type eventArgs struct {
	name string
	id   string
	data map[string]any
	key  []byte // the waiter key
}

// entry is a run a worker holds in memory.
type entry struct {
	run     *Run
	ver     *process.Version
	prev    *Run // index-relevant state of the last submitted version; nil when new
	pending atomic.Int32
	// inflight is the token of the call or gate decision in progress.
	inflight string
	// held are changes not yet submitted (see finish); dirty says the run
	// record changed since the last submission.
	held  effects
	dirty bool
	// replies wait for the next flush; flushArmed says a flush command is
	// on its way.
	replies    []heldReply
	flushArmed bool
	// parked is a call result that came while the run was paused; its
	// resume applies it.
	parked *callResult
	// durable is false for a new run until its first commit is submitted
	// (see flush), landed until a commit of it is durable: calls that only
	// join the commit of their result may go out before, any other waits
	// for it (see finish).
	durable bool
	landed  atomic.Bool
	// flushOnLand says a flush waits for the run's commit in flight to be
	// told (see flush): runCommit.after sends the run a flush then.
	flushOnLand atomic.Bool
	// failed says a commit of the entry's changes failed: the entry is
	// ahead of the store, and its reload is on the way. A change of it not
	// yet applied holds the failed one's outcome without its writes, so it
	// is refused (see runCommit.apply). It is set before the failed
	// commit stops counting in pending.
	failed atomic.Bool
	// foreign marks a run this node started for the node owning its shard.
	foreign bool
	// fence is, on a cluster node, the lease of the run's shard this node
	// held when it read the run from the store (or made it): the entry's
	// commits act under it, and once the shard's lease is another (it
	// changed hands) the entry may be stale and is dropped. Nil on one
	// node.
	fence *lease.Lease
	// tasks and approvals are the latest versions of the run's tasks and
	// approvals this entry wrote. They are what the store will hold (the
	// worker alone changes them), so a completion or decision reads them
	// here: no read from the store, and none that misses a change whose
	// commit is still in flight.
	tasks     map[string]*Task
	approvals map[string]*Approval
	// times holds the run's time fields that this entry set (see stamp).
	times []time.Time
}

// task returns a copy of the run's task id: the entry's own latest version,
// else the store's.
func (x *exec) task(id string) (*Task, error) {
	if t, ok := x.en.tasks[id]; ok {
		c := *t
		return &c, nil
	}
	return x.w.e.GetTask(x.w.e.ctx, x.r.Tenant, id)
}

// approval returns a copy of the run's approval id (see task).
func (x *exec) approval(id string) (*Approval, error) {
	if a, ok := x.en.approvals[id]; ok {
		c := *a
		return &c, nil
	}
	return x.w.e.GetApproval(x.w.e.ctx, x.r.Tenant, id)
}

// worker owns the runs whose ids hash to it: it alone advances them, so a
// run needs no lock.
type worker struct {
	e      *Engine
	mu     sync.Mutex
	q      fairQueue // commands by tenant (see fairQueue)
	batch  []*command
	quit   bool
	signal chan struct{}
	// told has a token when a commit of a run whose changes waited for it
	// was told (see flushLanded).
	told  chan struct{}
	cache map[runKey]*entry
	// idle are the runs in cache with nothing in flight that wait (or
	// are paused), ended those that ended (see markIdle): no command but
	// a stray one comes for an ended run, and reads go to the store.
	idle  map[runKey]*entry
	ended map[runKey]*entry
	// sweepAt is how many idle runs make sweep look for runs to forget;
	// endedAt how many ended runs.
	sweepAt, endedAt int
	// spare is an exec whose command is done, for the next (see release).
	spare *exec
	// calls numbers the calls of the worker's runs (see callToken).
	calls uint64
	// counters memoizes counter keys (see counterKey), at most
	// maxCounterKeys of them.
	counters map[counterID]string
	// day is the last date dayOf made.
	day struct {
		y int
		m time.Month
		d int
		s string
	}
	// states are index states of runs no commit reads any more, for reuse
	// (see indexState): committers release them.
	states sync.Pool
	// forgot holds, for the runs hashing to each slot, Engine.forgets as
	// it stood when the worker last forgot one of them (see forget).
	forgot [forgetSlots]uint64
}

// dayOf is t's date as the daily counters name it (2006-01-02), made once
// per day for the worker's commands.
func (w *worker) dayOf(t time.Time) string {
	y, m, d := t.Date()
	if y != w.day.y || m != w.day.m || d != w.day.d || w.day.s == "" {
		w.day.y, w.day.m, w.day.d, w.day.s = y, m, d, t.Format("2006-01-02")
	}
	return w.day.s
}

// forgetSlots is the size of worker.forgot (64 KiB): a run read ahead of
// its command is taken for fresh unless its slot moved since, so a slot
// shared with a run forgotten since costs a read, never freshness. While
// timers fire a worker forgets some hundreds of runs between a read and
// the command: with 1,024 slots a third of the runs were read again.
const forgetSlots = 8192

// forget drops a run from the worker's memory and notes when.
func (w *worker) forget(k runKey) {
	delete(w.cache, k)
	w.unidle(k)
	w.forgot[forgetSlot(k.runID)] = w.e.forgets.Add(1)
}

// forgetSlot is the slot of runID in worker.forgot.
func forgetSlot(runID string) int {
	return int(runHash(runID)>>8) % forgetSlots // the low bits chose the worker
}

// readAhead returns the entry of the run a timer's command carries, read
// by the scheduler with the due key (see timerArgs.run), or nil when it
// cannot be used. The worker alone changes its runs and keeps a run in
// memory until its changes are durable, so a run not in memory that it
// has not forgotten since that read began is what the read found.
func (w *worker) readAhead(c *command) *entry {
	t := c.timer
	if t == nil || t.run == nil || w.forgot[forgetSlot(c.runID)] > t.seen {
		return nil
	}
	r, err := decodeStoredRun(c.runID, t.run)
	if err != nil {
		return nil
	}
	for i := range r.Steps {
		if st := &r.Steps[i]; st.internal.OutputBytes > 0 && st.Output == nil {
			return nil // an output kept apart: read with the run
		}
	}
	en, err := w.entryOf(c.tenant, r)
	if err != nil {
		return nil
	}
	return en
}

// counterID names a counter of a tenant: its name and its one part, if any.
type counterID struct {
	tenant, name, part string
	hasPart            bool
}

// maxCounterKeys bounds a worker's memo of counter keys.
const maxCounterKeys = 4096

// counterKey is counterKey(tenant, name), made once for the worker's
// commands.
func (w *worker) counterKey(tenant, name string) string {
	return w.memoCounterKey(counterID{tenant: tenant, name: name})
}

// counterKeyWith is counterKey(tenant, name, part), made once for the
// worker's commands.
func (w *worker) counterKeyWith(tenant, name, part string) string {
	return w.memoCounterKey(counterID{tenant: tenant, name: name, part: part, hasPart: true})
}

func (w *worker) memoCounterKey(id counterID) string {
	if k, ok := w.counters[id]; ok {
		return k
	}
	var k string
	if id.hasPart {
		k = counterKey(id.tenant, id.name, id.part)
	} else {
		k = counterKey(id.tenant, id.name)
	}
	if w.counters == nil || len(w.counters) >= maxCounterKeys {
		w.counters = make(map[counterID]string)
	}
	w.counters[id] = k
	return k
}

func newWorker(e *Engine) *worker {
	return &worker{e: e, signal: make(chan struct{}, 1), told: make(chan struct{}, 1), cache: map[runKey]*entry{}, idle: map[runKey]*entry{}, ended: map[runKey]*entry{}}
}

// send queues c; it never blocks.
func (w *worker) send(c *command) {
	w.mu.Lock()
	if w.quit {
		w.mu.Unlock()
		if c.reply != nil {
			c.reply <- reply{err: errClosed}
		}
		w.unmade(c)
		return
	}
	w.q.push(c)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *worker) stop() {
	w.mu.Lock()
	w.quit = true
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *worker) loop() {
	for range w.signal {
		for {
			w.mu.Lock()
			batch, quit := w.q.round(w.batch[:0]), w.quit
			for quit && len(w.q.active) > 0 {
				batch = w.q.round(batch)
			}
			w.mu.Unlock()
			if quit {
				for _, c := range batch {
					if c.reply != nil {
						c.reply <- reply{err: errClosed}
					}
					w.unmade(c)
				}
				// Commit what is held, so a graceful close loses no progress
				// (a change waiting for its run's commit in flight too, once
				// that commit is told).
				for _, en := range w.cache {
					if en.dirty || len(en.replies) > 0 {
						w.flushLanded(en)
					}
				}
				return
			}
			if len(batch) == 0 {
				break
			}
			for i, c := range batch {
				if i%prefetchRuns == 0 {
					w.prefetch(batch[i:min(i+prefetchRuns, len(batch))])
				}
				w.handle(c)
				if i%1000 == 999 {
					w.sweep() // bound memory on a long batch (recovery)
				}
			}
			clear(batch)
			w.batch = batch[:0]
			w.sweep()
		}
	}
}

// maxIdle is how many idle runs a worker keeps in memory: a run waiting for
// a person or an event is then not read back from the store when its wait
// ends soon, while memory stays bounded (a run is a few KB).
const maxIdle = 256

// idleSlack is how many idle runs beyond maxIdle a worker lets gather
// before it sweeps: a sweep then forgets many runs in one walk of the idle
// ones, instead of walking them after each batch of commands to forget one
// or two (while commits are in flight, most idle runs are not yet durable
// and the walk passes over them).
const idleSlack = 64

// sweep forgets the runs whose changes are all durable: every ended run
// once more than endedAt ended, and idle runs beyond maxIdle of them
// (which it picks at random) once more than sweepAt are idle. A kept run
// is exactly what the store holds, as the worker alone changes it. Ended
// runs are not kept: they would hold the memory of maxIdle runs per worker
// (a run and its steps, a few KB each, which the collector walks and
// doubles as headroom) for commands that do not come.
func (w *worker) sweep() {
	if len(w.ended) > w.endedAt {
		for k, en := range w.ended {
			w.forgetDurable(k, en)
		}
		// Those left are not durable yet: look again once idleSlack more
		// ended.
		w.endedAt = len(w.ended) + idleSlack
	}
	if len(w.idle) <= max(w.sweepAt, maxIdle) {
		return
	}
	for k, en := range w.idle {
		if len(w.idle) <= maxIdle {
			break
		}
		w.forgetDurable(k, en)
	}
	w.sweepAt = max(len(w.idle), maxIdle) + idleSlack
}

// forgetDurable forgets the run if every commit of it is over.
func (w *worker) forgetDurable(k runKey, en *entry) {
	if en.pending.Load() != 0 || en.inflight != "" {
		return
	}
	// Every commit of it is over: nothing reads its index state.
	if en.prev != nil {
		w.releaseState(en.prev)
		en.prev = nil
	}
	w.forget(k)
}

// runKey names a run in memory (a worker's, the admission's): a map key
// that costs no allocation to make, unlike a string joining its parts.
type runKey struct{ tenant, runID string }

func runKeyOf(tenant, runID string) runKey { return runKey{tenant, runID} }

// prefetchRuns bounds the runs prefetch reads in one transaction.
const prefetchRuns = 256

// prefetch reads the runs of the timers and events in cmds that are not in
// memory in one read transaction, so timers that came due together do not
// open one transaction per run: each waits for the commits in flight. (The
// runs of other commands are mostly in memory.) A run it cannot read is
// left to load, which reports why.
func (w *worker) prefetch(cmds []*command) {
	var want []*command
	for _, c := range cmds {
		if c.kind != cmdTimer && c.kind != cmdEvent {
			continue
		}
		k := runKeyOf(c.tenant, c.runID)
		if _, ok := w.cache[k]; ok {
			continue
		}
		if en := w.readAhead(c); en != nil {
			w.cache[k] = en
			continue
		}
		want = append(want, c)
	}
	if len(want) < 2 {
		return
	}
	got := make([]*Run, len(want))
	var fences []*lease.Lease
	if w.e.cluster != nil { // taken before the read (see entry.fence)
		fences = make([]*lease.Lease, len(want))
		for i, c := range want {
			fences[i] = w.e.cluster.fenceFor(c.runID)
		}
	}
	_ = w.e.st.View(w.e.ctx, func(rd store.Reader) error {
		readRuns(rd, want, got)
		return nil
	})
	for i, r := range got {
		if r == nil {
			continue
		}
		k := runKeyOf(want[i].tenant, want[i].runID)
		if _, ok := w.cache[k]; ok {
			continue // the same run twice in cmds
		}
		if en, err := w.entryOf(want[i].tenant, r); err == nil {
			if fences != nil {
				en.fence = fences[i]
			}
			w.cache[k] = en
		}
	}
}

// readRuns reads the runs of cmds into got (nil where a run cannot be
// read) with one store.GetSorted: runs that came due together were mostly
// started together, so their records lie close together in the store.
func readRuns(rd store.Reader, cmds []*command, got []*Run) {
	keys := make([][]byte, len(cmds))
	for i, c := range cmds {
		keys[i] = runs.RecordKey(c.tenant, c.runID)
	}
	getSortedOnce(rd, keys, func(i int, raw []byte) {
		r, err := decodeStoredRun(cmds[i].runID, raw)
		if err == nil && loadApart(rd, cmds[i].tenant, r) == nil {
			got[i] = r
		}
	})
}

// getSortedOnce reads keys with one store.GetSorted, in key order and each
// distinct key once, and calls fn with the index in keys of the key's first
// occurrence and the value of each key found.
func getSortedOnce(rd store.Reader, keys [][]byte, fn func(i int, raw []byte)) {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	cmp := func(a, b int) int { return bytes.Compare(keys[a], keys[b]) }
	if !slices.IsSortedFunc(order, cmp) { // out of order: timers of several times, or tenants
		slices.SortStableFunc(order, cmp)
	}
	// The same key twice: the first read serves.
	order = slices.CompactFunc(order, func(a, b int) bool { return bytes.Equal(keys[a], keys[b]) })
	sorted := make([][]byte, len(order))
	for j, i := range order {
		sorted[j] = keys[i]
	}
	_ = store.GetSorted(rd, sorted, func(j int, raw []byte, found bool) error {
		if found {
			fn(order[j], raw)
		}
		return nil
	})
}

// readRun reads a run with its parts kept apart.
func readRun(rd store.Reader, tenant, runID string) (*Run, error) {
	raw, err := runs.GetRaw(rd, tenant, runID)
	if err != nil {
		return nil, err
	}
	r, err := decodeStoredRun(runID, raw)
	if err != nil {
		return nil, errors.Mark(errors.Wrapf(err, "decode run %s", runID), errCorruptRun)
	}
	return r, loadApart(rd, tenant, r)
}

// load returns the run's entry, from memory or the store.
func (w *worker) load(tenant, runID string) (*entry, error) {
	k := runKeyOf(tenant, runID)
	if en, ok := w.cache[k]; ok {
		w.unidle(k)
		return en, nil
	}
	fence := w.e.fence(runID) // taken before the read (see entry.fence)
	var r *Run
	err := w.e.st.View(w.e.ctx, func(rd store.Reader) error {
		var err error
		r, err = readRun(rd, tenant, runID)
		return err
	})
	if err != nil {
		return nil, err
	}
	en, err := w.entryOf(tenant, r)
	if err != nil {
		return nil, err
	}
	en.fence = fence
	w.cache[k] = en
	return en, nil
}

// entryOf makes the entry of a run read from the store.
func (w *worker) entryOf(tenant string, r *Run) (*entry, error) {
	r.Tenant = tenant
	ver, err := w.e.version(tenant, r.ProcessID, r.ProcessVersion)
	if err != nil {
		return nil, errors.Wrapf(err, "load version %d of process %s", r.ProcessVersion, r.ProcessID)
	}
	en := &entry{run: r, ver: ver, prev: w.indexState(r), durable: true}
	en.landed.Store(true)
	return en, nil
}

// indexState copies what the run's indexes and counters depend on, into a
// reused copy when the worker has one (see releaseState).
func (w *worker) indexState(r *Run) *Run {
	c, ok := w.states.Get().(*Run)
	if !ok {
		c = &Run{}
	}
	*c = Run{ID: r.ID, ProcessID: r.ProcessID, Status: r.Status, Overdue: r.Overdue, Function: r.Function}
	if r.Paused != nil {
		c.Paused = &pauseState{ByProcess: r.Paused.ByProcess}
	}
	return c
}

// releaseState keeps c, an index state of indexState, for reuse. A run's
// index state is the cur of one commit of it and the old of the next
// (entry.prev between them): once that next commit is over, nothing refers
// to it.
func (w *worker) releaseState(c *Run) {
	*c = Run{}
	w.states.Put(c)
}

func (w *worker) handle(c *command) {
	if c.resumes {
		defer w.e.resumedOne()
	}
	if c.kind == cmdStart {
		w.handleStart(c)
		return
	}
	if c.kind == cmdCall {
		w.makeCall(c) // c is now the call's result
	}
	if c.kind == cmdCallResult && c.result.cut {
		c.result.drop()
		return
	}
	if cl := w.e.cluster; cl != nil {
		if c.kind == cmdDropShards {
			w.dropShards(c.cl.shards)
			return
		}
		if !cl.owns(c.runID) {
			w.notMine(c)
			return
		}
	}
	if c.kind == cmdFlush {
		if en, ok := w.cache[runKeyOf(c.tenant, c.runID)]; ok {
			en.flushArmed = false
			w.flush(en)
		}
		return
	}
	if c.kind == cmdReload {
		k := runKeyOf(c.tenant, c.runID)
		if en, ok := w.cache[k]; ok {
			en.giveUp()
		}
		w.forget(k)
		w.handle(&command{kind: cmdAdvance, tenant: c.tenant, runID: c.runID})
		return
	}
	en, err := w.load(c.tenant, c.runID)
	if err != nil {
		if !errors.Is(err, errs.NotFound) {
			if key := c.dueKey(); key != nil && errors.Is(err, errCorruptRun) {
				w.e.sched.park(c.tenant, c.runID, key, err)
				return
			}
			w.unread(c, err)
			return
		}
		if c.cl != nil && c.cl.inbox != nil { // forwarded by another node
			var waiter []byte
			if c.event != nil {
				waiter = c.event.key
			}
			w.refuseInbox(c.cl.inbox, waiter, c.kind != cmdEvent, err)
			return
		}
		if c.kind == cmdTimer || c.kind == cmdEvent {
			w.dropKey(c)
			return
		}
		if c.kind == cmdCallResult {
			// A call made before its run's first commit, which failed: the
			// run is gone, and what the call handed over with it.
			c.result.drop()
			return
		}
		if c.reply != nil {
			c.reply <- reply{err: err}
		}
		return
	}
	x := w.newExec(en, c)
	x.holdCapSlot()
	if c.cl != nil && c.cl.inbox != nil {
		key := c.cl.inbox
		x.fx.ops = append(x.fx.ops, deleteKey(key))
		x.fx.settled = append(x.fx.settled, func(err error) { w.e.sched.settle(key, err) })
		x.dirty = true
	}
	if x.held() {
		w.finish(x)
		w.release(x)
		return
	}
	was := en.run.Status
	switch c.kind {
	case cmdAdvance:
		if x.capHeld(c.admitted) {
			break
		}
		if en.inflight == "" {
			x.advance()
		}
	case cmdCallResult:
		if c.result.token != en.inflight {
			c.result.drop()
			break // a stale result of a run that was reloaded
		}
		en.inflight = ""
		x.res = c.result
		x.advance()
	case cmdCompleteTask:
		x.completeTask(c.task)
	case cmdDecide:
		x.decideApproval(c.decide)
	case cmdTimer:
		x.fx.ops = append(x.fx.ops, deleteKey(c.timer.key))
		x.dirty = true
		key := c.timer.key
		x.fx.settled = append(x.fx.settled, func(err error) { w.e.sched.settle(key, err) })
		if c.timer.token == adoptToken {
			if en.inflight == "" {
				x.advance()
			}
		} else {
			x.fireTimer(c.timer.token)
		}
	case cmdEvent:
		x.deliverEvent(c.event)
	case cmdCancel:
		x.cancel()
	case cmdPause:
		x.pauseRun(false)
	case cmdResume:
		x.resumeRun()
	case cmdAssignTask:
		x.assignTask(c.assign)
	}
	if c.job != "" && x.err == nil && x.r.Status != was {
		x.jobChanged = true
		x.fx.ops = append(x.fx.ops, setKey(jobRunKey(c.tenant, c.job, c.runID), nil))
	}
	w.finish(x)
	w.release(x)
}

// unread answers a command whose run could not be read for a reason
// other than its being gone (the engine closing cancels its reads while
// the workers finish their batch; a failed read): nothing is removed. A
// timer's or forwarded command's due key is let go, to be handed out again
// by a later look from the first due key (at the latest on the next open);
// an event's waiter stays, and the dispatcher hears the error and delivers
// the event again. A call's result is dropped, and what it handed over
// told so (the gate's counts are released): the run makes the call again
// once it is read.
func (w *worker) unread(c *command, err error) {
	if c.kind == cmdCallResult && c.result != nil {
		c.result.drop()
	}
	if c.timer != nil {
		w.e.sched.done(c.timer.key)
	}
	if c.cl != nil && c.cl.inbox != nil {
		w.e.sched.done(c.cl.inbox)
	}
	if c.reply != nil {
		c.reply <- reply{err: err}
	}
}

// dropKey removes the due or waiter key of a command whose run is gone.
func (w *worker) dropKey(c *command) {
	var key []byte
	if c.timer != nil {
		key = c.timer.key
	} else if c.event != nil {
		key = c.event.key
	}
	reply := c.reply
	w.e.commits.submit(&delta{apply: deleteKey(key), after: func(err error) {
		if c.timer != nil {
			w.e.sched.done(key)
		}
		if reply != nil {
			reply <- reply2(err)
		}
	}})
}

func reply2(err error) reply { return reply{err: err} }

func deleteKey(key []byte) func(tx store.Txn) error {
	return func(tx store.Txn) error { return tx.Delete(key) }
}

func (w *worker) handleStart(c *command) {
	a := c.start
	now := w.e.now()
	id := c.runID
	r := &Run{
		ID: id, Tenant: c.tenant, ProcessID: a.version.ProcessID, ProcessName: a.version.Name,
		ProcessVersion: a.version.Version, Function: a.version.Function, Status: RunRunning,
		Subject: a.subject, Trigger: a.trigger, StartedAt: now, StartedBy: a.actor, Priority: a.priority,
	}
	r.Steps = make([]StepRun, len(a.version.Steps))
	for i, s := range a.version.Steps {
		r.Steps[i] = StepRun{Key: s.Key, Type: s.Type, Name: s.Name, Status: StepPending}
	}
	if len(r.Steps) > 0 {
		r.CurrentStep = &r.Steps[0].Key
	}
	a.rerun.apply(r)
	en := &entry{run: r, ver: a.version}
	if cl := w.e.cluster; cl != nil {
		en.fence = cl.fenceFor(id)
		en.foreign = en.fence.Token <= 0
	}
	w.cache[runKeyOf(c.tenant, id)] = en
	x := w.newExec(en, c)
	x.dirty = true
	x.fx.ops = append(x.fx.ops, a.ops...)
	x.fx.reads = a.reads
	x.fx.post = append(x.fx.post, a.post...)
	x.fx.settled = append(x.fx.settled, a.settled...)
	if op := labelWordOp(c.tenant, id, r.Subject.Label); op != nil {
		x.fx.ops = append(x.fx.ops, op)
	}
	x.fx.ops = append(x.fx.ops, childOps(c.tenant, r)...)
	x.count(w.counterKeyWith(c.tenant, "inflight", r.Function), 1)
	if obs := w.e.cfg.Observer; obs != nil {
		n := x.runNote()
		x.fx.post = append(x.fx.post, func() { obs.RunStarted(n) })
	}
	x.emitOf("process.run.started", runEventData)
	if !x.startPaused() && !en.foreign && !x.capHeldAtStart() {
		x.advance()
	}
	if en.foreign {
		// The owner of the run's shard advances it (see cluster.go).
		x.fx.ops = append(x.fx.ops, setKey(dueKey(w.e.clock.Now(), c.tenant, id, adoptToken), nil))
		x.fx.post = append(x.fx.post, func() { w.e.cluster.signal(topicDue) })
	}
	w.finish(x)
	w.release(x)
	if en.foreign {
		w.forget(runKeyOf(c.tenant, id))
	}
}

func setKey(key, val []byte) func(tx store.Txn) error {
	return func(tx store.Txn) error { return tx.Set(key, val) }
}

// activeKey is the run's entry in the active index, made in one allocation.
func activeKey(tenant, runID string) []byte {
	return store.AppendKey(make([]byte, 0, keyRoom(tenant, runID)+16), store.System, "active", tenant, runID)
}

// keyRoom is about the bytes store.AppendKey takes for parts: each part
// with its framing (see store.Key), so a key sized by it is built in one
// allocation.
func keyRoom(parts ...string) int {
	n := 0
	for _, p := range parts {
		n += len(p) + 4
	}
	return n
}

// activeChange is the change that brings a run's entry in the active
// index from its state at the last commit (old, nil for a new run) to cur.
type activeChange int8

const (
	activeKept activeChange = iota // neither
	activeSet                      // it became running
	activeDel                      // it stopped
)

// activeOf is the activeChange from old to cur. A run that resumes and
// stops again between two commits (a timer fires, the run completes)
// writes nothing there, not a pair of writes of which the store keeps a
// deletion of an entry it never had.
func activeOf(old, cur *Run) activeChange {
	was := old != nil && old.Status == RunRunning
	switch is := cur.Status == RunRunning; {
	case is && !was:
		return activeSet
	case was && !is:
		return activeDel
	}
	return activeKept
}

// write makes the change to the tenant's entry of runID in tx.
func (a activeChange) write(tx store.Txn, tenant, runID string) error {
	switch a {
	case activeSet:
		return tx.Set(activeKey(tenant, runID), nil)
	case activeDel:
		return tx.Delete(activeKey(tenant, runID))
	}
	return nil
}

// activePrefix is where the tenant's running runs are indexed.
func activePrefix(tenant string) []byte { return store.Key(store.System, "active", tenant) }

func counterKey(tenant, name string, parts ...any) string {
	return string(store.AppendKey(store.Key(tenant, "count", name), parts...))
}

// finish decides what the command's changes wait for. Changes are held
// on the run while a call of it is in flight, and submitted together when
// the run goes idle (waits or ends): a chain of quick steps then costs one
// commit, and a crash before it only repeats calls, with the same
// idempotency keys. A caller waiting for an answer is answered once the
// commit holding its change is durable; its change is held too, but at
// most replyHold, so a quick run is started and finished by one commit
// while a slow call never delays the answer by more than that. Calls the
// command asked for go out at once, but those of a run whose first commit
// was not submitted yet wait for that commit to be durable, unless each
// acts only through the commit of its result (see Engine.joinsCommit): a
// crash, or a failed first commit, then loses the call's action with the
// run, and the run is held as one already durable, so that a quick run
// (a route, then email.send through the gate) is started and finished by
// one commit.
func (w *worker) finish(x *exec) {
	en, c := x.en, x.cmd
	if x.err != nil && c.cl != nil && c.cl.inbox != nil && c.kind != cmdEvent { // its sender waits for the answer
		x.answerInbox(c.cl.inbox)
	}
	if x.dirty {
		x.indexSearch()
	}
	if x.dirty {
		en.held.merge(&x.fx)
		en.dirty = true
	}
	if c.reply != nil {
		h := heldReply{ch: c.reply, view: c.view, err: x.err, keep: c.keep, changed: x.jobChanged}
		if x.replyTask != nil {
			h.task = cloneTask(x.replyTask)
		}
		if x.replyApproval != nil {
			h.approval = cloneApproval(x.replyApproval)
		}
		en.replies = append(en.replies, h)
	}
	// wait says the command's calls must wait for the run's first commit.
	wait := len(x.fx.calls) > 0 && !en.landed.Load() && !w.e.joinsCommit(x.fx.calls)
	switch {
	case wait || !en.durable && len(x.fx.calls) == 0:
		// A run's first commit must be durable before any call of it goes
		// out: a call must never act for a run a crash could lose. (A call
		// asked for once the first commit was submitted, before it landed,
		// is made once this later commit is durable, so after it.) A new
		// run with no call commits at once.
		en.held.issue = append(en.held.issue, x.fx.calls...) // x.fx.calls is the exec's own
		x.fx.calls = nil
		en.dirty = true
		w.flush(en)
	case en.inflight == "" || c.kind == cmdFlush:
		w.flush(en)
	case len(en.replies) > 0 && !en.flushArmed:
		en.flushArmed = true
		defer w.armFlush(en) // after the calls are queued: a call made here comes first
	}
	w.markIdle(en)
	w.issue(x)
}

// armFlush sends the run a flush command once its answer was held long
// enough (replyHold, or firstHold for a run not yet committed).
func (w *worker) armFlush(en *entry) {
	tenant, runID := en.run.Tenant, en.run.ID
	hold := replyHold
	if !en.durable {
		hold = firstHold
	}
	time.AfterFunc(hold, func() { w.send(&command{kind: cmdFlush, tenant: tenant, runID: runID}) })
}

// replyHold bounds how long a caller's answer waits for the run's calls in
// flight before the run's changes are committed anyway.
const replyHold = 2 * time.Millisecond

// firstHold is replyHold for a new run whose first commit waits for calls
// that join it (see Engine.joinsCommit): such a call (the outbox's
// email.send through the workspace's gate) reads the store, which waits
// for the commits in flight, so under load it often takes longer than
// replyHold, and the run then costs two commits instead of one. Measured
// with the example server's benchmark at load ~17: CPU per start -8%,
// bytes allocated -19% against replyHold.
const firstHold = 8 * time.Millisecond

// heldReply is an answer waiting for the commit of the run's changes.
type heldReply struct {
	ch       chan reply
	view     bool
	task     *Task
	approval *Approval
	err      error
	keep     AnswerKeeper
	changed  bool // see reply.changed
}

// dropHeld gives up the changes en holds, with en: what waits for their
// commit hears err (a timer's or forwarded command's due key is let go,
// for the next look to hand it out again), and a parked call result is
// dropped.
func (en *entry) dropHeld(err error) {
	for _, fn := range en.held.settled {
		fn(err)
	}
	en.held.settled = nil
	if en.parked != nil {
		en.parked.drop()
		en.parked = nil
	}
}

// giveUp answers the held replies of a run whose commit failed (they are
// to try again) and drops its held changes, before the run is read again
// from the store.
func (en *entry) giveUp() {
	for _, h := range en.replies {
		h.ch <- reply{err: errs.Unavailablef("the run's change could not be saved; try again")}
	}
	en.replies = nil
	en.dropHeld(errClosed)
}

// flush submits the run's held changes and answers the held replies once
// they are durable (at once when nothing changed). While a commit of the
// run is in flight, they wait for it to be told: a run has at most one
// commit in flight. Committed behind it in a later batch, a change could
// land though the commit before it failed (a store tells a failure after
// later batches were built, and those still land), leaving the run's
// later state (a step's result, a completion, a pause) without the writes
// of the failed change (its step's provider's, its timers, its message,
// its index entries), or a new run's later state without its start's,
// while the start's caller was told it failed. runCommit.after flushes the
// run once that commit landed; a failed one reloads the run, and what
// waited is given up (see entry.giveUp). Changes made meanwhile join in
// the one commit after it, so the wait costs a quick chain no commit.
func (w *worker) flush(en *entry) {
	if en.pending.Load() > 0 && (en.dirty || len(en.replies) > 0) {
		en.flushOnLand.Store(true)
		if en.pending.Load() > 0 {
			w.e.cfg.Failpoints.changeWaits(en.run.Tenant, en.run.ID)
			return
		}
		en.flushOnLand.Store(false)
	}
	r := en.run
	rc := w.e.newRunCommit()
	rc.w, rc.replies = w, en.replies
	en.replies, en.flushArmed = nil, false
	for i, h := range rc.replies {
		if (h.view || h.keep != nil) && rc.view == nil {
			var err error
			if rc.view, err = appendRun(nil, r, false); err != nil {
				rc.replies[i].err = errors.CombineErrors(h.err, err)
			}
		}
		if !h.view && rc.snap == nil {
			rc.snap = cloneRun(r)
		}
	}
	rc.kept = w.keeps(rc.replies, rc.view)
	if !en.dirty {
		// An answer of a command that changed nothing may tell of a change
		// of the run that was being committed (a claim repeated while the
		// first is in flight): it waited for that commit above, so a read
		// after it sees what it tells.
		if len(rc.kept) == 0 {
			rc.answer(nil)
			return
		}
		kept := rc.kept
		w.e.commits.submit(&delta{apply: func(tx store.Txn) error {
			if en.failed.Load() {
				return errEntryFailed
			}
			return applyAll(kept)(tx)
		}, after: rc.answer})
		return
	}
	buf := w.e.recordBuf(len(r.Steps))
	raw, err := w.encodeRecord(en, *buf)
	if err != nil {
		// A run that cannot be encoded is a bug, or a new run whose data
		// a Go caller filled with what JSON cannot hold (NaN, a func: its
		// start is refused, see unencodable, and the caller told why, so
		// it is no error of the engine's); keep the store as it is.
		if en.prev == nil && unencodable(err) != err {
			w.e.log.Debug("start refused: its data cannot be encoded", "run", r.ID, "error", err)
		} else {
			w.e.log.Error("encode run", "run", r.ID, "error", err)
		}
		for _, fn := range en.held.settled {
			fn(err)
		}
		en.held.settled = nil
		rc.answer(err)
		if en.prev == nil {
			w.dropUnsaved(en, err)
		}
		return
	}
	*buf = raw        // the record's buffer, grown or not, is this change's alone
	en.durable = true // submitted: the calls asked for from now on wait for it
	rc.en, rc.buf, rc.raw = en, buf, raw
	rc.tenant, rc.runID, rc.old = r.Tenant, r.ID, en.prev
	rc.cur = w.indexState(r)
	en.prev = rc.cur
	rc.active = activeOf(rc.old, rc.cur)
	rc.fx = en.held
	en.held, en.dirty = effects{}, false
	en.pending.Add(1)
	d := &rc.delta
	if cl := w.e.cluster; cl != nil && !en.foreign {
		d.fence = en.fence
	}
	d.apply, d.after = rc.applyFn, rc.afterFn
	d.counters, d.reads, d.tenant = rc.fx.counters, rc.fx.reads, rc.tenant
	d.caller = len(rc.replies) > 0
	d.goesOn = en.inflight != ""
	d.size = len(raw) + opSize*(len(rc.fx.ops)+len(rc.kept)+2*len(runs.Indexes)+2)
	w.e.commits.submit(d)
}

// dropUnsaved forgets a new run whose first record could not be encoded
// (err): it was never saved, so it gives up the run cap slot its start
// took (see capHeldAtStart), as a run whose first commit failed does, and
// leaves the worker's memory. A call it made at once (see Engine.joinsCommit) comes
// back to a run not found, and is dropped.
func (w *worker) dropUnsaved(en *entry, err error) {
	r := en.run
	if caps := w.e.runCaps; caps != nil {
		caps.release(r.Tenant, r.ProcessID, r.ID)
	}
	en.dropHeld(err)
	w.forget(runKeyOf(r.Tenant, r.ID))
}

// runCommit is one submitted change of a run: the delta and all its
// commit needs, in one value, reused once its commit was told (see
// newRunCommit).
type runCommit struct {
	delta
	// applyFn and afterFn are apply and after, bound once for the life of
	// the value.
	applyFn func(tx store.Txn) error
	afterFn func(err error)

	w       *worker
	en      *entry // nil when the run record is not written
	replies []heldReply
	snap    *Run
	view    json.RawMessage
	kept    []func(store.Txn) error

	tenant, runID string
	old, cur      *Run
	raw           []byte  // the run's record
	buf           *[]byte // raw's buffer, reused once the commit is over (see recordBuf)
	active        activeChange
	fx            effects
}

// errEntryFailed refuses the change of a run whose earlier change failed
// to commit (see entry.failed).
var errEntryFailed = errs.Unavailablef("an earlier change of the run could not be saved; try again")

// apply writes the run's change in tx.
func (rc *runCommit) apply(tx store.Txn) error {
	if rc.en.failed.Load() {
		// The record holds what the failed change did (a step's result,
		// say) but not its writes (those of the step's provider, its
		// timers): committed, it would make the run go on without them.
		return errEntryFailed
	}
	// The record's buffer is reused only once the commit is over.
	if err := runs.PutOverKept(tx, rc.tenant, rc.old, rc.cur, rc.raw); err != nil {
		return err
	}
	if k := rc.w.e.countCache; k != nil && rc.old == nil {
		var after uint64 // this commit's version is above what it read
		if vr, ok := tx.(store.VersionReader); ok {
			after = vr.ReadVersion()
		}
		k.ran(rc.tenant, rc.runID, after) // the run's first record
	}
	if err := rc.active.write(tx, rc.tenant, rc.runID); err != nil {
		return err
	}
	for _, op := range rc.fx.ops {
		if err := op(tx); err != nil {
			return err
		}
	}
	for _, op := range rc.kept {
		if err := op(tx); err != nil {
			return err
		}
	}
	return nil
}

// after tells the change's effects once its commit is durable (or failed).
func (rc *runCommit) after(err error) {
	w, fx, tenant, runID := rc.w, &rc.fx, rc.tenant, rc.runID
	failed := err != nil && !errors.Is(err, errEntryFailed)
	if failed {
		// Before the commit stops counting: a flush that finds none in
		// flight must find the failure, which refuses its change.
		rc.en.failed.Store(true)
	}
	rc.en.pending.Add(-1)
	waited := rc.en.flushOnLand.Swap(false)
	first := rc.old == nil // the run's first commit
	if rc.old != nil {
		// This commit was the last to read it (see releaseState).
		w.releaseState(rc.old)
		rc.old = nil
	}
	if rc.buf != nil {
		w.e.releaseRecordBuf(rc.buf)
		rc.buf, rc.raw = nil, nil
	}
	for _, fn := range fx.settled {
		fn(err)
	}
	switch {
	case errors.Is(err, errEntryFailed):
		// Refused after an earlier change failed, whose reload is on the way.
	case err != nil:
		w.e.log.Error("commit run change", "run", runID, "error", err)
		if caps := w.e.runCaps; caps != nil && first {
			// The run is gone, and with it the run cap slot its start took
			// (see capHeldAtStart).
			caps.release(tenant, rc.cur.ProcessID, runID)
		}
		w.send(&command{kind: cmdReload, tenant: tenant, runID: runID})
	default:
		rc.en.landed.Store(true)
		if waited {
			w.send(&command{kind: cmdFlush, tenant: tenant, runID: runID})
		}
		if len(fx.late) > 0 && w.e.hub.wants(tenant) {
			for i := range fx.late {
				l := &fx.late[i]
				w.e.showLate(tenant, l.name, l.dataOf(), l.at, nil, l.from, nil)
			}
		}
		for _, fn := range fx.post {
			fn()
		}
		if fx.ended != "" {
			w.e.ended(tenant, runID, fx.ended)
		}
		w.issueCalls(fx.issue)
		w.e.changes.notify(tenant, runID)
	}
	if waited {
		select {
		case w.told <- struct{}{}: // a closing worker may wait for it (see flushLanded)
		default:
		}
	}
	rc.answer(err)
	w.e.releaseRunCommit(rc)
}

// flushLanded is flush for a closing worker, which takes no more commands:
// it waits until no commit of en is in flight, then flushes it, or gives
// its changes up when that commit failed.
func (w *worker) flushLanded(en *entry) {
	for en.pending.Load() > 0 {
		en.flushOnLand.Store(true)
		if en.pending.Load() == 0 {
			break
		}
		<-w.told
	}
	en.flushOnLand.Store(false)
	if en.failed.Load() {
		en.giveUp()
		return
	}
	w.flush(en)
}

// newRunCommit returns an empty runCommit: a reused one when the engine
// has one.
func (e *Engine) newRunCommit() *runCommit {
	if rc, ok := e.runCommits.Get().(*runCommit); ok {
		return rc
	}
	rc := &runCommit{}
	rc.applyFn, rc.afterFn = rc.apply, rc.after
	return rc
}

// releaseRunCommit keeps rc for reuse. Its after is the last the committer
// does with its delta, so once it told everything, nothing refers to rc.
func (e *Engine) releaseRunCommit(rc *runCommit) {
	*rc = runCommit{applyFn: rc.applyFn, afterFn: rc.afterFn}
	e.runCommits.Put(rc)
}

// answer answers the held replies: err, else each reply's own error.
func (rc *runCommit) answer(err error) {
	for _, h := range rc.replies {
		e := err
		if e == nil {
			e = h.err
		}
		rep := reply{run: rc.snap, task: h.task, approval: h.approval, err: e, changed: h.changed}
		if h.view {
			rep.run, rep.view = nil, rc.view
		}
		h.ch <- rep
	}
}

// maxRecordBuf bounds the buffers of run records the engine keeps for
// reuse: a run of large outputs gets one of its own.
const maxRecordBuf = 16 << 10

// recordBuf returns a buffer for the stored record of a run of steps
// steps, empty: a reused one when the engine has one. Its record is
// written into *b and b handed back to releaseRecordBuf.
func (e *Engine) recordBuf(steps int) *[]byte {
	if b, ok := e.recordBufs.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	// Room for a run of small outputs (a completed three-step run's
	// record is about 140 bytes, see appendStoredRun), so the buffer
	// rarely grows.
	b := make([]byte, 0, 160+96*steps)
	return &b
}

// releaseRecordBuf keeps b for reuse once nothing reads it: the record's
// commit is over (the store holds the record as it is until then, see
// store.SetKept).
func (e *Engine) releaseRecordBuf(b *[]byte) {
	if cap(*b) > maxRecordBuf {
		return
	}
	e.recordBufs.Put(b)
}

// opSize bounds the bytes one write of a delta's (an index entry, a due
// key, the run record's key) adds to a transaction, beside the record.
const opSize = 128

// keeps returns the writes the keepers of replies make of their answers
// (see KeepAnswer); a command that failed keeps nothing.
func (w *worker) keeps(replies []heldReply, view json.RawMessage) []func(store.Txn) error {
	var ops []func(store.Txn) error
	for _, h := range replies {
		if h.keep == nil || h.err != nil || view == nil {
			continue
		}
		a := Answer{Run: view}
		var err error
		if h.task != nil {
			a.Task, err = json.Marshal(h.task)
		}
		if err == nil && h.approval != nil {
			a.Approval, err = json.Marshal(h.approval)
		}
		var op func(store.Txn) error
		if err == nil {
			op, err = h.keep(a)
		}
		if err != nil {
			w.e.log.Error("keep a command's answer", "error", err)
			continue
		}
		ops = append(ops, op)
	}
	return ops
}

func applyAll(ops []func(store.Txn) error) func(store.Txn) error {
	return func(tx store.Txn) error {
		for _, op := range ops {
			if err := op(tx); err != nil {
				return err
			}
		}
		return nil
	}
}

// markIdle notes a run that has nothing in flight and nothing to commit
// for sweep: among the ended runs if it ended, else among the idle ones.
func (w *worker) markIdle(en *entry) {
	if en.inflight == "" && !en.dirty && len(en.replies) == 0 {
		k := runKeyOf(en.run.Tenant, en.run.ID)
		if en.run.Finished() {
			w.ended[k] = en
		} else {
			w.idle[k] = en
		}
	}
}

// unidle takes a run out of the idle and ended runs (a command for it
// came, or it is forgotten).
func (w *worker) unidle(k runKey) {
	delete(w.idle, k)
	delete(w.ended, k)
}

// issue starts the calls the command asked for.
func (w *worker) issue(x *exec) { w.issueCalls(x.fx.calls) }

// issueCalls makes each call on a call runner, or in the worker when
// neither its gate nor its provider ever blocks (see atOnce); its result
// comes back to the worker as a command.
func (w *worker) issueCalls(calls []*pendingCall) {
	adm := w.e.admission
	for _, pc := range calls {
		pc.w = w
		pc.here = w.e.atOnce(pc)
		if adm == nil {
			pc.dispatch()
			continue
		}
		adm.admit(pc.cmd.tenant, pc.info.ProcessID, pc.info.Priority, pc.cmd.runID, pc.dispatch)
	}
}

// atOnce tells whether pc may be made in the run's worker: its provider
// returns at once, and so does the gate when pc asks it first. Only the
// registry itself is taken at its word (see registryCaller): a Caller that
// embeds it has its ReturnsAtOnce too, but its own Call may block. Not on
// a cluster, whose commands may leave for another node.
func (e *Engine) atOnce(pc *pendingCall) bool {
	if e.cluster != nil {
		return false
	}
	if _, ok := e.cfg.Gate.(DecidesAtOnce); pc.asksGate && !ok {
		return false
	}
	rt, ok := e.callRoute(e.ctx, pc)
	return ok && rt.ReturnsAtOnce()
}

// dispatch hands pc to a call runner, or to its worker when pc.here.
func (pc *pendingCall) dispatch() {
	if pc.here {
		pc.w.callHere(pc)
		return
	}
	pc.w.e.goJob(pc)
}

// callHere queues pc to be made by the worker itself (a cmdCall): no
// goroutine to wake and none to hand the result back. Like a call on a
// runner, it counts as a call in flight, which Close waits for, and none
// is queued once Close began.
func (w *worker) callHere(pc *pendingCall) {
	if !w.e.addCall() {
		return
	}
	pc.cmd.kind, pc.cmd.call = cmdCall, pc
	w.send(&pc.cmd)
}

// makeCall makes the call of c, a cmdCall, and turns c into the command
// carrying its result. A call whose run moved on since it was asked for
// (cancelled, reloaded: its entry waits for another token) is not made;
// its result is dropped as any stale one. A panic of the gate or the
// provider fails the call, as a call that returned an error.
func (w *worker) makeCall(c *command) {
	pc, e := c.call, w.e
	c.kind, c.call = cmdCallResult, nil
	if en, ok := w.cache[runKeyOf(c.tenant, c.runID)]; !ok || en.inflight == pc.res.token {
		pc.doSafe(e)
		e.cfg.Failpoints.afterCall(pc.cmd.tenant, pc.cmd.runID, pc.res.token)
	}
	if e.admission != nil {
		e.admission.done(pc.cmd.tenant, pc.info.ProcessID)
	}
	e.calls.Done()
}

// doSafe is do, with a panic of the gate or the provider turned into the
// call's error (the registry recovers its providers' own; a gate's, or a
// Caller's that is no registry, would end the process).
func (pc *pendingCall) doSafe(e *Engine) {
	defer func() {
		if v := recover(); v != nil {
			e.log.Error("capability call panicked", "run", pc.cmd.runID, "capability", pc.capID, "panic", fmt.Sprint(v))
			pc.res.out, pc.res.err = nil, errors.Newf("the call of %s panicked: %v", pc.capID, v)
		}
	}()
	pc.do(e)
}

// unmade settles c, a command dropped by a worker that stopped: a call
// it was to make is no longer in flight (its run makes it again when the
// engine opens next); a call's result is dropped, and what the call and
// the gate handed over told so (the gate releases what it holds for it);
// a start the engine made (a schedule's tick) leaves the tenant's door
// and frees its due key, kept in the store for the next open, as when its
// commit fails.
func (w *worker) unmade(c *command) {
	switch {
	case c.kind == cmdCall:
		w.e.calls.Done()
	case c.kind == cmdCallResult && c.result != nil:
		c.result.drop()
	case c.kind == cmdStart && c.start != nil:
		for _, fn := range c.start.settled {
			fn(errClosed)
		}
	}
}

// pendingCall is a capability call, or a gate decision followed by the
// call when the gate allows it, to make outside the worker. It holds all
// the call needs, its context, its result and the command carrying the
// result back, so that a call costs the worker one allocation.
type pendingCall struct {
	// capID, args and key make the capability call; info is what
	// RunFromContext tells the provider (and the run's process and
	// priority, for the call caps). The run's tenant and id are cmd's, the
	// call's token is res's.
	capID string
	args  json.RawMessage
	key   string
	info  RunInfo
	// asksGate makes the call ask the autonomy gate first: the capability
	// is called only when the gate answers automatic.
	asksGate bool
	// here says the worker makes the call itself (see atOnce).
	here bool
	// joins says the provider is a callwrites.Joiner, when joinsKnown
	// (see Engine.joinsCommit).
	joins, joinsKnown bool
	// route is the provider the call goes to (see Engine.callRoute).
	route registry.Route

	w   *worker // set when issued
	ctx callCtx
	dec GateDecision
	res callResult
	cmd command
}

// run makes the call on a call runner and sends its result to the worker.
func (pc *pendingCall) run() {
	e := pc.w.e
	pc.doSafe(e)
	e.cfg.Failpoints.afterCall(pc.cmd.tenant, pc.cmd.runID, pc.res.token)
	if e.admission != nil {
		e.admission.done(pc.cmd.tenant, pc.info.ProcessID)
	}
	pc.w.send(&pc.cmd)
}

// do asks the gate (when asked to) and makes the capability call, under a
// context with the engine's call deadline, into pc.res.
func (pc *pendingCall) do(e *Engine) {
	ctx := &pc.ctx
	ctx.init(e.ctx, e.cfg.CallTimeout)
	ctx.info = &pc.info
	ctx.writes = &pc.res.writes
	defer ctx.release()
	if pc.asksGate {
		if !pc.joinsKnown {
			if rt, ok := e.callRoute(ctx, pc); ok {
				pc.joins = rt.JoinsWrites()
			}
		}
		pc.res.writes.Joins = pc.joins
		d, err := e.cfg.Gate.Decide(ctx, GateRequest{Tenant: pc.cmd.tenant, ProcessID: pc.info.ProcessID, RunID: pc.cmd.runID, StepKey: pc.info.StepKey,
			Capability: pc.capID, ItemKey: pc.key[:len(pc.cmd.runID)+1+len(pc.info.StepKey)], New: pc.res.writes.New})
		if err != nil && e.ctx.Err() != nil {
			pc.res.err, pc.res.cut = err, true
			return
		}
		if err != nil {
			e.log.Error("autonomy gate", "run", pc.cmd.runID, "error", err)
			d = GateDecision{Auto: false, Reason: "the autonomy gate could not decide: a person approves"}
		}
		pc.dec = d
		pc.res.gate = &pc.dec
		pc.res.gateWrites = pc.res.writes.TakeAll()
		if !d.Auto {
			return
		}
	}
	call := capability.Call{Tenant: pc.cmd.tenant, Capability: pc.capID, Args: pc.args, IdempotencyKey: pc.key}
	if reg, ok := e.registryCaller(); ok {
		pc.res.out, pc.res.err = reg.CallRoute(ctx, &pc.route, call)
	} else {
		pc.res.out, pc.res.err = e.cfg.Capabilities.Call(ctx, call)
	}
	pc.res.cut = pc.res.err != nil && e.ctx.Err() != nil
}

// callRoute returns the provider pc's call goes to when the registry itself
// is the engine's Caller (see registryCaller), resolved once for all the
// call asks of it (whether it joins the commit, returns at once, the call)
// and again only when the providers or the tenant's bindings changed
// meanwhile.
func (e *Engine) callRoute(ctx context.Context, pc *pendingCall) (*registry.Route, bool) {
	reg, ok := e.registryCaller()
	if !ok {
		return nil, false
	}
	if !reg.Current(&pc.route) {
		pc.route = reg.Route(ctx, pc.cmd.tenant, pc.capID)
	}
	return &pc.route, true
}

// registryCaller returns the capability registry when it is the engine's
// Caller: it tells whether the provider of a capability hands all its
// writes to the call's commit (callwrites.Joiner), and the gate's answer
// may then commit with the call's result (callwrites.Writes.Joins). Only
// the registry itself is taken at its word: a Caller that embeds it (an
// embedder's wrapper) has its JoinsWrites too, but its own Call may act
// before it hands the call on, so its calls wait for their run's first
// commit.
func (e *Engine) registryCaller() (*registry.Registry, bool) {
	reg, ok := e.cfg.Capabilities.(*registry.Registry)
	return reg, ok
}

// joinsCommit reports whether every call of calls, asked for before its
// run's first commit, may go out before that commit is durable: its
// provider is a callwrites.Joiner (its action is a write handed to the
// commit of the call's result) and the gate it asks first, if any, hands
// its answer to that commit too (joiningGate). Nothing of such a call acts
// outside the store: if the run's commit is lost (a crash) or fails, the
// call's writes and the gate's answer are lost or released with it
// (settled with the error, or dropped with a result that finds no run).
// Each call is marked so that its provider refuses it if its binding
// changed meanwhile (callwrites.Writes.MustJoin). Not on a cluster, whose
// runs may leave for another node. False when there is no call.
func (e *Engine) joinsCommit(calls []*pendingCall) bool {
	if len(calls) == 0 || e.cluster != nil {
		return false
	}
	for _, pc := range calls {
		if pc.asksGate {
			if g, ok := e.cfg.Gate.(joiningGate); !ok || !g.JoinsCallWrites(callwrites.Mark{}) {
				return false
			}
		}
		rt, ok := e.callRoute(e.ctx, pc)
		if !ok {
			return false
		}
		pc.joins, pc.joinsKnown = rt.JoinsWrites(), true
		if !pc.joins {
			return false
		}
	}
	for _, pc := range calls {
		pc.res.writes.MustJoin = true
	}
	return true
}

// now rounds the clock to microseconds so stored times round-trip exactly.
func (e *Engine) now() time.Time { return e.clock.Now().UTC().Truncate(time.Microsecond) }
