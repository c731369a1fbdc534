package runengine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// ClusterConfig makes the engine one node of several sharing one store
// (PostgreSQL): runs hash to Shards shards, each node holds leases on a
// balanced share of them and alone advances their runs, fires their timers
// and cron ticks, and every commit acting on a shard checks the shard's
// lease (its fencing token) in its transaction. One node at a time (the
// holder of the "dispatch" lease) dispatches the event outbox. A node that
// dies loses its leases at expiry and the others take its shards over and
// finish its runs; a node joining or leaving moves only its share.
//
// Commands may reach any node: a node starts a run in a shard it holds (one
// holding none yet writes the run and a due key the shard's owner picks up
// when woken through a store.Waker, else within 200ms); a task completion,
// decision, cancel, pause, resume or event delivery for a run another node
// owns is written to the owner's inbox (the due index) and answered once
// the owner applied it, with the owner's error when it refused it. A
// command refused because its run's shard changed hands meanwhile is sent
// again. Each node keeps its own share of the counters (the cockpit's),
// which readers sum.
//
// A node's Subscribe delivers every node's events: the node holding the
// dispatch lease copies the events of tenants with a subscriber on another
// node into a feed in the store, which that node reads (woken through a
// store.Waker, else every 200ms).
//
// Engine.Shards and Engine.Owns tell what a node holds.
type ClusterConfig struct {
	// NodeID names this node; it must be unique among the nodes sharing
	// the store. Required.
	NodeID string
	// Shards is the number of shards runs hash to; every node must use
	// the same number. Defaults to 32.
	Shards int
	// LeaseTTL is how long a node's leases outlive it: a node that stops
	// renewing (it died) loses its shards this long after its last
	// renewal. Leases are renewed every LeaseTTL/3. Defaults to 15s.
	LeaseTTL time.Duration
	// Clock judges lease expiry. Defaults to the wall clock (leases are
	// about processes being alive, not business time).
	Clock clock.Clock
}

// clusterPoll is how often a clustered node scans its shards' due index
// (the scheduler's safety tick) and the event outbox: work written by
// another node (a start, an inbox command, an event) waits at most this.
const clusterPoll = safetyTick

// dispatchLease is the lease of the node that dispatches the outbox.
const dispatchLease = "dispatch"

// handOutTTL is how long a clustered node's scheduler waits for a due key
// it handed out to be deleted before it hands it out again: a commit that
// failed (its shard moved, or it conflicted with another node's too often)
// leaves the key, whose handling is repeated. Timers, inbox commands and
// cron ticks are safe to repeat (a cron tick is claimed once).
const handOutTTL = 5 * time.Second

// adoptToken is the token of the due key a node writes for a run it
// started but whose shard another node owns: the owner advances it.
const adoptToken = "adopt"

// inboxPrefix starts the token of a due key carrying a command for a run
// another node owns (see forward).
const inboxPrefix = "inbox:"

// errNotOwner answers a command for a run whose shard this node lost
// while the command waited.
var errNotOwner = errs.Unavailablef("this node no longer owns the run's shard; try again")

