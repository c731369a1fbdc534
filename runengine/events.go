package runengine

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/filter"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Event is an event on the bus.
type Event struct {
	ID     string         `json:"id"`
	Tenant string         `json:"tenant"`
	Name   string         `json:"name"`
	Data   map[string]any `json:"data"`
	At     time.Time      `json:"at"`
	// EmittedBy is who published the event from outside: the API key or
	// user of POST /v1/events, the provider id for a plugin's event
	// ("plugin.<name>"; "provider" for another provider's); empty
	// for the events the workspace's apps and engine emit.
	EmittedBy string `json:"emitted_by,omitempty"`
	// Cause is the run that emitted the event and its chain; nil for
	// events no run emitted.
	Cause *Cause `json:"cause,omitempty"`
}

// appendJSON appends the event's JSON, what json.Marshal writes for it,
// without reflection (every engine change writes events).
func (ev *Event) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsonvalue.AppendString(b, ev.ID)
	b = append(b, `,"tenant":`...)
	b = jsonvalue.AppendString(b, ev.Tenant)
	b = append(b, `,"name":`...)
	b = jsonvalue.AppendString(b, ev.Name)
	b = append(b, `,"data":`...)
	b, err := jsonvalue.Append(b, ev.Data)
	if err != nil {
		return b, err
	}
	b = append(b, `,"at":`...)
	if b, err = jsonvalue.AppendTime(b, ev.At); err != nil {
		return b, err
	}
	if ev.EmittedBy != "" {
		b = append(b, `,"emitted_by":`...)
		b = jsonvalue.AppendString(b, ev.EmittedBy)
	}
	if ev.Cause != nil {
		b = append(b, `,"cause":`...)
		b = ev.Cause.appendJSON(b)
	}
	return append(b, '}'), nil
}

func outboxKey(id string) []byte { return store.Key(store.System, "outbox", id) }

// outboxWants reports whether an event would be written (outboxWrite
// writes nothing otherwise): a tap wants it, or a trigger or subscriber
// consumes it.
func (e *Engine) outboxWants(tenant, name string) bool {
	return (e.cfg.Tap != nil && e.cfg.Tap.Wants(tenant, name)) || e.heard(tenant, name) || e.hub.wants(tenant)
}

// outboxWrite returns the write of an event into the outbox and what to do
// once it is durable: hand it to the dispatcher, which then need not read
// it back from the store.
//
// An event nothing can consume (no process of the tenant has its name as
// trigger and no run waits for it) is not written: events only start and
// wake runs, so it would be read and deleted for nothing. While the tenant
// has a subscriber (Subscribe), every event is written, to reach it; an
// event the Tap wants (a webhook subscription) is handed to it in the same
// transaction, written to the outbox or not.
//
// cause is the event's causation (see Cause); from, when cause is nil, is
// the run that emits it, whose causation is worked out only for an event
// that is written.
func (e *Engine) outboxWrite(tenant, name string, data map[string]any, at time.Time, cause *Cause, from *Run) (func(store.Txn) error, func()) {
	tap := e.cfg.Tap != nil && e.cfg.Tap.Wants(tenant, name)
	consumed := e.heard(tenant, name) || e.hub.wants(tenant)
	if !tap && !consumed {
		// A subscriber may come between now and the commit: it is owed
		// the event (Subscribe promises what commits after it began).
		return noWrite, func() { e.showLate(tenant, name, data, at, cause, from, nil) }
	}
	ev := e.newEvent(tenant, name, data, at)
	ev.Cause = cause
	if cause == nil && from != nil {
		ev.Cause = causeOf(from)
	}
	var tapOp func(store.Txn) error
	var tapAfter func()
	if tap {
		tapOp, tapAfter = e.cfg.Tap.Tap(ev)
	}
	if !consumed {
		if tapOp == nil {
			tapOp = noWrite
		}
		return tapOp, func() {
			if tapAfter != nil {
				tapAfter()
			}
			e.showLate(tenant, name, data, at, cause, from, ev)
		}
	}
	raw, err := ev.appendJSON(nil)
	return func(tx store.Txn) error {
			if err != nil {
				return errors.Wrapf(err, "encode event %s", name)
			}
			if tapOp != nil {
				if err := tapOp(tx); err != nil {
					return err
				}
			}
			return tx.Set(outboxKey(ev.ID), raw)
		}, func() {
			e.disp.push(ev)
			if tapAfter != nil {
				tapAfter()
			}
		}
}

