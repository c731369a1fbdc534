package runengine

import (
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/cron"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Due keys: (System, "due", unix-nanos, tenant, run-id or "cron:"+process,
// token). One scheduler goroutine sleeps until the earliest and turns due
// keys into commands; the worker deletes the key in the same commit that
// applies it, so a timer fires once.
func dueKey(at time.Time, tenant, owner, token string) []byte {
	return store.Key(store.System, "due", at.UnixNano(), tenant, owner, token)
}

const cronOwnerPrefix = "cron:"

// safetyTick bounds how long a due key written in a transaction that woke
// the scheduler before it committed (an app's timer, SetTimer) can wait
// unnoticed when it is due by then: a look comes every tick, and looks
// keep their cursor before such a key's time for a while (see
// wakeUncommitted). A key written outside the engine is found by the
// tick's look from the first due key, spaced by fullLookShare.
const safetyTick = 200 * time.Millisecond

// fullLookShare spaces the safety tick's looks from the first due key: the
// next comes no sooner than this many times the last one took. Such a
// look steps over every deleted due key Badger has not compacted away yet:
// after a million timers fired, about a million. Before, an idle engine
// made one every tick: 225-435 ms of CPU per second over 200,000 deleted
// due keys, most of a core after a million. Spaced, they take at most
// 1/fullLookShare of the time, and a key written outside the engine
// waits at most that much longer (3-6 s over 200,000 deleted keys, whose
// look took 60-120 ms).
const fullLookShare = 50

type scheduler struct {
	e        *Engine
	prefix   []byte // of every due key
	wakeCh   chan struct{}
	quit     chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex
	inflight map[string]time.Time // due keys handed out, not yet deleted, and when
	limit    int                  // of inflight: maxDueInflight
	next     time.Time            // when the loop will next look
	// throttled says fireDue stopped at maxDueInflight; done wakes the
	// loop once half of those keys are deleted.
	throttled bool
	// cursor is where fireDue's next look starts: every due key before it
	// was handed out (or deleted since), so a look does not pass again
	// over the keys, and the deleted keys, of the timers that came due
	// before. A key written before it resets it (wake, wakeAt); gen counts
	// the resets, so a look that began before one does not keep its cursor.
	cursor   []byte
	cursorAt time.Time
	gen      uint64
	// heldTicks are the due keys of paused processes' schedules, held
	// for their resume (see holdTick), and heldKeys the same keys, for a
	// look to step over: a held key is not in flight, so paused schedules
	// however many do not take the room of the keys that are due.
	heldTicks map[pausedRef][]byte
	heldKeys  map[string]struct{}
	// parked are the due keys of timers whose run record cannot be
	// decoded, stepped over until their retry (see park).
	parked map[string]parkedKey
	// fullTook is how long the last look from the first due key took to
	// scan, fullEnded when it ended (see safetyReset).
	fullTook  time.Duration
	fullEnded time.Time
	// lookNow is the time of the latest look: a key due by then, written
	// while the look was under way, may have been missed by it, so the
	// look must not move the cursor past it (wakeAt moves gen).
	lookNow time.Time
	// early is the earliest time of the keys already due when written
	// in a transaction that woke the loop before it committed
	// (wakeUncommitted), earlySince when it was set, and earlyUntil until
	// when a look keeps its cursor before it: a look that ran before that
	// commit landed did not see the key.
	early, earlySince, earlyUntil time.Time
}

// maxDueInflight bounds the due keys handed to the workers and not yet
// deleted: when a million timers come due together, the workers' queues
// and the in-flight set stay this size, and each look at the due index
// passes over at most this many keys before it finds new ones. It also
// bounds the runs firing keeps in memory: 4,096 rather than 8,192 took a
// million-run firing's live heap from 134 to 109 MiB at its peak, and over
// three interleaved pairs of 100,000 runs (load 10-16) fired 5,624-9,559
// against 3,993-4,835 runs/s at 85-89 against 92-99 CPU-µs per run (one
// pair of 300,000 at load 7 went the other way, 8,640 against 10,368).
// 2,048 rather than 4,096, three runs each of a million on a quiet
// machine: 18,808 against 17,136 runs/s in the one pair with both rates,
// 93-111 against 104-112 CPU-µs per run, anonymous memory while firing
// median 164-185 against 192-210 MiB and peak 312-364 against 374-408
// (commits of ~515 changes taking ~38 ms instead of ~715 taking ~70).
const maxDueInflight = 2048

func newScheduler(e *Engine) *scheduler {
	return &scheduler{e: e, prefix: store.Key(store.System, "due"), wakeCh: make(chan struct{}, 1), quit: make(chan struct{}),
		inflight: map[string]time.Time{}, limit: maxDueInflight}
}

// wake wakes the loop to look at the whole due index (a key may have been
// written anywhere in it).
func (s *scheduler) wake() {
	s.mu.Lock()
	s.resetCursor()
	s.mu.Unlock()
	s.signal()
}

func (s *scheduler) signal() {
	select {
	case s.wakeCh <- struct{}{}:
	default:
	}
}

// resetCursor makes the next look start at the first due key; s.mu held.
func (s *scheduler) resetCursor() {
	s.cursor, s.cursorAt = nil, time.Time{}
	s.gen++
}

// cursorFrom makes the next look start at the first due key at t or
// later (a key of its time parts alone sorts before every due key of that
// time and after those before it); s.mu held.
func (s *scheduler) cursorFrom(t time.Time) {
	s.cursor, s.cursorAt = store.Key(store.System, "due", t.UnixNano()), t.Add(-time.Nanosecond)
}

// wakeAt wakes the loop if at is before its next look.
func (s *scheduler) wakeAt(at time.Time) {
	s.mu.Lock()
	if s.cursor != nil && !at.After(s.cursorAt) {
		s.cursorFrom(at) // the keys before at are still handed out
		s.gen++
	} else if !at.After(s.lookNow) {
		s.gen++ // a look under way keeps its cursor before the key
	}
	earlier := s.next.IsZero() || at.Before(s.next)
	s.mu.Unlock()
	if earlier {
		s.signal()
	}
}

// uncommittedHold is how long after a wakeUncommitted the looks keep their
// cursor before its key's time, so that the look after its commit landed
// (at the latest the next safety tick's) finds it; earlyPin bounds how long
// one early time holds while such wakes keep coming.
const (
	uncommittedHold = time.Second
	earlyPin        = 5 * time.Second
)

// wakeUncommitted is wakeAt for a key written in a transaction not yet
// committed: a key already due then may be missed by a look that runs
// before the commit lands, so for uncommittedHold the looks do not move
// the cursor past its time (see fireDue).
func (s *scheduler) wakeUncommitted(at time.Time) {
	s.mu.Lock()
	if !at.After(s.e.clock.Now()) {
		wall := time.Now()
		if s.early.IsZero() || !wall.Before(s.earlyUntil) || wall.Sub(s.earlySince) > earlyPin {
			s.early, s.earlySince = at, wall
		} else if at.Before(s.early) {
			s.early = at
		}
		s.earlyUntil = wall.Add(uncommittedHold)
	}
	s.mu.Unlock()
	s.wakeAt(at)
}

// done forgets a due key once its deletion is durable.
func (s *scheduler) done(key []byte) {
	s.mu.Lock()
	resume := s.letGo(key)
	s.mu.Unlock()
	if resume {
		s.signal()
	}
}

// letGo takes key out of the keys in flight, and reports whether a
// throttled loop is to look again; s.mu held.
func (s *scheduler) letGo(key []byte) bool {
	delete(s.inflight, string(key))
	if len(s.parked) > 0 {
		delete(s.parked, string(key))
	}
	resume := s.throttled && len(s.inflight) <= s.limit/2
	if resume {
		s.throttled = false
	}
	return resume
}

// settle is done for a due key handed to a worker, once the commit that
// deletes it settled: when it failed, the key is still there and the next
// look must find it again (from the first due key).
func (s *scheduler) settle(key []byte, err error) {
	s.done(key)
	if err != nil {
		s.wake()
	}
}

func (s *scheduler) stop() { s.stopOnce.Do(func() { close(s.quit) }) }

func (s *scheduler) loop() {
	safety := time.NewTicker(safetyTick)
	defer safety.Stop()
	for {
		next, err := s.fireDue()
		if err != nil && !s.e.isClosed() {
			s.e.log.Error("scheduler", "error", err)
		}
		var timerC <-chan time.Time
		var t clock.Timer
		if !next.IsZero() {
			t = s.e.clock.NewTimer(next.Sub(s.e.clock.Now()))
			timerC = t.C()
		}
		s.mu.Lock()
		s.next = next
		s.mu.Unlock()
		select {
		case <-s.quit:
			if t != nil {
				t.Stop()
			}
			return
		case <-s.wakeCh:
		case <-timerC:
		case <-safety.C:
			s.mu.Lock()
			s.safetyReset(time.Now())
			s.mu.Unlock()
		}
		if t != nil {
			t.Stop()
		}
	}
}

// safetyReset makes the next look start at the first due key, so that a
// key written outside the engine is found at the latest when no timer is
// in flight; but no sooner than fullLookShare times the last such look's
// scan took after it ended (see fullLookShare). s.mu held.
func (s *scheduler) safetyReset(now time.Time) {
	if len(s.inflight) > 0 || s.cursor == nil {
		return
	}
	if now.Sub(s.fullEnded) < max(safetyTick, fullLookShare*s.fullTook) {
		return
	}
	s.resetCursor()
}

type dueItem struct {
	key    []byte
	at     time.Time
	tenant string
	owner  string
	token  string
	run    []byte // the run's record, read with the due key (see readDueRuns)
}

// isRunTimer says the due key is a run's own timer (not an inbox's, a
// schedule's or an app's).
func (d *dueItem) isRunTimer() bool {
	if isInbox(d.token) || strings.HasPrefix(d.owner, cronOwnerPrefix) {
		return false
	}
	_, app := appKind(d.owner)
	return !app
}

// readDueRuns reads the records of the runs whose timers are due, in the
// transaction that found the due keys, with one store.GetSorted: timers
// that come due together belong mostly to runs started together, whose
// records lie side by side, so the scheduler walks them in one pass where
// each worker would step over the other workers' three in four (with 1,000
// due at a million runs: reading the due runs 11.3% of the firing's CPU
// with a lookup per run, 6.1% with this read). The workers take
// them for fresh unless they forgot the run since (see worker.readAhead);
// a record not read is read by the worker as before. Not on a cluster,
// where the records of runs another node handled are not the worker's.
func readDueRuns(r store.Reader, due []dueItem) {
	var keys [][]byte
	var at []int // keys[j] is the run of due[at[j]]
	for i := range due {
		if due[i].isRunTimer() {
			keys = append(keys, runs.RecordKey(due[i].tenant, due[i].owner))
			at = append(at, i)
		}
	}
	getSortedOnce(r, keys, func(j int, raw []byte) { due[at[j]].run = raw })
}

// fireDue hands every due key to its worker and returns the time of the
// earliest key still ahead (zero when none).
func (s *scheduler) fireDue() (time.Time, error) {
	s.mu.Lock()
	after, gen := s.cursor, s.gen
	s.mu.Unlock()
	if s.e.cluster != nil {
		// A node looks at the whole index each time: keys of shards it
		// did not own, and keys handed out whose handling failed, lie
		// before any cursor.
		after = nil
	}
	for {
		s.mu.Lock()
		room := s.limit - len(s.inflight)
		if room <= 0 {
			s.throttled = true
		}
		now := s.e.clock.Now()
		s.lookNow = now
		s.mu.Unlock()
		if room <= 0 {
			return time.Time{}, nil // done wakes the loop
		}
		var due []dueItem
		var next time.Time
		seen := s.e.forgets.Load() // before the read (see worker.readAhead)
		full := after == nil && s.e.cluster == nil
		began := time.Now()
		err := s.e.st.View(s.e.ctx, func(r store.Reader) error {
			defer func() {
				if s.e.cluster == nil && len(due) > 0 {
					readDueRuns(r, due)
				}
			}()
			if after == nil {
				if err := s.forgetGoneParked(r, now); err != nil {
					return err
				}
			}
			return r.Scan(store.ScanOptions{Prefix: s.prefix, After: after, KeysOnly: true}, func(key, _ []byte) error {
				s.mu.Lock()
				handed, busy := s.inflight[string(key)]
				if busy && s.e.cluster != nil && time.Since(handed) > handOutTTL {
					busy = false // its handling failed (its shard moved meanwhile): again
				}
				if _, held := s.heldKeys[string(key)]; held {
					busy = true // until its process resumes
				}
				if len(s.parked) > 0 && s.isParked(key, now) {
					busy = true // until its retry
				}
				s.mu.Unlock()
				if busy {
					return nil
				}
				parts, err := store.DecodeKey(key)
				if err != nil || len(parts) != 6 {
					return errors.Newf("runengine: bad due key %q", key)
				}
				at := time.Unix(0, parts[2].(int64))
				if at.After(now) {
					next = at
					return store.ErrStop
				}
				if cl := s.e.cluster; cl != nil && !cl.owns(parts[4].(string)) {
					return nil // another node's
				}
				due = append(due, dueItem{key: append([]byte(nil), key...), at: at, tenant: parts[3].(string),
					owner: parts[4].(string), token: parts[5].(string)})
				if len(due) >= min(1000, room) {
					return store.ErrStop
				}
				return nil
			})
		})
		if full {
			ended := time.Now()
			s.mu.Lock()
			s.fullTook, s.fullEnded = ended.Sub(began), ended
			s.mu.Unlock()
		}
		if err != nil {
			return time.Time{}, err
		}
		if len(due) > 0 {
			after = due[len(due)-1].key
			s.mu.Lock()
			if s.gen == gen && s.e.cluster == nil {
				s.cursor, s.cursorAt = after, due[len(due)-1].at
			}
			s.mu.Unlock()
		}
		for _, d := range due {
			s.mu.Lock()
			s.inflight[string(d.key)] = time.Now()
			s.mu.Unlock()
			if isInbox(d.token) {
				s.fireInbox(d)
				continue
			}
			if processID, ok := strings.CutPrefix(d.owner, cronOwnerPrefix); ok {
				s.fireCron(d, processID)
				continue
			}
			if kind, ok := appKind(d.owner); ok {
				s.fireApp(d, kind)
				continue
			}
			s.e.workerFor(d.owner).send(&command{kind: cmdTimer, tenant: d.tenant, runID: d.owner,
				timer: &timerArgs{key: d.key, token: d.token, run: d.run, seen: seen}})
		}
		if len(due) < min(1000, room) {
			// The scan reached a key ahead of now, or the end: every due
			// key up to now is handed out, so the next look starts past
			// them, not at the last one handed out, nor, when none was,
			// at the first due key (over the deleted keys of the timers
			// fired before).
			s.mu.Lock()
			if s.gen == gen && s.e.cluster == nil {
				past := now.Add(time.Nanosecond)
				if !s.early.IsZero() && time.Now().Before(s.earlyUntil) && s.early.Before(past) {
					past = s.early // a key due then may not have landed yet
				}
				s.cursorFrom(past)
			}
			s.mu.Unlock()
			return next, nil
		}
	}
}

// cronPointer is the key holding the due key of a process's next fire.
func cronPointer(tenant, processID string) []byte {
	return store.Key(tenant, "cron-next", processID)
}

// fireCron starts a run of a scheduled process and writes its next fire
// time in the same commit, so a tick fires once.
func (s *scheduler) fireCron(d dueItem, processID string) {
	e := s.e
	var def *process.Definition
	last := cronLast(d.tenant, processID)
	already, paused := false, false
	err := e.st.View(e.ctx, func(r store.Reader) error {
		var err error
		if already, err = tickFired(r, last, d.at); err != nil {
			return err
		}
		if def, err = e.cfg.Processes.Load(r, d.tenant, processID); err != nil {
			return err
		}
		paused, err = isPaused(r, d.tenant, processID)
		return err
	})
	drop := func() {
		e.commits.submit(&delta{apply: deleteKey(d.key), after: func(error) { s.done(d.key) }})
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// A read that failed for another reason than the process being
		// gone (the engine closing, the store's error) keeps the tick, to
		// be found by a later look from the first due key (at the latest on
		// the next open), as a run's timer is (see worker.unread).
		s.done(d.key)
		return
	}
	if err != nil || already || !def.Enabled || def.Archived || def.Trigger.Type != process.TriggerSchedule {
		drop()
		return
	}
	sch, err := cron.Parse(def.Trigger.Cron, def.Trigger.Timezone)
	if err != nil {
		drop()
		return
	}
	ver, err := e.version(d.tenant, def.ID, def.Version)
	if errors.Is(err, store.ErrNotFound) {
		drop()
		return
	}
	if err != nil {
		s.done(d.key)
		return
	}
	if paused && s.holdTick(d, processID) {
		return
	}
	next := sch.Next(maxTime(d.at, e.clock.Now()))
	nextKey := dueKey(next, d.tenant, d.owner, "cron")
	pointer := cronPointer(d.tenant, processID)
	fired := d.at.UTC().Format(time.RFC3339)
	runID := s.e.newRunID()
	cmd := &command{kind: cmdStart, tenant: d.tenant, runID: runID, start: &startArgs{
		version: ver,
		subject: Subject{Type: "schedule", Label: def.Name + " at " + fired},
		trigger: RunTrigger{Type: process.TriggerSchedule, Data: map[string]any{"fired_at": fired, "cron": def.Trigger.Cron}},
		reads:   true,
		ops: []func(tx store.Txn) error{s.e.cluster.fenceOwner(d.owner), func(tx store.Txn) error {
			if err := claimTick(tx, last, d.at); err != nil {
				return err
			}
			if err := tx.Delete(d.key); err != nil {
				return err
			}
			cur, err := tx.Get(pointer)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if string(cur) != string(d.key) {
				return nil // the schedule changed meanwhile; its new key stands
			}
			if err := tx.Set(nextKey, nil); err != nil {
				return err
			}
			return tx.Set(pointer, nextKey)
		}},
		post: []func(){func() { s.wakeAt(next) }},
		// On both outcomes: a failed commit leaves the tick's key stored,
		// to be found and fired again (settle).
		settled: []func(error){func(err error) { s.settle(d.key, err) }},
	}}
	if !e.enterGate(cmd) {
		return // made once a start of its tenant is answered
	}
	e.workerFor(runID).send(cmd)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// onProcessChange keeps a scheduled process's next fire in the due index,
// in the transaction that changes the definition.
func (e *Engine) onProcessChange(tx store.Txn, tenant string, old, def *process.Definition) error {
	if def.Trigger.Type == process.TriggerEvent {
		e.listen(tenant, def.Trigger.Event)
	}
	id := def.ID
	pointer := cronPointer(tenant, id)
	cur, err := tx.Get(pointer)
	switch {
	case err == nil:
		if err := tx.Delete(cur); err != nil {
			return err
		}
		if err := tx.Delete(pointer); err != nil {
			return err
		}
		e.sched.forgetTick(tenant, id, cur)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if def.Archived || !def.Enabled || def.Trigger.Type != process.TriggerSchedule {
		return nil
	}
	sch, err := cron.Parse(def.Trigger.Cron, def.Trigger.Timezone)
	if err != nil {
		return err
	}
	next := sch.Next(e.clock.Now())
	key := dueKey(next, tenant, cronOwnerPrefix+id, "cron")
	if err := tx.Set(key, nil); err != nil {
		return err
	}
	e.sched.wake()
	return tx.Set(pointer, key)
}