func (c ClusterConfig) withDefaults() (ClusterConfig, error) {
	if c.NodeID == "" {
		return c, errors.New("runengine: ClusterConfig.NodeID is required")
	}
	if c.Shards == 0 {
		c.Shards = 32
	}
	if c.Shards < 1 || c.Shards > 4096 {
		return c, errors.Newf("runengine: ClusterConfig.Shards %d is outside 1..4096", c.Shards)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.LeaseTTL < 100*time.Millisecond {
		return c, errors.Newf("runengine: ClusterConfig.LeaseTTL %s is under 100ms", c.LeaseTTL)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c, nil
}

// cluster is a node's share of the shards.
type cluster struct {
	e   *Engine
	cfg ClusterConfig
	m   *lease.Manager

	// held is indexed by shard: the lease this node holds on it (Token 0
	// when it holds none). It is replaced whole, never changed.
	held     atomic.Pointer[[]lease.Lease]
	dispatch atomic.Pointer[lease.Lease] // nil unless this node dispatches

	leases map[int]lease.Lease // the loop's own view
	// unresumed are gained shards whose running runs are not yet resumed
	// (the read of the active index failed); nil when none.
	unresumed []bool
	kickCh    chan struct{}
	// signals holds, by wake-up topic, the queue (of one) of this node's
	// signal to the others. Made with the cluster, never changed.
	signals map[string]chan struct{}
	// feed is this node's side of the feed of events (see feedTo), the
	// dispatcher goroutine's own; fed says a commit wrote to the feed.
	feed    feed
	fed     atomic.Bool
	feedDue atomic.Bool // another node wrote to the feed
	quit    chan struct{}
	done    chan struct{}
	stop    sync.Once
	started atomic.Bool
	// opened is what Open read of the paused processes and running jobs,
	// which the first lease round uses rather than reading them again;
	// nil after it.
	opened *sharedState
}

// sharedState is what the nodes share that each keeps in memory: the
// paused processes, and the bulk jobs still running.
type sharedState struct {
	paused map[pausedRef]bool
	jobs   []jobRef
}

func newCluster(e *Engine, cfg ClusterConfig) (*cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := lease.New(lease.Config{Store: e.st, Clock: cfg.Clock, Owner: cfg.NodeID, TTL: cfg.LeaseTTL})
	if err != nil {
		return nil, err
	}
	c := &cluster{e: e, cfg: cfg, m: m, leases: map[int]lease.Lease{}, kickCh: make(chan struct{}, 1),
		signals: map[string]chan struct{}{topicDue: make(chan struct{}, 1), topicOutbox: make(chan struct{}, 1),
			topicFeed: make(chan struct{}, 1)},
		quit: make(chan struct{}), done: make(chan struct{})}
	none := make([]lease.Lease, cfg.Shards)
	c.held.Store(&none)
	return c, nil
}

// shardOf is the shard of a run (or of a due key's owner).
func (c *cluster) shardOf(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(c.cfg.Shards))
}

// owns reports whether this node holds the shard of id.
func (c *cluster) owns(id string) bool { return (*c.held.Load())[c.shardOf(id)].Token != 0 }

// fenceFor returns the lease a commit acting on run id must check: the
// shard's lease this node holds, or one that never passes when it holds
// none (the run's commit is then refused).
func (c *cluster) fenceFor(id string) *lease.Lease {
	i := c.shardOf(id)
	l := (*c.held.Load())[i]
	if l.Token == 0 {
		l = lease.Lease{Name: lease.ShardName(i), Owner: c.cfg.NodeID, Token: -1}
	}
	return &l
}

// current reports whether l is still the lease this node holds.
func (c *cluster) current(l *lease.Lease) bool {
	if l.Name == dispatchLease {
		d := c.dispatch.Load()
		return d != nil && d.Token == l.Token
	}
	for _, h := range *c.held.Load() {
		if h.Token != 0 && h.Name == l.Name {
			return h.Token == l.Token
		}
	}
	return false
}

// forget lets the scheduler hand out again the due keys it handed out:
// after shards changed hands, one handed out may have been dropped.
func (s *scheduler) forget() {
	s.mu.Lock()
	clear(s.inflight)
	s.mu.Unlock()
}

// check refuses, in tx, a write under a lease no longer held.
func (c *cluster) check(tx store.Txn, l *lease.Lease) error {
	if err := c.m.Check(tx, *l); err != nil {
		c.kick()
		return err
	}
	return nil
}

// fenceOwner returns an op checking, in its transaction, the lease of the
// shard of owner (a due key's owner); on one node it checks nothing.
func (c *cluster) fenceOwner(owner string) func(store.Txn) error {
	if c == nil {
		return func(store.Txn) error { return nil }
	}
	l := c.fenceFor(owner)
	return func(tx store.Txn) error { return c.check(tx, l) }
}

// fenceDispatch returns an op checking that this node still dispatches.
func (c *cluster) fenceDispatch() func(store.Txn) error {
	l := c.dispatch.Load()
	if l == nil {
		l = &lease.Lease{Name: dispatchLease, Owner: c.cfg.NodeID, Token: -1}
	}
	return func(tx store.Txn) error { return c.check(tx, l) }
}

// dispatching reports whether this node dispatches the outbox.
func (c *cluster) dispatching() bool { return c.dispatch.Load() != nil }

func (c *cluster) kick() {
	select {
	case c.kickCh <- struct{}{}:
	default:
	}
}

// start takes this node's first share of the shards, then keeps it
// balanced in the background.
func (c *cluster) start(ctx context.Context) error {
	if err := c.round(ctx); err != nil {
		return errors.Wrap(err, "runengine: join the cluster")
	}
	c.started.Store(true)
	go c.loop()
	if w, ok := c.e.st.(store.Waker); ok {
		c.listen(w)
	}
	return nil
}

// Wake-up topics (store.Waker): a due key for another node's shard was
// written (an adopted start, an inbox command), or events went to the
// outbox on a node that does not dispatch it.
const (
	topicDue    = "due"
	topicOutbox = "outbox"
)

// listen wakes this node's scheduler and dispatcher when another node
// signals work for them, and sends this node's signals, so a handover
// waits for a notification rather than the next poll (clusterPoll, which
// still runs: a signal is a hint and may be lost).
func (c *cluster) listen(w store.Waker) {
	ctx := c.e.ctx
	go func() {
		_ = w.Listen(ctx, topicDue, c.e.sched.wake)
	}()
	go func() {
		_ = w.Listen(ctx, topicOutbox, func() {
			if c.dispatching() {
				c.e.disp.kick()
			}
		})
	}()
	go func() {
		_ = w.Listen(ctx, topicFeed, func() {
			c.feedDue.Store(true)
			c.e.disp.wake()
		})
	}()
	for topic, ch := range c.signals {
		go func() {
			warned := false
			for {
				select {
				case <-ctx.Done():
					return
				case <-ch:
				}
				// A database without NOTIFY (CockroachDB) fails every time:
				// said once, the nodes then rely on their poll.
				if err := w.Wake(ctx, topic); err != nil && !warned && !c.e.isClosed() {
					warned = true
					c.e.log.Warn("runengine: wake the other nodes; they will find the work at their next poll", "topic", topic, "error", err)
				}
			}
		}()
	}
}

// signal wakes the other nodes about topic (coalesced; dropped when the
// store cannot wake them: nothing reads the queue then).
func (c *cluster) signal(topic string) {
	if ch := c.signals[topic]; ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (c *cluster) loop() {
	defer close(c.done)
	for {
		t := c.cfg.Clock.NewTimer(c.cfg.LeaseTTL / 3)
		select {
		case <-c.quit:
			t.Stop()
			return
		case <-t.C():
		case <-c.kickCh:
			t.Stop()
		}
		ctx, cancel := context.WithTimeout(c.e.ctx, c.cfg.LeaseTTL/3)
		if err := c.round(ctx); err != nil && !c.e.isClosed() {
			c.e.log.Warn("runengine: cluster lease round failed; retrying", "node", c.cfg.NodeID, "error", err)
		}
		cancel()
	}
}

// round renews and rebalances this node's leases, and adjusts the work to
// what it now holds: runs of shards it lost are dropped from memory, runs
// of shards it gained are read back from the store and resumed.
func (c *cluster) round(ctx context.Context) error {
	got, err := c.m.Balance(ctx, c.cfg.Shards, c.leases)
	if got == nil {
		got = map[int]lease.Lease{}
	}
	d, derr := c.m.Acquire(ctx, dispatchLease)
	if derr != nil {
		c.dispatch.Store(nil)
		if !errors.Is(derr, lease.ErrHeld) && err == nil {
			err = derr
		}
	} else {
		was := c.dispatch.Load()
		c.dispatch.Store(&d)
		if was == nil || was.Token != d.Token {
			c.e.disp.kick()
		}
		if serr := c.sweepAnswers(ctx); serr != nil && err == nil {
			err = serr
		}
		if serr := c.trimFeed(ctx); serr != nil && err == nil {
			err = serr
		}
	}
	old := c.leases
	c.leases = got
	held := make([]lease.Lease, c.cfg.Shards)
	changed := make([]bool, c.cfg.Shards)
	var gained []bool
	any := false
	for i := range held {
		held[i] = got[i]
		if old[i].Token != got[i].Token {
			changed[i], any = true, true
			if got[i].Token != 0 {
				if gained == nil {
					gained = make([]bool, c.cfg.Shards)
				}
				gained[i] = true
			}
		}
	}
	c.held.Store(&held)
	if serr := c.syncShared(ctx); serr != nil && err == nil {
		err = serr
	}
	if any {
		var won, lost []int
		for i, ch := range changed {
			switch {
			case ch && held[i].Token != 0:
				won = append(won, i)
			case ch:
				lost = append(lost, i)
			}
		}
		c.e.log.Info("runengine: this node's shards changed hands (lease)", "node", c.cfg.NodeID, "gained", won, "lost", lost)
		for _, w := range c.e.workers {
			w.send(&command{kind: cmdDropShards, cl: &clusterArgs{shards: changed}})
		}
		c.e.sched.forget()
		for i, g := range gained {
			if g {
				if c.unresumed == nil {
					c.unresumed = make([]bool, c.cfg.Shards)
				}
				c.unresumed[i] = true
			}
		}
		c.e.sched.wake()
	}
	if c.unresumed != nil {
		// Not bounded by the round: the active index may be long. A failed
		// read is tried again next round, so no gained run is left behind.
		if rerr := c.resume(c.e.ctx, c.unresumed); rerr != nil {
			if err == nil {
				err = rerr
			}
		} else {
			c.unresumed = nil
		}
	}
	return err
}

// resume re-enqueues the running runs of the gained shards (the active
// index alone is read).
func (c *cluster) resume(ctx context.Context, gained []bool) error {
	type ref struct{ tenant, id string }
	var refs []ref
	err := c.e.st.View(ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "active"), KeysOnly: true},
			func(key, _ []byte) error {
				parts, err := store.DecodeKey(key)
				if err != nil || len(parts) != 4 {
					return errors.Newf("runengine: bad active key %q", key)
				}
				id := parts[3].(string)
				if gained[c.shardOf(id)] {
					refs = append(refs, ref{parts[2].(string), id})
				}
				return nil
			})
	})
	if err != nil {
		return errors.Wrap(err, "runengine: read the active runs of gained shards")
	}
	for _, rf := range refs {
		c.e.workerFor(rf.id).send(&command{kind: cmdAdvance, tenant: rf.tenant, runID: rf.id})
	}
	return nil
}