// noWrite is the write of an event that is not written.
func noWrite(store.Txn) error { return nil }

// showLate hands the subscription hub an event that was not written to the
// outbox because nothing consumed it when its change was made, when a
// subscriber of the tenant came since: ev, or one made now from the parts.
func (e *Engine) showLate(tenant, name string, data map[string]any, at time.Time, cause *Cause, from *Run, ev *Event) {
	if !e.hub.wants(tenant) {
		return
	}
	if ev == nil {
		ev = e.newEvent(tenant, name, data, at)
		ev.Cause = cause
		if cause == nil && from != nil {
			ev.Cause = causeOf(from)
		}
	}
	e.hub.publish([]*Event{ev})
}

// emitTx writes an event into the outbox within tx, so it is emitted if
// and only if tx commits (apps call it beside their own changes, through
// internal/wiring). Call kick once tx has committed.
//
// When tx belongs to an Update made during a capability call of a run
// (its context, store.TxnContext, comes from the call), the event carries
// that run's causation, so the loop guard sees a run that starts itself
// through an app.
func (e *Engine) emitTx(tx store.Txn, tenant, name string, data any) error {
	m, err := toMap(data)
	if err != nil {
		return errors.Wrapf(err, "event %s", name)
	}
	var from *Run
	if info, ok := RunFromContext(store.TxnContext(tx)); ok {
		from = &Run{ID: info.ID, ProcessID: info.ProcessID, Trigger: RunTrigger{Cause: info.cause}}
	}
	op, _ := e.outboxWrite(tenant, name, m, e.now(), nil, from)
	return op(tx)
}

// heard reports whether an event named name of tenant may have a
// consumer: an enabled process whose trigger names it, or a run
// waiting for it. The answer is kept per name; it may say yes where
// nothing listens any more, never no where something does: listen marks a
// name before the change that adds a listener commits, and a kept "no" is
// only stored where no mark came first.
func (e *Engine) heard(tenant, name string) bool {
	if e.cluster != nil {
		return true // another node may add a listener unseen here
	}
	k := eventName{tenant, name}
	e.listenedMu.RLock()
	v, ok := e.listened[k]
	e.listenedMu.RUnlock()
	if ok {
		return v
	}
	found := false
	err := e.st.View(e.ctx, func(r store.Reader) error {
		defs, err := e.cfg.Processes.ByEvent(r, tenant, name)
		if err != nil || len(defs) > 0 {
			found = len(defs) > 0
			return err
		}
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "waiter", tenant, name), KeysOnly: true},
			func([]byte, []byte) error {
				found = true
				return store.ErrStop
			})
	})
	if err != nil {
		return true // when in doubt, write it
	}
	e.listenedMu.Lock()
	defer e.listenedMu.Unlock()
	if v, ok := e.listened[k]; ok {
		return v // a mark (or another answer) came first
	}
	e.listened[k] = found
	return found
}

// eventName names an event of a tenant (see heard): a map key that costs
// no allocation to make.
type eventName struct{ tenant, name string }

// listen marks events named name of tenant as heard, before the change
// that makes a listener commits.
func (e *Engine) listen(tenant, name string) {
	e.listenedMu.Lock()
	e.listened[eventName{tenant, name}] = true
	e.listenedMu.Unlock()
}

// kick tells the dispatcher (and the Tap) that events may be waiting.
func (e *Engine) kick() {
	e.disp.kick()
	if e.cfg.Tap != nil {
		e.cfg.Tap.Kick()
	}
}

func toMap(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if string(b) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errors.New("event data must be a JSON object")
	}
	return m, nil
}

