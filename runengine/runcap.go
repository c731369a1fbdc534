package runengine

import "strings"

// runCapReason starts the waiting reason of a run waiting for a slot under
// a run cap (Config.MaxRunsPerTenant, MaxRunsPerProcess). The reason is
// saved with the run, so a restart finds the runs that never took their
// first step and queues them again.
const runCapReason = "run cap "

// capWaiting reports whether the run waits for a slot under a run cap.
func capWaiting(r *Run) bool { return strings.HasPrefix(r.WaitingReason, runCapReason) }

// capHeldAtStart takes a run cap slot for a new run, and reports whether
// there was none: the run is then saved waiting for one, and queued once
// that save is durable (a run waiting for a slot makes no call before it).
func (x *exec) capHeldAtStart() bool {
	caps, r := x.w.e.runCaps, x.r
	if caps == nil || caps.tryTake(r.Tenant, r.ProcessID, r.ID) {
		return false
	}
	r.WaitingReason = caps.reasonFor(r.Tenant, r.ProcessID)
	tenant, process, priority, id := r.Tenant, r.ProcessID, r.Priority, r.ID
	later := x.w.e.admitRun(tenant, id)
	x.fx.post = append(x.fx.post, func() {
		if caps.tryAdmit(tenant, process, priority, id, later) {
			later()
		}
	})
	return true
}

// capHeld handles an advance of a run waiting for a run cap slot, and
// reports whether the run must go on waiting. admitted says the slot was
// taken for it; otherwise (the engine opened, the run was reloaded) it
// takes one if there is room, or queues for one.
func (x *exec) capHeld(admitted bool) bool {
	caps, r := x.w.e.runCaps, x.r
	if caps == nil || !capWaiting(r) || r.Finished() {
		return false
	}
	if !admitted && !caps.tryAdmit(r.Tenant, r.ProcessID, r.Priority, r.ID, x.w.e.admitRun(r.Tenant, r.ID)) {
		return true
	}
	r.WaitingReason = ""
	x.dirty = true
	return false
}

// capQueuedOnResume takes a run cap slot for a run resumed before its
// first step (pauseState.SlotWait), or queues it for one, and then
// returns the waiting reason the run is saved with; "" when it goes on
// (a slot taken, no run cap, or a run that took its first step, which
// takes a slot room or not: see capStatus).
func (x *exec) capQueuedOnResume(p *pauseState) string {
	caps, r := x.w.e.runCaps, x.r
	if caps == nil || !p.SlotWait || p.From != RunRunning ||
		caps.tryAdmit(r.Tenant, r.ProcessID, r.Priority, r.ID, x.w.e.admitRun(r.Tenant, r.ID)) {
		return ""
	}
	return caps.reasonFor(r.Tenant, r.ProcessID)
}

// holdCapSlot counts a running run that took its first step before the
// engine opened as holding a run cap slot.
func (x *exec) holdCapSlot() {
	caps, r := x.w.e.runCaps, x.r
	if caps == nil || r.Status != RunRunning || capWaiting(r) {
		return
	}
	caps.hold(r.Tenant, r.ProcessID, r.ID)
}

// capStatus frees the run cap slot of a run that starts waiting (for a
// person, a timer or an event) or is paused, at once, and takes one again,
// room or not, when it runs again: a run that waits holds no worker, and
// what it waits for (a run its event starts, say) must never queue behind
// it. A run waiting for a slot that is paused leaves the queue.
func (x *exec) capStatus(from, to RunStatus) {
	caps, r := x.w.e.runCaps, x.r
	if caps == nil {
		return
	}
	switch {
	case from == RunRunning && (to == RunWaiting || to == RunPaused):
		caps.release(r.Tenant, r.ProcessID, r.ID)
	case to == RunRunning:
		caps.hold(r.Tenant, r.ProcessID, r.ID)
	}
}

// releaseCapSlot frees the run cap slot of a run that ends (or takes it out
// of the queue) once the end is durable.
func (x *exec) releaseCapSlot() {
	caps, r := x.w.e.runCaps, x.r
	if caps == nil {
		return
	}
	tenant, process, id := r.Tenant, r.ProcessID, r.ID
	x.fx.post = append(x.fx.post, func() { caps.release(tenant, process, id) })
}

// admitRun returns what starts a run once a run cap slot is taken for it.
func (e *Engine) admitRun(tenant, runID string) func() {
	return func() {
		e.workerFor(runID).send(&command{kind: cmdAdvance, tenant: tenant, runID: runID, admitted: true})
	}
}