// close stops the lease upkeep and gives the leases up, so the other
// nodes take the shards over at once.
func (c *cluster) close() {
	c.stop.Do(func() {
		close(c.quit)
		if !c.started.Load() {
			return
		}
		<-c.done
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LeaseTTL/3)
		defer cancel()
		for _, l := range c.leases {
			_ = c.m.Release(ctx, l)
		}
		if d := c.dispatch.Load(); d != nil {
			_ = c.m.Release(ctx, *d)
		}
		// Leave the members at once (the others rebalance next round).
		if l, err := c.m.Heartbeat(ctx); err == nil {
			_ = c.m.Release(ctx, l)
		}
	})
}

// route hands c to the worker of its run when this node owns the run's
// shard (always on one node); otherwise a start is written for the owner
// to adopt, and another command goes to the owner's inbox.
func (e *Engine) route(c *command) {
	if e.cluster == nil || c.kind == cmdStart || e.cluster.owns(c.runID) {
		e.workerFor(c.runID).send(c)
		return
	}
	switch c.kind {
	case cmdEvent, cmdCompleteTask, cmdDecide, cmdCancel, cmdPause, cmdResume:
		go e.cluster.forward(c)
	default:
		e.workerFor(c.runID).send(c) // the worker refuses it (notMine)
	}
}

// notMine ends a command for a run of a shard this node does not hold: it
// is answered errNotOwner, and the run is dropped from memory.
func (w *worker) notMine(c *command) {
	k := runKeyOf(c.tenant, c.runID)
	if en, ok := w.cache[k]; ok {
		for _, h := range en.replies {
			h.ch <- reply{err: errNotOwner}
		}
		en.dropHeld(errNotOwner) // the owner makes them
		delete(w.cache, k)
		w.unidle(k)
	}
	w.unread(c, errNotOwner) // its due key is let go: the owner applies it
}