// dispatcher reads the outbox, starts the runs of processes triggered by
// each event (once per event and process) and hands events to runs waiting
// on them. An event leaves the outbox only after that is durable, so a
// crash replays it; dedupe keys keep a replay from starting a run twice.
//
// Events the engine emits reach the dispatcher in memory once their commit
// is durable; the store is scanned only on open, when an app kicks after
// Emit, and every safetyScan as a safety net.
type dispatcher struct {
	e        *Engine
	wakeCh   chan struct{}
	reqs     chan *publishReq
	quit     chan struct{}
	stopOnce sync.Once
	filters  sync.Map // raw filter text -> *filter.Filter

	mu   sync.Mutex
	mem  []*Event // committed events not yet dispatched
	scan bool     // a scan of the store is due

	// floor is the time of the newest event dispatched; a scan starts
	// outboxWindow before it, so it does not walk the deleted entries of
	// everything dispatched before. Every fullScanEvery a scan starts at
	// the beginning, for an event that committed long after it was made.
	floor    time.Time
	lastFull time.Time

	// shown and shownPrev hold the ids of the events handed to the
	// subscription hub lately (two generations of at most shownGen ids):
	// an event a scan of the outbox dispatched moments before its
	// in-memory copy arrives (or a Publish of it) is dispatched again
	// harmlessly (dedupe keys), but subscribers see it once.
	shown, shownPrev map[string]struct{}
}

const (
	outboxWindow  = 5 * time.Second
	fullScanEvery = 30 * time.Second
	safetyScan    = 5 * time.Second
	dispatchPage  = 500
	shownGen      = 4096
)

type publishReq struct {
	ev    *Event
	reply chan publishResult
}

type publishResult struct {
	runs []*Run
	err  error
}

func newDispatcher(e *Engine) *dispatcher {
	return &dispatcher{e: e, wakeCh: make(chan struct{}, 1), reqs: make(chan *publishReq), quit: make(chan struct{})}
}

func (d *dispatcher) wake() {
	select {
	case d.wakeCh <- struct{}{}:
	default:
	}
}

// push hands a committed event to the dispatcher.
func (d *dispatcher) push(ev *Event) {
	d.mu.Lock()
	d.mem = append(d.mem, ev)
	d.mu.Unlock()
	d.wake()
}

// kick asks for a scan of the store's outbox.
func (d *dispatcher) kick() {
	d.mu.Lock()
	d.scan = true
	d.mu.Unlock()
	d.wake()
}

func (d *dispatcher) stop() { d.stopOnce.Do(func() { close(d.quit) }) }

func (d *dispatcher) loop() {
	every := safetyScan
	if d.e.cluster != nil {
		every = clusterPoll // other nodes' events reach this one through the outbox
	}
	safety := time.NewTicker(every)
	defer safety.Stop()
	for {
		select {
		case <-d.quit:
			return
		case req := <-d.reqs:
			d.answer(req)
			continue
		case <-d.wakeCh:
		case <-safety.C:
			d.kick()
		}
		if cl := d.e.cluster; cl != nil && !cl.dispatching() {
			d.mu.Lock()
			mem := d.mem
			d.mem, d.scan = nil, false // the dispatching node finds them in the outbox
			d.mu.Unlock()
			d.show(mem) // this node's subscribers see this node's events
			if len(mem) > 0 {
				cl.signal(topicOutbox) // the dispatching node finds them at once
			}
			if err := cl.readFeed(d); err != nil && !d.e.isClosed() { // and the other nodes'
				d.e.log.Error("event dispatcher", "error", err)
			}
			continue
		}
		if err := d.drain(); err != nil && !d.e.isClosed() {
			d.e.log.Error("event dispatcher", "error", err)
		}
		if cl := d.e.cluster; cl != nil {
			if err := cl.readFeed(d); err != nil && !d.e.isClosed() { // events another node dispatched
				d.e.log.Error("event dispatcher", "error", err)
			}
		}
	}
}

func (d *dispatcher) answer(req *publishReq) {
	runs, err := d.dispatch(req.ev)
	req.reply <- publishResult{runs: runs, err: err}
}

// drain dispatches the events handed over in memory, then, when one is
// due, what a scan of the outbox finds.
func (d *dispatcher) drain() error {
	for {
		d.mu.Lock()
		batch := take(&d.mem, dispatchPage)
		scan := d.scan && len(batch) == 0
		if scan {
			d.scan = false
		}
		d.mu.Unlock()
		switch {
		case len(batch) > 0:
			if err := d.dispatchAll(batch); err != nil {
				return err
			}
		case scan:
			return d.scanOutbox()
		default:
			return nil
		}
		select {
		case <-d.quit:
			return nil
		case req := <-d.reqs:
			d.answer(req)
		default:
		}
	}
}

