package runengine

import (
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// A schedule's tick is a start the engine makes, and it is held as a start
// by hand is, never dropped:
//
//   - At the tenant's door (MaxStartingPerTenant, FairStartingPerTenant):
//     a tick over the cap waits in line behind the tenant's starts in
//     progress, and its run is started when one of them is answered
//     (enterGate). The scheduler does not wait there, so the other
//     tenants' timers fire meanwhile.
//   - By a paused process: its tick starts no run while the process is
//     paused; the first tick that came due is held and starts one run once
//     the process resumes, and the schedule goes on from then (holdTick),
//     as after a server was down: a process paused for a week starts one
//     run on resume, not one per tick it missed.
//
// Both are durable without writing anything: a tick's due key is deleted
// in the commit that starts its run (with the schedule's next tick), so a
// tick held when the server stops is still in the due index and fires
// again when it opens. The run caps (MaxRunsPerTenant, MaxRunsPerProcess)
// hold the runs schedules start as they hold any other (see
// capHeldAtStart).

// enterGate takes a slot of the start gate for cmd, a start made by the
// engine, and reports whether it did; otherwise cmd is sent to its worker
// once a slot is taken for it. The slot is left once cmd's start commit
// settled. Without a gate it reports true.
func (e *Engine) enterGate(cmd *command) bool {
	g := e.starting
	if g == nil {
		return true
	}
	tenant := cmd.tenant
	cmd.start.settled = append(cmd.start.settled, func(error) { g.leave(tenant) })
	return g.enterOr(tenant, func() { e.workerFor(cmd.runID).send(cmd) })
}

// isPaused reports whether the store holds the pause of a process: the
// scheduler reads it there rather than in memory, which on a cluster
// learns of a pause made on another node only at the next lease round.
func isPaused(r store.Reader, tenant, processID string) (bool, error) {
	_, err := r.Get(pausedKey(tenant, processID))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// holdTick holds the due tick d of a paused process's schedule (the
// scheduler does not fire it again) until the process resumes
// (releaseTick), and reports whether it did; false when the process
// resumed meanwhile, and d is to fire now. A held tick is not in flight:
// the looks step over it (heldKeys) without counting it toward
// maxDueInflight, so ticks held for many paused processes do not keep the
// scheduler from handing out the keys that are due, and the tick costs
// nothing more until the resume.
func (s *scheduler) holdTick(d dueItem, processID string) bool {
	ref := pausedRef{d.tenant, processID}
	s.mu.Lock()
	if s.heldTicks == nil {
		s.heldTicks, s.heldKeys = map[pausedRef][]byte{}, map[string]struct{}{}
	}
	if prev, ok := s.heldTicks[ref]; ok && string(prev) != string(d.key) {
		// The schedule changed while paused, which deleted that tick.
		delete(s.heldKeys, string(prev))
	}
	s.heldTicks[ref] = d.key
	s.mu.Unlock()
	// The resume may have landed since fireCron read the pause: look
	// again. Whoever takes the tick out of heldTicks fires it.
	var paused bool
	err := s.e.st.View(s.e.ctx, func(r store.Reader) error {
		var err error
		paused, err = isPaused(r, d.tenant, processID)
		return err
	})
	s.mu.Lock()
	if string(s.heldTicks[ref]) != string(d.key) {
		s.mu.Unlock()
		return true // releaseTick took it and fires it
	}
	if err != nil {
		// Not known to be paused: let it go, for a later look to fire
		// it again (a look from the first due key, see settle).
		delete(s.heldTicks, ref)
		s.mu.Unlock()
		s.settle(d.key, err)
		return true
	}
	if !paused {
		delete(s.heldTicks, ref)
		s.mu.Unlock()
		return false
	}
	s.heldKeys[string(d.key)] = struct{}{}
	resume := s.letGo(d.key)
	s.mu.Unlock()
	if resume {
		s.signal()
	}
	return true
}

// releaseTick fires the tick a paused process's schedule held, if any,
// once the process resumed.
func (s *scheduler) releaseTick(tenant, processID string) {
	ref := pausedRef{tenant, processID}
	s.mu.Lock()
	key, ok := s.heldTicks[ref]
	delete(s.heldTicks, ref)
	delete(s.heldKeys, string(key))
	s.mu.Unlock()
	if ok {
		s.done(key) // when holdTick has not yet taken it out of flight
		s.wake()
	}
}

// forgetTick forgets the tick held for a paused process's schedule when
// it is key, the due key a change of the process (archived, disabled, its
// schedule changed or removed) deletes: before, it stayed in memory until
// a resume. A change that fails to commit leaves the key stored, and a
// later look from the first due key holds it again.
func (s *scheduler) forgetTick(tenant, processID string, key []byte) {
	ref := pausedRef{tenant, processID}
	s.mu.Lock()
	held, ok := s.heldTicks[ref]
	ok = ok && string(held) == string(key)
	if ok {
		delete(s.heldTicks, ref)
		delete(s.heldKeys, string(key))
	}
	s.mu.Unlock()
	if ok {
		s.done(key) // when holdTick has not yet taken it out of flight
	}
}

// releaseResumed fires the ticks held for processes no longer paused:
// on a cluster a process may be resumed on another node, whose
// releaseTick does not reach this one's ticks (see cluster.syncShared).
func (s *scheduler) releaseResumed(paused map[pausedRef]bool) {
	var resumed []pausedRef
	s.mu.Lock()
	for ref := range s.heldTicks {
		if !paused[ref] {
			resumed = append(resumed, ref)
		}
	}
	s.mu.Unlock()
	for _, ref := range resumed {
		s.releaseTick(ref.tenant, ref.process)
	}
}