// dropShards forgets the runs of the shards whose lease changed hands:
// what this node kept of them may be stale, or no longer its to change.
// A run it read (or started) under the lease it holds now is kept: it was
// read once the shard was gained, so it is what the store holds, and its
// commit and calls may be in flight, whose outcome only this entry would
// act on (the resume of the gained shard may have read the active runs
// before that commit landed, and a fresh read of the run would drop the
// calls' results as stale).
func (w *worker) dropShards(changed []bool) {
	cl := w.e.cluster
	held := *cl.held.Load()
	for k, en := range w.cache {
		i := cl.shardOf(en.run.ID)
		if !changed[i] || en.fence != nil && en.fence.Token > 0 && en.fence.Token == held[i].Token {
			continue
		}
		for _, h := range en.replies {
			h.ch <- reply{err: errNotOwner}
		}
		en.replies = nil
		en.dropHeld(errNotOwner) // the owner makes them
		delete(w.cache, k)
		w.unidle(k)
	}
}

// clusterArgs are what a cluster node adds to a command: the shards a
// cmdDropShards drops; the due key a forwarded command came in, removed in
// the commit applying it.
type clusterArgs struct {
	shards []bool
	inbox  []byte
}

// inboxCommand is a command for a run another node owns, kept in the due
// index until the owner applies it.
type inboxCommand struct {
	Kind   cmdKind `json:"kind"`
	Tenant string  `json:"tenant"`
	RunID  string  `json:"run_id"`
	Actor  string  `json:"actor,omitempty"`
	Job    string  `json:"job,omitempty"`

	TaskID string         `json:"task_id,omitempty"`
	Action string         `json:"action,omitempty"`
	Fields map[string]any `json:"fields,omitempty"`

	ApprovalID string         `json:"approval_id,omitempty"`
	Approve    bool           `json:"approve,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Digest     string         `json:"digest,omitempty"`
	Aliases    []string       `json:"aliases,omitempty"`

	Event     string         `json:"event,omitempty"`
	EventID   string         `json:"event_id,omitempty"`
	EventData map[string]any `json:"event_data,omitempty"`
	WaiterKey []byte         `json:"waiter_key,omitempty"`
}

func toInbox(c *command) inboxCommand {
	in := inboxCommand{Kind: c.kind, Tenant: c.tenant, RunID: c.runID, Actor: c.actor, Job: c.job}
	if t := c.task; t != nil {
		in.TaskID, in.Action, in.Fields = t.taskID, t.action, t.fields
	}
	if d := c.decide; d != nil {
		in.ApprovalID, in.Approve, in.Args, in.Reason, in.Digest, in.Aliases = d.approvalID, d.approve, d.args, d.reason, d.digest, d.aliases
	}
	if ev := c.event; ev != nil {
		in.Event, in.EventID, in.EventData, in.WaiterKey = ev.name, ev.id, ev.data, ev.key
	}
	return in
}

func (in inboxCommand) command(key []byte) *command {
	c := &command{kind: in.Kind, tenant: in.Tenant, runID: in.RunID, actor: in.Actor, job: in.Job, cl: &clusterArgs{inbox: key}}
	switch in.Kind {
	case cmdCompleteTask:
		c.task = &taskArgs{taskID: in.TaskID, action: in.Action, fields: in.Fields}
	case cmdDecide:
		c.decide = &decideArgs{approvalID: in.ApprovalID, approve: in.Approve, args: in.Args, reason: in.Reason, digest: in.Digest,
			aliases: in.Aliases}
	case cmdEvent:
		c.event = &eventArgs{name: in.Event, id: in.EventID, data: in.EventData, key: in.WaiterKey}
	}
	return c
}

// forward writes c to the inbox of the node owning its run: a due key,
// due now, carrying the command. An event delivery is answered once that
// write is durable (the owner applies it exactly once, removing the key in
// the same commit); an API command is answered once the owner applied it,
// with the run, task or approval as the store then holds them.
func (c *cluster) forward(cmd *command) {
	e := c.e
	raw, err := json.Marshal(toInbox(cmd))
	if err == nil {
		id := e.ids.New("inb", e.now())
		key := dueKey(e.clock.Now(), cmd.tenant, cmd.runID, inboxPrefix+id)
		err = e.st.Update(e.ctx, func(tx store.Txn) error { return tx.Set(key, raw) })
		if err == nil {
			c.signal(topicDue)
		}
		if err == nil && cmd.kind != cmdEvent && cmd.reply != nil {
			var refused error
			if refused, err = c.awaitApplied(key); err == nil && refused != nil {
				cmd.reply <- reply{err: refused}
				return
			}
		}
	}
	if cmd.reply == nil {
		if err != nil && !e.isClosed() {
			e.log.Error("runengine: forward a command to the run's node", "run", cmd.runID, "error", err)
		}
		return
	}
	rep := reply{err: err}
	if err == nil && cmd.kind != cmdEvent {
		ctx := e.ctx
		rep.run, rep.err = e.GetRun(ctx, cmd.tenant, cmd.runID)
		if rep.err == nil && cmd.task != nil {
			rep.task, rep.err = e.GetTask(ctx, cmd.tenant, cmd.task.taskID)
		}
		if rep.err == nil && cmd.decide != nil {
			rep.approval, rep.err = e.GetApproval(ctx, cmd.tenant, cmd.decide.approvalID)
		}
		if rep.err == nil && cmd.view {
			rep.view, rep.err = appendRun(nil, rep.run, false)
			rep.run = nil
		}
		if rep.err == nil && cmd.job != "" {
			// The owner marked the run as the job's if the action changed it.
			rep.changed, rep.err = e.jobMarked(cmd.tenant, cmd.job, cmd.runID)
		}
	}
	cmd.reply <- rep
}

// inboxWait is how often a forwarding node looks whether the owner applied
// its command.
const inboxWait = 10 * time.Millisecond

// awaitApplied waits until the owner removed the inbox key key (it did so
// in the commit applying the command), and returns the error the owner
// refused the command with, if it did (see answerInbox).
func (c *cluster) awaitApplied(key []byte) (refused error, err error) {
	e := c.e
	t := time.NewTicker(inboxWait)
	defer t.Stop()
	answer := inboxAnswerKey(key)
	for {
		gone := false
		var raw []byte
		err := e.st.View(e.ctx, func(r store.Reader) error {
			_, err := r.Get(key)
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			gone = true
			raw, err = r.Get(answer)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if gone {
			if raw == nil {
				return nil, nil
			}
			if err := e.st.Update(e.ctx, func(tx store.Txn) error { return tx.Delete(answer) }); err != nil {
				e.log.Warn("runengine: remove an inbox answer", "key", string(answer), "error", err)
			}
			return decodeRefusal(raw), nil
		}
		select {
		case <-e.ctx.Done():
			return nil, errClosed
		case <-t.C:
		}
	}
}

// inboxAnswerKey is where the owner of a run writes why it refused the
// command of inbox key key, in the commit removing key; the forwarding
// node reads it, answers its caller with it and removes it.
func inboxAnswerKey(key []byte) []byte {
	return append(inboxAnswerPrefix(), key...)
}

func inboxAnswerPrefix() []byte { return store.Key(store.System, "inbox-answer") }

// inboxAnswerTTL is how long an answer to a forwarded command waits to be
// read. The forwarding node reads it within inboxWait of its writing while
// it lives, so one older was left by a node that died (or closed) while
// it waited, and is removed.
const inboxAnswerTTL = time.Minute

// maxAnswerSweep bounds the answers one sweep removes.
const maxAnswerSweep = 1000

// sweepAnswers removes the answers to forwarded commands written more than
// inboxAnswerTTL ago (by the cluster's clock): their forwarding nodes died
// waiting for them. The node dispatching the outbox does it, each lease
// round; the prefix is empty but for answers being read, so a look costs
// one short scan.
func (c *cluster) sweepAnswers(ctx context.Context) error {
	before := c.cfg.Clock.Now().Add(-inboxAnswerTTL)
	var old [][]byte
	err := c.e.st.View(ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: inboxAnswerPrefix()}, func(key, raw []byte) error {
			var a refusal
			if json.Unmarshal(raw, &a) != nil || a.At.Before(before) {
				old = append(old, append([]byte(nil), key...))
			}
			if len(old) == maxAnswerSweep {
				return store.ErrStop
			}
			return nil
		})
	})
	if err != nil || len(old) == 0 {
		return errors.Wrap(err, "runengine: read the answers of forwarded commands")
	}
	err = c.e.deleteKeys(ctx, old)
	return errors.Wrap(err, "runengine: remove the answers forwarding nodes left")
}

// refusal is an error carried from the node that refused a forwarded
// command to the node whose caller waits: its kind, public message and
// violations, so the caller gets the status one node would give.
type refusal struct {
	Kind       string           `json:"kind,omitempty"`
	Msg        string           `json:"msg"`
	Violations []errs.Violation `json:"violations,omitempty"`
	// At is when the answer was written (by the cluster's clock): one
	// left unread past inboxAnswerTTL is removed (see sweepAnswers).
	At time.Time `json:"at"`
}

var refusalKinds = map[string]error{"invalid": errs.Invalid, "not_found": errs.NotFound, "conflict": errs.Conflict,
	"forbidden": errs.Forbidden, "unauthenticated": errs.Unauthenticated, "too_large": errs.TooLarge,
	"rate_limited": errs.RateLimited, "unavailable": errs.Unavailable}

// answerInbox queues, in x's commit, the answer to the forwarded command x
// refused with x.err.
func (x *exec) answerInbox(key []byte) {
	raw, err := encodeRefusal(x.err, x.w.e.cluster.cfg.Clock.Now())
	if err != nil {
		return // the caller then gets the run as stored
	}
	x.fx.ops = append(x.fx.ops, setKey(inboxAnswerKey(key), raw))
}

// refuseInbox removes the inbox key of a forwarded command whose run could
// not be read (and the waiter key of a forwarded event delivery, when
// waiter is set), answering it with cause when its sender waits for an
// answer (answer).
func (w *worker) refuseInbox(key, waiter []byte, answer bool, cause error) {
	raw, err := encodeRefusal(cause, w.e.cluster.cfg.Clock.Now())
	w.e.commits.submit(&delta{apply: func(tx store.Txn) error {
		if waiter != nil {
			if err := tx.Delete(waiter); err != nil {
				return err
			}
		}
		if answer && err == nil {
			if err := tx.Set(inboxAnswerKey(key), raw); err != nil {
				return err
			}
		}
		return tx.Delete(key)
	}, after: func(error) { w.e.sched.done(key) }})
}

func encodeRefusal(cause error, at time.Time) ([]byte, error) {
	r := refusal{Msg: errs.PublicMessage(cause), Violations: errs.Violations(cause), At: at.UTC()}
	if r.Msg == "" {
		r.Msg = cause.Error()
	}
	kind := errs.Kind(cause)
	for name, k := range refusalKinds {
		if k == kind {
			r.Kind = name
		}
	}
	return json.Marshal(r)
}

// decodeRefusal makes the error an answer carries.
func decodeRefusal(raw []byte) error {
	var r refusal
	if err := json.Unmarshal(raw, &r); err != nil {
		return errors.Wrap(err, "runengine: read a forwarded command's answer")
	}
	if len(r.Violations) > 0 {
		return errs.Validation(r.Violations...)
	}
	switch refusalKinds[r.Kind] {
	case errs.NotFound:
		return errs.NotFoundf("%s", r.Msg)
	case errs.Conflict:
		return errs.Conflictf("%s", r.Msg)
	case errs.Forbidden:
		return errs.Forbiddenf("%s", r.Msg)
	case errs.Unauthenticated:
		return errs.Unauthenticatedf("%s", r.Msg)
	case errs.TooLarge:
		return errs.TooLargef("%s", r.Msg)
	case errs.Unavailable:
		return errs.Unavailablef("%s", r.Msg)
	case errs.Invalid:
		return errs.Invalidf(nil, "value_error", "%s", r.Msg)
	case errs.RateLimited:
		return errs.RateLimitedAfter(time.Second)
	}
	return errors.Newf("runengine: the run's node refused the command: %s", r.Msg)
}

// fireInbox hands a forwarded command to the worker of its run.
func (s *scheduler) fireInbox(d dueItem) {
	e := s.e
	var raw []byte
	err := e.st.View(e.ctx, func(r store.Reader) error {
		var err error
		raw, err = r.Get(d.key)
		return err
	})
	var in inboxCommand
	if err == nil {
		err = json.Unmarshal(raw, &in)
	}
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			e.log.Error("runengine: read an inbox command", "key", string(d.key), "error", err)
		}
		s.done(d.key)
		return
	}
	e.workerFor(in.RunID).send(in.command(d.key))
}

// tickFired reports whether the tick at of a schedule whose last fired
// tick is kept at last has fired.
func tickFired(r store.Reader, last []byte, at time.Time) (bool, error) {
	raw, err := r.Get(last)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(raw) == 8 && int64(binary.BigEndian.Uint64(raw)) >= at.UnixNano(), nil
}

// errTickFired refuses the second firing of a cron tick.
var errTickFired = errs.Conflictf("this schedule tick has fired already")

// claimTick records, in the tick's transaction, that the tick at fired,
// and refuses it when it had: a tick fires once whatever the nodes.
func claimTick(tx store.Txn, last []byte, at time.Time) error {
	fired, err := tickFired(tx, last, at)
	if err != nil {
		return err
	}
	if fired {
		return errTickFired
	}
	return tx.Set(last, binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())))
}

// cronLast is the key holding the last fired tick of a schedule.
func cronLast(tenant, processID string) []byte {
	return store.Key(tenant, "cron-last", processID)
}

// isInbox reports whether a due key's token carries a forwarded command.
func isInbox(token string) bool { return strings.HasPrefix(token, inboxPrefix) }

// refuseFenced answers the deltas of batch acting under a lease this node
// no longer holds with lease.ErrFenced, and returns the others.
func (c *committer) refuseFenced(batch []*delta) []*delta {
	keep := batch[:0:0]
	for _, d := range batch {
		if d.fence == nil || c.cl.current(d.fence) {
			keep = append(keep, d)
			continue
		}
		if d.after != nil {
			d.after(errors.Wrapf(lease.ErrFenced, "runengine: %s is no longer this node's", d.fence.Name))
		}
	}
	return keep
}

// checkFences checks, in tx, each lease the deltas of batch act under
// (each once).
func (c *committer) checkFences(tx store.Txn, batch []*delta) error {
	var seen []*lease.Lease
next:
	for _, d := range batch {
		if d.fence == nil {
			continue
		}
		for _, s := range seen {
			if s.Name == d.fence.Name && s.Token == d.fence.Token {
				continue next
			}
		}
		seen = append(seen, d.fence)
		if err := c.cl.check(tx, d.fence); err != nil {
			return err
		}
	}
	return nil
}

// Shards returns the shards this node holds, in order (nil on one node,
// where the engine holds no leases and runs everything).
func (e *Engine) Shards() []int {
	if e.cluster == nil {
		return nil
	}
	var out []int
	for i, l := range *e.cluster.held.Load() {
		if l.Token != 0 {
			out = append(out, i)
		}
	}
	return out
}

// fence is the lease a commit acting on id (a run, a job) checks; nil on
// one node.
func (e *Engine) fence(id string) *lease.Lease {
	if e.cluster == nil {
		return nil
	}
	return e.cluster.fenceFor(id)
}

// syncShared catches up, each lease round, with what other nodes changed
// that this one keeps in memory: which processes are paused, and the bulk
// jobs of its shards that no node runs here yet.
// The first round, Open's, uses what Open read (c.opened).
func (c *cluster) syncShared(ctx context.Context) error {
	e := c.e
	var paused map[pausedRef]bool
	var jobs []jobRef
	if o := c.opened; o != nil {
		c.opened = nil
		paused, jobs = o.paused, o.jobs
	} else {
		var err error
		if paused, jobs, err = e.readPausesAndJobs(ctx); err != nil {
			return err
		}
	}
	e.pausedProcs.Range(func(k, _ any) bool {
		if ref := k.(pausedRef); !paused[ref] {
			e.markPaused(ref.tenant, ref.process, false)
		}
		return true
	})
	for ref := range paused {
		e.markPaused(ref.tenant, ref.process, true)
	}
	e.sched.releaseResumed(paused)
	for _, j := range jobs {
		e.startJob(j.tenant, j.id)
	}
	return nil
}

// moving answers a command refused over and over because its run's shard
// kept changing hands.
var moving = errs.Unavailablef("the run's shard is moving between nodes; try again")

// again sends c once more when its first try was refused because the
// run's shard changed hands while it ran (nothing of it was written): the
// new owner, or this node's inbox to it, takes it. It gives up, with a
// 503, after a few tries.
func (c *cluster) again(ctx context.Context, cmd *command, r reply) (reply, error) {
	for try := 1; handedOver(r.err); try++ {
		if try > 5 {
			return reply{}, errors.WithSecondaryError(moving, r.err)
		}
		if !c.reclaim(ctx, cmd.runID) {
			t := time.NewTimer(time.Duration(try) * 20 * time.Millisecond) // the lease round catches up
			select {
			case <-ctx.Done():
				t.Stop()
				return reply{}, errors.WithStack(ctx.Err())
			case <-t.C:
			}
		}
		retry := *cmd
		retry.reply = make(chan reply, 1)
		c.e.route(&retry)
		select {
		case r = <-retry.reply:
		case <-ctx.Done():
			return reply{}, errors.WithStack(ctx.Err())
		}
	}
	return r, r.err
}

// reclaim renews at once the lease of runID's shard, when this node holds
// it and it lapsed with nobody taking it since (lease.Manager.Reclaim): a
// lease round that came late, the machine or the database slow. A command
// refused for the lapse is then tried again at once, instead of after the
// next round (and answered 503 when that round is slower than again's
// tries). The node keeps the lease's token, so nothing it holds of the
// shard is dropped. It reports whether it renewed the lease.
func (c *cluster) reclaim(ctx context.Context, runID string) bool {
	l := c.fenceFor(runID)
	if l.Token <= 0 {
		return false
	}
	_, err := c.m.Reclaim(ctx, *l)
	return err == nil
}

// handedOver reports whether err refused a command because its run's shard
// changed hands (lease.ErrFenced, errNotOwner). errors.Is would not do:
// both are marked errs.Conflict or errs.Unavailable, and so is any refusal
// of that kind (a cancel of a finished run, say), which is final.
func handedOver(err error) bool {
	_, ok := errors.If(err, func(e error) (any, bool) { return nil, e == lease.ErrFenced || e == errNotOwner })
	return ok
}

// Clustered reports whether the engine is a node of a cluster
// (Config.Cluster).
func (e *Engine) Clustered() bool { return e.cluster != nil }

// Owns reports whether this node owns the shard of id (a run id, or the
// id of other work spread like runs: a webhook delivery); always true on
// one node.
func (e *Engine) Owns(id string) bool { return e.cluster == nil || e.cluster.owns(id) }

// newRunID makes a new run's id. On a cluster node that holds shards it
// is the id of a run of one of them, so that a run started here is
// advanced here, with no handover (a few ids are drawn at most).
func (e *Engine) newRunID() string {
	now := e.now()
	id := e.ids.New("run", now)
	if e.cluster == nil {
		return id
	}
	for try := 0; try < 64 && !e.cluster.owns(id); try++ {
		id = e.ids.New("run", now)
	}
	return id
}

// The feed lets a subscriber on any node see every node's events. A node
// with subscribers (Subscribe, GET /v1/stream) says so for each of their
// tenants with a presence key; the node dispatching events, in the commit
// that takes them out of the outbox, copies the events of tenants with a
// subscriber on another node into the feed (keys ordered by event id, so
// by time), and the nodes with subscribers read the feed and hand what is
// new to them (an event a node made or dispatched itself was handed over
// then, and is not handed again). The dispatching node trims the feed to
// feedTTL every lease round. Nobody pays for it while only the
// dispatching node has subscribers.
const (
	// feedTTL is how long an event stays in the feed.
	feedTTL = time.Minute
	// feedWindow is how far before the newest event read a node reads the
	// feed again: an event made a moment earlier may reach the feed later.
	feedWindow = 5 * time.Second
	// topicFeed wakes the nodes reading the feed.
	topicFeed = "feed"
)

func feedKey(id string) []byte { return store.Key(store.System, "feed", id) }

func feedPrefix() []byte { return store.Key(store.System, "feed") }

// feedSubKey is the presence key of a node with subscribers of tenant; it
// holds when it lapses (UnixNano on the cluster's clock).
func feedSubKey(tenant, node string) []byte { return store.Key(store.System, "feed-sub", tenant, node) }

// feed is a node's side of the feed; the dispatcher goroutine alone uses
// it.
type feed struct {
	// present are the tenants this node's presence keys say, with when
	// each lapses.
	present map[string]time.Time
	// after is the time of the newest event read from the feed (zero when
	// the node has no subscriber); read is when the feed was last read.
	after, read time.Time
	// subs are the tenants with a subscriber on another node, read at
	// subsRead (see feedSubs).
	subs     map[string]bool
	subsRead time.Time
}

// feedSubs returns the tenants with a subscriber on another node (nil
// when none), as their presence keys say: read again at most every
// clusterPoll (so a subscription's first events may miss the feed for that
// long), and by the dispatcher goroutine only.
func (c *cluster) feedSubs() map[string]bool {
	f := &c.feed
	if time.Since(f.subsRead) < clusterPoll {
		return f.subs
	}
	now := c.cfg.Clock.Now().UnixNano()
	var subs map[string]bool
	err := c.e.st.View(c.e.ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "feed-sub")}, func(key, val []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) != 4 {
				return errors.Newf("runengine: bad feed presence key %q", key)
			}
			if parts[3].(string) == c.cfg.NodeID || len(val) != 8 || int64(binary.BigEndian.Uint64(val)) < now {
				return nil
			}
			if subs == nil {
				subs = map[string]bool{}
			}
			subs[parts[2].(string)] = true
			return nil
		})
	})
	if err != nil {
		if !c.e.isClosed() {
			c.e.log.Warn("runengine: read which tenants other nodes' subscribers follow", "error", err)
		}
		return f.subs // the last known, until a read succeeds
	}
	f.subs, f.subsRead = subs, time.Now()
	return subs
}

// feedTo adds to tx, the commit taking evs out of the outbox, the copy in
// the feed of the events of the tenants of wanted (see feedSubs).
func (c *cluster) feedTo(tx store.Txn, evs []*Event, wanted map[string]bool) error {
	if wanted == nil {
		return nil
	}
	fed := false
	for _, ev := range evs {
		if !wanted[ev.Tenant] {
			continue
		}
		raw, err := ev.appendJSON(nil)
		if err != nil {
			return errors.Wrapf(err, "encode event %s", ev.Name)
		}
		if err := tx.Set(feedKey(ev.ID), raw); err != nil {
			return err
		}
		fed = true
	}
	if fed {
		c.fed.Store(true)
	}
	return nil
}

// fedSignal wakes the nodes reading the feed after a commit that wrote to
// it.
func (c *cluster) fedSignal() {
	if c.fed.Swap(false) {
		c.signal(topicFeed)
	}
}

// readFeed keeps this node's presence keys true to its subscribers, and
// hands them the events the feed holds that they were not handed yet: when
// another node signals it wrote to the feed, else every clusterPoll. The
// dispatcher calls it each time it wakes.
func (c *cluster) readFeed(d *dispatcher) error {
	e := c.e
	f := &c.feed
	tenants := e.hub.subscribed()
	if err := c.present(tenants); err != nil {
		return err
	}
	if len(tenants) == 0 {
		f.after = time.Time{}
		return nil
	}
	if f.after.IsZero() {
		f.after = e.now()
	} else if !c.feedDue.Swap(false) && time.Since(f.read) < clusterPoll {
		return nil
	}
	f.read = time.Now()
	opts := store.ScanOptions{Prefix: feedPrefix(), After: feedKey(ids.Floor("evt", f.after.Add(-feedWindow)))}
	for {
		var evs []*Event
		err := e.st.View(e.ctx, func(r store.Reader) error {
			return r.Scan(opts, func(key, val []byte) error {
				ev := new(Event)
				if err := json.Unmarshal(val, ev); err != nil {
					return errors.Wrap(err, "runengine: decode a feed event")
				}
				opts.After = append(opts.After[:0:0], key...)
				evs = append(evs, ev)
				if len(evs) == dispatchPage {
					return store.ErrStop
				}
				return nil
			})
		})
		if err != nil {
			return errors.Wrap(err, "runengine: read the feed")
		}
		for _, ev := range evs {
			if ev.At.After(f.after) {
				f.after = ev.At
			}
		}
		d.show(evs)
		if len(evs) < dispatchPage {
			return nil
		}
	}
}

// present writes (or renews, when half its life is gone) the presence key
// of each of tenants, and removes those of tenants no longer subscribed
// to here.
func (c *cluster) present(tenants []string) error {
	f := &c.feed
	now := c.cfg.Clock.Now()
	lapse := now.Add(2 * c.cfg.LeaseTTL)
	var set, gone []string
	for _, t := range tenants {
		if until, ok := f.present[t]; !ok || until.Sub(now) < c.cfg.LeaseTTL {
			set = append(set, t)
		}
	}
	for t := range f.present {
		if !slices.Contains(tenants, t) {
			gone = append(gone, t)
		}
	}
	if len(set) == 0 && len(gone) == 0 {
		return nil
	}
	val := binary.BigEndian.AppendUint64(nil, uint64(lapse.UnixNano()))
	err := c.e.st.Update(c.e.ctx, func(tx store.Txn) error {
		for _, t := range set {
			if err := tx.Set(feedSubKey(t, c.cfg.NodeID), val); err != nil {
				return err
			}
		}
		for _, t := range gone {
			if err := tx.Delete(feedSubKey(t, c.cfg.NodeID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return errors.Wrap(err, "runengine: say which tenants this node's subscribers follow")
	}
	if f.present == nil {
		f.present = map[string]time.Time{}
	}
	for _, t := range set {
		f.present[t] = lapse
	}
	for _, t := range gone {
		delete(f.present, t)
	}
	return nil
}

// trimFeed removes the events older than feedTTL from the feed, and the
// presence keys that lapsed (their nodes died). The dispatching node does
// it each lease round.
func (c *cluster) trimFeed(ctx context.Context) error {
	e := c.e
	until := feedKey(ids.Floor("evt", e.now().Add(-feedTTL)))
	now := c.cfg.Clock.Now().UnixNano()
	var old [][]byte
	err := e.st.View(ctx, func(r store.Reader) error {
		err := r.Scan(store.ScanOptions{Prefix: feedPrefix(), KeysOnly: true}, func(key, _ []byte) error {
			if string(key) >= string(until) || len(old) == maxAnswerSweep {
				return store.ErrStop
			}
			old = append(old, append([]byte(nil), key...))
			return nil
		})
		if err != nil {
			return err
		}
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "feed-sub")}, func(key, val []byte) error {
			if len(val) != 8 || int64(binary.BigEndian.Uint64(val)) < now {
				old = append(old, append([]byte(nil), key...))
			}
			return nil
		})
	})
	if err != nil || len(old) == 0 {
		return errors.Wrap(err, "runengine: read the feed")
	}
	err = e.deleteKeys(ctx, old)
	return errors.Wrap(err, "runengine: trim the feed")
}