// scanOutbox dispatches what the outbox holds, a page at a time.
func (d *dispatcher) scanOutbox() error {
	opts := store.ScanOptions{Prefix: store.Key(store.System, "outbox")}
	if time.Since(d.lastFull) < fullScanEvery && !d.floor.IsZero() {
		opts.After = outboxKey(ids.Floor("evt", d.floor.Add(-outboxWindow)))
	} else {
		d.lastFull = time.Now()
	}
	for {
		var evs []*Event
		err := d.e.st.View(d.e.ctx, func(r store.Reader) error {
			return r.Scan(opts, func(key, val []byte) error {
				ev := new(Event)
				if err := json.Unmarshal(val, ev); err != nil {
					return errors.Wrap(err, "decode outbox event")
				}
				evs = append(evs, ev)
				opts.After = append(opts.After[:0:0], key...)
				if len(evs) == dispatchPage {
					return store.ErrStop
				}
				return nil
			})
		})
		if err != nil || len(evs) == 0 {
			return err
		}
		if err := d.dispatchAll(evs); err != nil {
			return err
		}
		if len(evs) < dispatchPage {
			return nil
		}
	}
}

// dispatchAll dispatches evs together: one read for their triggers and
// waiters, one commit removing them from the outbox.
func (d *dispatcher) dispatchAll(evs []*Event) error {
	d.show(evs)
	plans, err := d.plan(evs)
	if err != nil {
		return err
	}
	keys := make([][]byte, len(evs))
	var cuts []loopCut
	for i, p := range plans {
		if _, err := d.await(p); err != nil {
			return err
		}
		keys[i] = outboxKey(evs[i].ID)
		if evs[i].At.After(d.floor) {
			d.floor = evs[i].At
		}
		cuts = append(cuts, p.cuts...)
	}
	ops, posts := d.recordCuts(cuts)
	var fence func(store.Txn) error
	var subs map[string]bool
	if cl := d.e.cluster; cl != nil {
		fence = cl.fenceDispatch()
		subs = cl.feedSubs()
	}
	err = d.e.commits.commitWait(context.Background(), &delta{apply: func(tx store.Txn) error {
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
			if err := d.e.cluster.feedTo(tx, evs, subs); err != nil {
				return err
			}
		}
		if err := deleteAll(tx, keys); err != nil {
			return err
		}
		for _, op := range ops {
			if err := op(tx); err != nil {
				return err
			}
		}
		return nil
	}})
	if err == nil {
		for _, post := range posts {
			post()
		}
		if fence != nil {
			d.e.cluster.fedSignal()
		}
	}
	return err
}

// dispatch starts the runs ev triggers and wakes the runs waiting on it,
// then removes it from the outbox. It returns the runs started (or started
// by an earlier dispatch of the same event).
func (d *dispatcher) dispatch(ev *Event) ([]*Run, error) {
	d.show([]*Event{ev})
	plans, err := d.plan([]*Event{ev})
	if err != nil {
		return nil, err
	}
	started, err := d.await(plans[0])
	if err != nil {
		return nil, err
	}
	ops, posts := d.recordCuts(plans[0].cuts)
	cl := d.e.cluster
	var subs map[string]bool
	if cl != nil {
		subs = cl.feedSubs()
	}
	err = d.e.commits.commitWait(context.Background(), &delta{apply: func(tx store.Txn) error {
		if err := tx.Delete(outboxKey(ev.ID)); err != nil {
			return err
		}
		if cl != nil {
			if err := cl.feedTo(tx, []*Event{ev}, subs); err != nil {
				return err
			}
		}
		for _, op := range ops {
			if err := op(tx); err != nil {
				return err
			}
		}
		return nil
	}})
	if err == nil {
		for _, post := range posts {
			post()
		}
		if cl != nil {
			cl.fedSignal()
		}
	}
	return started, err
}

// show hands the subscription hub the events of evs it was not handed
// lately. It costs nothing while no one subscribes.
func (d *dispatcher) show(evs []*Event) {
	if d.e.hub.any.Load() == 0 {
		return
	}
	fresh := evs[:0:0]
	for _, ev := range evs {
		if _, ok := d.shown[ev.ID]; ok {
			continue
		}
		if _, ok := d.shownPrev[ev.ID]; ok {
			continue
		}
		if d.shown == nil || len(d.shown) >= shownGen {
			d.shown, d.shownPrev = make(map[string]struct{}, shownGen), d.shown
		}
		d.shown[ev.ID] = struct{}{}
		fresh = append(fresh, ev)
	}
	d.e.hub.publish(fresh)
}

// loopCut is a run the loop guard did not start.
type loopCut struct {
	ev                     *Event
	processID, processName string
	reason                 string
}

// Reasons of a loop cut.
const (
	// LoopSelf: the process is already in the chain of the event.
	LoopSelf = "self_trigger"
	// LoopDepth: the run would be deeper than MaxChainDepth.
	LoopDepth = "max_depth"
)

// EventLoopStopped is emitted for every run the loop guard did not start.
const EventLoopStopped = "process.run.loop_stopped"

// loopReason says why an event of cause may not start a run of processID,
// or "" when it may.
func loopReason(cause *Cause, processID string) string {
	switch {
	case cause == nil:
		return ""
	case slices.Contains(cause.Processes, processID):
		return LoopSelf
	case cause.Depth >= MaxChainDepth:
		return LoopDepth
	}
	return ""
}

// recordCuts returns the writes that make cuts visible, for the commit
// that removes their events from the outbox (so a replay records a cut
// once): an audit entry each, and a process.run.loop_stopped event
// carrying the chain, except for a cut of that event itself.
func (d *dispatcher) recordCuts(cuts []loopCut) ([]func(store.Txn) error, []func()) {
	if len(cuts) == 0 {
		return nil, nil
	}
	e := d.e
	var ops []func(store.Txn) error
	var posts []func()
	for _, c := range cuts {
		ev := c.ev
		data := map[string]any{"process_id": c.processID, "process_name": c.processName, "event": ev.Name,
			"event_id": ev.ID, "run_id": ev.Cause.RunID, "root_run_id": ev.Cause.RootRunID,
			"depth": ev.Cause.Depth + 1, "reason": c.reason}
		e.log.Warn("a run was not started: loop guard", "tenant", ev.Tenant, "process", c.processID,
			"event", ev.Name, "cause_run", ev.Cause.RunID, "reason", c.reason)
		entry := audit.Entry{At: e.now(), Actor: audit.System, Action: EventLoopStopped, Entity: "process",
			EntityID: c.processID, After: audit.Marshal(data), Reason: loopText(c, ev)}
		tenant := ev.Tenant
		ops = append(ops, func(tx store.Txn) error { return audit.Write(tx, tenant, &e.ids, entry) })
		if ev.Name != EventLoopStopped {
			op, post := e.outboxWrite(tenant, EventLoopStopped, data, e.now(), ev.Cause, nil)
			ops, posts = append(ops, op), append(posts, post)
		}
	}
	return ops, posts
}

func loopText(c loopCut, ev *Event) string {
	if c.reason == LoopSelf {
		return "event " + ev.Name + " of run " + ev.Cause.RunID + " would start process " + c.processID +
			" again within its own chain (root run " + ev.Cause.RootRunID + ")"
	}
	return "event " + ev.Name + " of run " + ev.Cause.RunID + " would start a run deeper than " +
		strconv.Itoa(MaxChainDepth) + " events from root run " + ev.Cause.RootRunID
}

// planned is an event whose starts and wake-ups were sent to the workers.
type planned struct {
	started       []*Run // runs an earlier dispatch started
	starts, wakes []chan reply
	cuts          []loopCut // runs the loop guard did not start
}

// plan sends the commands evs call for without waiting for them. The
// triggers and waiters of each event name are read once for the batch.
func (d *dispatcher) plan(evs []*Event) ([]*planned, error) {
	e := d.e
	type waiting struct {
		runID string
		w     waiter
		key   []byte
	}
	type group struct {
		defs    []*process.Definition
		waiters []waiting
	}
	groups := map[[2]string]*group{}
	existing := map[string]string{} // event id + process id -> run id started before
	err := e.st.View(e.ctx, func(r store.Reader) error {
		for _, ev := range evs {
			k := [2]string{ev.Tenant, ev.Name}
			g, ok := groups[k]
			if !ok {
				g = &group{}
				groups[k] = g
				var err error
				if g.defs, err = e.cfg.Processes.ByEvent(r, ev.Tenant, ev.Name); err != nil {
					return err
				}
				prefix := store.Key(store.System, "waiter", ev.Tenant, ev.Name)
				err = r.Scan(store.ScanOptions{Prefix: prefix}, func(key, val []byte) error {
					parts, err := store.DecodeKey(key)
					if err != nil || len(parts) != 5 {
						return errors.Newf("runengine: bad waiter key %q", key)
					}
					var w waiter
					if err := json.Unmarshal(val, &w); err != nil {
						return err
					}
					g.waiters = append(g.waiters, waiting{runID: parts[4].(string), w: w, key: append([]byte(nil), key...)})
					return nil
				})
				if err != nil {
					return err
				}
			}
			for _, def := range g.defs {
				raw, err := r.Get(dedupeKey(ev.Tenant, ev.ID, def.ID))
				switch {
				case err == nil:
					existing[ev.ID+"/"+def.ID] = string(raw)
				case !errors.Is(err, store.ErrNotFound):
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	plans := make([]*planned, len(evs))
	for i, ev := range evs {
		p := &planned{}
		plans[i] = p
		g := groups[[2]string{ev.Tenant, ev.Name}]
		for _, def := range g.defs {
			if runID, ok := existing[ev.ID+"/"+def.ID]; ok {
				if r, err := e.GetRun(e.ctx, ev.Tenant, runID); err == nil {
					p.started = append(p.started, r)
				}
				continue
			}
			if !def.Enabled || def.Archived || !d.matches(def.Trigger.Filter, ev.Data) {
				continue
			}
			if reason := loopReason(ev.Cause, def.ID); reason != "" {
				p.cuts = append(p.cuts, loopCut{ev: ev, processID: def.ID, processName: def.Name, reason: reason})
				continue
			}
			ver, err := e.version(ev.Tenant, def.ID, def.Version)
			if err != nil {
				return nil, err
			}
			runID := d.e.newRunID()
			name := ev.Name
			rep := make(chan reply, 1)
			p.starts = append(p.starts, rep)
			e.workerFor(runID).send(&command{kind: cmdStart, tenant: ev.Tenant, runID: runID, reply: rep, start: &startArgs{
				version: ver,
				subject: eventSubject(ev),
				trigger: RunTrigger{Type: process.TriggerEvent, Event: &name, EventID: ev.ID, EmittedBy: ev.EmittedBy, Data: ev.Data, Cause: ev.Cause},
				ops:     []func(store.Txn) error{setKey(dedupeKey(ev.Tenant, ev.ID, def.ID), []byte(runID))},
			}})
		}
		for _, w := range g.waiters {
			if !d.matches(w.w.Filter, ev.Data) {
				continue
			}
			rep := make(chan reply, 1)
			p.wakes = append(p.wakes, rep)
			e.route(&command{kind: cmdEvent, tenant: ev.Tenant, runID: w.runID, reply: rep,
				event: &eventArgs{name: ev.Name, id: ev.ID, data: ev.Data, key: w.key}})
		}
	}
	return plans, nil
}

// await waits until the commands of p are durable and returns the runs
// the event started.
func (d *dispatcher) await(p *planned) ([]*Run, error) {
	started := p.started
	for i, rep := range append(p.starts, p.wakes...) {
		var r reply
		select {
		case r = <-rep:
		case <-d.quit:
			return nil, errClosed
		}
		if r.err != nil {
			return nil, r.err
		}
		if i < len(p.starts) {
			started = append(started, r.run)
		}
	}
	return started, nil
}

func (d *dispatcher) matches(raw json.RawMessage, data map[string]any) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	key := string(raw)
	f, ok := d.filters.Load(key)
	if !ok {
		parsed, err := filter.Parse(raw)
		if err != nil {
			return false
		}
		f, _ = d.filters.LoadOrStore(key, parsed)
	}
	return f.(*filter.Filter).Match(data)
}

func dedupeKey(tenant, eventID, processID string) []byte {
	return store.Key(tenant, "event-start", eventID, processID)
}

// eventSubject names a run started by an event after what the event is
// about.
func eventSubject(ev *Event) Subject {
	s := Subject{Type: ev.Name, Label: ev.Name}
	for _, k := range []string{"title", "name", "label", "number", "id"} {
		if v, ok := ev.Data[k].(string); ok && v != "" {
			s.Label = truncateRunes(v, MaxSubjectLabel)
			break
		}
	}
	return s
}
