package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// pauseState is what a paused run keeps: the status it resumes to, and
// the timers and events that came for it while it was paused (applied, in
// order, when it resumes).
type pauseState struct {
	From      RunStatus `json:"from"`
	ByProcess bool      `json:"by_process,omitempty"`
	At        time.Time `json:"at"`
	// Timers and Events are what came for the run while it was paused,
	// kept for its resume; a run's JSON does not show them (see
	// appendShown).
	Timers []string    `json:"timers,omitempty" jsonschema:"-"`
	Events []heldEvent `json:"events,omitempty" jsonschema:"-"`
	// SlotWait says the run had not taken its first step under a run cap
	// (it waited for a slot, or started paused): resumed, it takes a slot
	// when there is room, or queues for one again.
	SlotWait bool `json:"slot_wait,omitempty"`
}

// heldEvent is an event delivered to a paused run's waiter.
type heldEvent struct {
	Name string         `json:"name"`
	ID   string         `json:"id"`
	Data map[string]any `json:"data,omitempty"`
	Key  []byte         `json:"key"`
	// Timers is how many timers the run held when the event came: resumed,
	// it applies the event after them and before the next (see resumeRun).
	Timers int `json:"timers,omitempty"`
}

// holdsEvent reports whether an event for the waiter key is held.
func (p *pauseState) holdsEvent(key []byte) bool {
	for i := range p.Events {
		if bytes.Equal(p.Events[i].Key, key) {
			return true
		}
	}
	return false
}

// appendShown appends what a paused run's JSON shows of its pause: the
// status it resumes to, when and whether by its process, and slot_wait;
// not the timers and events it holds (the store's keys).
func (p *pauseState) appendShown(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"from":`...)
	b = jsonvalue.AppendString(b, string(p.From))
	b = append(b, `,"at":`...)
	if b, err = jsonvalue.AppendTime(b, p.At); err != nil {
		return b, err
	}
	if p.ByProcess {
		b = append(b, `,"by_process":true`...)
	}
	if p.SlotWait {
		b = append(b, `,"slot_wait":true`...)
	}
	return append(b, '}'), nil
}

func (p *pauseState) appendJSON(b []byte) ([]byte, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return b, errors.Wrap(err, "encode pause state")
	}
	return append(b, raw...), nil
}

// held applies a command to a paused run (or to a run of a paused
// process, which it pauses first) and reports whether it did: a paused
// run takes no step; a timer or event that comes is kept for its resume,
// a call result is parked, and a person's action is refused (409).
func (x *exec) held() bool {
	r, c := x.r, x.cmd
	if r.Finished() {
		return false
	}
	switch c.kind {
	case cmdPause, cmdResume, cmdFlush, cmdReload, cmdAssignTask:
		return false
	case cmdCancel:
		if r.Status == RunPaused {
			r.Paused = nil
			if x.en.parked != nil {
				x.en.parked.drop()
			}
			x.en.parked = nil
		}
		return false
	}
	if r.Status != RunPaused {
		if !x.w.e.processPaused(r.Tenant, r.ProcessID) {
			return false
		}
		x.pause(true)
	}
	p := r.Paused
	switch c.kind {
	case cmdCallResult:
		if c.result.token == x.en.inflight {
			x.en.parked = c.result
		} else {
			c.result.drop()
		}
	case cmdTimer:
		key := c.timer.key
		x.fx.ops = append(x.fx.ops, deleteKey(key))
		e := x.w.e // not x, which is reused
		x.fx.settled = append(x.fx.settled, func(err error) { e.sched.settle(key, err) })
		p.Timers = append(p.Timers, c.timer.token)
		x.dirty = true
	case cmdEvent:
		// The wait takes the first event its waiter matches, and the
		// waiter goes with it: the events that came after would not have
		// reached the run unpaused, so one is held per waiter (each may
		// carry 64 KiB, and the run is written whole with every change).
		if !p.holdsEvent(c.event.key) {
			p.Events = append(p.Events, heldEvent{Name: c.event.name, ID: c.event.id, Data: c.event.data, Key: c.event.key,
				Timers: len(p.Timers)})
			x.dirty = true
		}
	case cmdCompleteTask, cmdDecide:
		x.err = errs.Conflictf("run is paused; resume it first")
	}
	return true
}

// pause holds the run where it is. A run waiting for the slot a rate
// limit reserved for its call gives the slot up (see dropRateSlot): once
// resumed, its call takes the next free slot, so runs resumed together
// stay within the limit.
func (x *exec) pause(byProcess bool) {
	r := x.r
	if r.Cursor < len(r.Steps) {
		x.dropRateSlot(&r.Steps[r.Cursor])
	}
	r.Paused = &pauseState{From: r.Status, ByProcess: byProcess, At: x.now, SlotWait: capWaiting(r)}
	x.dirty = true
	x.setStatus(RunPaused)
	x.emit("process.run.paused", map[string]any{"run_id": r.ID, "process_id": r.ProcessID, "by_process": byProcess})
}

// pauseRun pauses the run by hand: 409 when it has finished, nothing when
// it is paused already.
func (x *exec) pauseRun(byProcess bool) {
	r := x.r
	switch {
	case r.Finished():
		x.err = errs.Conflictf("run already %s", r.Status)
	case r.Status != RunPaused:
		x.pause(byProcess)
	}
}

// startPaused pauses a new run of a paused process before its first step,
// and reports whether it did.
func (x *exec) startPaused() bool {
	if !x.w.e.processPaused(x.r.Tenant, x.r.ProcessID) {
		return false
	}
	x.pause(true)
	x.r.Paused.SlotWait = x.w.e.runCaps != nil
	return true
}

// resumeRun puts a paused run back where it was and applies what came
// for it meanwhile: the parked call result, then the held timers and
// events, in the order they came. The events were held for the wait the
// run was paused in: once a timer that came before them ended that wait
// (its timeout), they are dropped, not taken by a later wait, which was
// not there when they came. A run that waited for a rate limit's
// slot, given up by the pause, takes the next free slot at once rather
// than wait for the old slot's timer first: it then waits in its turn,
// showing why, or calls.
func (x *exec) resumeRun() {
	r := x.r
	switch {
	case r.Finished():
		x.err = errs.Conflictf("run already %s", r.Status)
		return
	case r.Status != RunPaused:
		x.err = errs.Conflictf("run is not paused")
		return
	case x.w.e.processPaused(r.Tenant, r.ProcessID):
		x.err = errs.Conflictf("the run's process is paused; resume the process")
		return
	}
	p := r.Paused
	r.Paused = nil
	x.dirty = true
	slotWait := x.capQueuedOnResume(p)
	x.setStatus(p.From)
	r.WaitingReason = slotWait
	x.emit("process.run.resumed", map[string]any{"run_id": r.ID, "process_id": r.ProcessID})
	if slotWait != "" {
		return // it takes its first step once admitted (see capHeld)
	}
	if res := x.en.parked; res != nil {
		x.en.parked = nil
		if res.token == x.en.inflight {
			x.en.inflight = ""
			x.res = res
			x.advance()
		}
	} else if p.From == RunRunning && x.en.inflight == "" {
		x.advance()
	} else if tok := rateSlotGivenUp(r); tok != "" {
		x.fireTimer(tok)
	}
	cursor, evs := r.Cursor, p.Events
	for i, tok := range p.Timers {
		evs = x.deliverHeld(cursor, evs, i)
		x.fireTimer(tok)
	}
	x.deliverHeld(cursor, evs, len(p.Timers))
}

// deliverHeld delivers the held events evs that came when the run held
// timers timers or fewer, and returns the others. An event is delivered
// only while the run's cursor is where the run was paused: it was held
// for that step's wait.
func (x *exec) deliverHeld(cursor int, evs []heldEvent, timers int) []heldEvent {
	for ; len(evs) > 0 && evs[0].Timers <= timers; evs = evs[1:] {
		if ev := &evs[0]; x.r.Cursor == cursor {
			x.deliverEvent(&eventArgs{name: ev.Name, id: ev.ID, data: ev.Data, key: ev.Key})
		}
	}
	return evs
}

// rateSlotGivenUp is the wait token of r's current step when the step
// waits for a rate limit's slot it gave up (see dropRateSlot), and ""
// otherwise.
func rateSlotGivenUp(r *Run) string {
	if r.Cursor >= len(r.Steps) {
		return ""
	}
	st := &r.Steps[r.Cursor]
	if tok := st.internal.WaitToken; strings.HasPrefix(tok, "rate-") && !st.internal.RateReserved {
		return tok
	}
	return ""
}

// Pause holds a run that has not finished: it takes no step until Resume;
// timers that come due and events it waits for are kept for then. Pausing
// a paused run changes nothing; pausing a finished one is a 409.
func (e *Engine) Pause(ctx context.Context, tenant, runID, actor string) (*Run, error) {
	return e.runCommand(ctx, tenant, runID, actor, cmdPause)
}

// Resume continues a paused run where it was (409 when it is not paused,
// or its process is).
func (e *Engine) Resume(ctx context.Context, tenant, runID, actor string) (*Run, error) {
	return e.runCommand(ctx, tenant, runID, actor, cmdResume)
}

// runCommand sends a cancel, pause or resume to the run.
func (e *Engine) runCommand(ctx context.Context, tenant, runID, actor string, kind cmdKind) (*Run, error) {
	rep, err := e.sendRunCommand(ctx, tenant, runID, actor, kind, "")
	return rep.run, err
}

// sendRunCommand sends a cancel, pause or resume to the run; job, when
// set, is the bulk job it is the action of (see command.job), and the
// reply says whether it changed the run.
func (e *Engine) sendRunCommand(ctx context.Context, tenant, runID, actor string, kind cmdKind, job string) (reply, error) {
	if _, err := e.GetRun(ctx, tenant, runID); err != nil {
		return reply{}, err
	}
	return e.send(ctx, &command{kind: kind, tenant: tenant, runID: runID, actor: actor, job: job})
}

// ProcessPause is whether a process is paused (see Engine.PauseProcess).
type ProcessPause struct {
	ProcessID string     `json:"process_id"`
	Paused    bool       `json:"paused"`
	PausedAt  *time.Time `json:"paused_at"`
	// Job resumes the runs the pause paused (set by ResumeProcess).
	Job *Job `json:"job"`
}

// pausedKey marks a paused process; its value is the pause's time.
func pausedKey(tenant, processID string) []byte {
	return store.Key(store.System, "proc-paused", tenant, processID)
}

// pausedRef names a paused process in Engine.pausedProcs.
type pausedRef struct{ tenant, process string }

func (e *Engine) processPaused(tenant, processID string) bool {
	if e.pausedN.Load() == 0 {
		return false
	}
	_, ok := e.pausedProcs.Load(pausedRef{tenant, processID})
	return ok
}

// markPaused records in memory whether a process is paused.
func (e *Engine) markPaused(tenant, processID string, paused bool) {
	k := pausedRef{tenant, processID}
	if paused {
		if _, had := e.pausedProcs.LoadOrStore(k, true); !had {
			e.pausedN.Add(1)
		}
		return
	}
	if _, had := e.pausedProcs.LoadAndDelete(k); had {
		e.pausedN.Add(-1)
	}
}

// PauseProcess pauses a process: its new runs start paused (they queue),
// and each of its runs pauses at the next thing that happens to it (a
// step, a timer, an event, a person's action, which is then a 409), so
// nothing is lost and nothing moves until ResumeProcess.
func (e *Engine) PauseProcess(ctx context.Context, tenant, processID string) (*ProcessPause, error) {
	if err := e.st.View(ctx, func(r store.Reader) error {
		_, err := e.cfg.Processes.Load(r, tenant, processID)
		return err
	}); err != nil {
		return nil, err
	}
	key := pausedKey(tenant, processID)
	var at time.Time
	err := e.commits.commitWait(ctx, &delta{reads: true, apply: func(tx store.Txn) error {
		cur, err := tx.Get(key)
		switch {
		case err == nil:
			return at.UnmarshalText(cur)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		at = e.now()
		raw, _ := at.MarshalText()
		return tx.Set(key, raw)
	}})
	if err != nil {
		return nil, err
	}
	e.markPaused(tenant, processID, true)
	return &ProcessPause{ProcessID: processID, Paused: true, PausedAt: &at}, nil
}

// ResumeProcess resumes a paused process: new runs start as usual again,
// and a job (in the same commit, so a restart finishes it) resumes the
// runs the pause paused. Resuming a process that is not paused changes
// nothing.
func (e *Engine) ResumeProcess(ctx context.Context, tenant, processID, actor string) (*ProcessPause, error) {
	if err := e.st.View(ctx, func(r store.Reader) error {
		_, err := e.cfg.Processes.Load(r, tenant, processID)
		return err
	}); err != nil {
		return nil, err
	}
	if !e.processPaused(tenant, processID) {
		return &ProcessPause{ProcessID: processID}, nil
	}
	rec := e.newJob(JobFilter{ProcessID: processID, Status: RunPaused, PausedBy: "process"}, JobResume, actor)
	key := pausedKey(tenant, processID)
	err := e.commits.commitWait(ctx, &delta{reads: true, apply: func(tx store.Txn) error {
		if err := tx.Delete(key); err != nil {
			return err
		}
		n, err := runs.CountBy(tx, tenant, "paused-by-process", processID)
		if err != nil {
			return err
		}
		rec.Total = n
		return e.putJob(tx, tenant, rec)
	}})
	if err != nil {
		return nil, err
	}
	e.markPaused(tenant, processID, false)
	e.sched.releaseTick(tenant, processID)
	e.startJob(tenant, rec.ID)
	job := rec.Job
	return &ProcessPause{ProcessID: processID, Job: &job}, nil
}

// ProcessPaused reports whether a process is paused, and since when.
func (e *Engine) ProcessPaused(ctx context.Context, tenant, processID string) (*ProcessPause, error) {
	var out ProcessPause
	out.ProcessID = processID
	err := e.st.View(ctx, func(r store.Reader) error {
		cur, err := r.Get(pausedKey(tenant, processID))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var at time.Time
		if err := at.UnmarshalText(cur); err != nil {
			return err
		}
		out.Paused, out.PausedAt = true, &at
		return nil
	})
	return &out, err
}

// openPauses marks the paused processes the store holds, and returns them
// with the jobs a close interrupted, for Open to restart once the workers
// run (on a cluster node, through its first lease round).
func (e *Engine) openPauses(ctx context.Context) (map[pausedRef]bool, []jobRef, error) {
	paused, jobs, err := e.readPausesAndJobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	for ref := range paused {
		e.markPaused(ref.tenant, ref.process, true)
	}
	return paused, jobs, nil
}

// jobRef names a bulk job of a tenant.
type jobRef struct{ tenant, id string }

// readPausesAndJobs reads the paused processes and the jobs still running
// (as the store says: on open, those a close interrupted).
func (e *Engine) readPausesAndJobs(ctx context.Context) (map[pausedRef]bool, []jobRef, error) {
	paused := map[pausedRef]bool{}
	var jobs []jobRef
	err := e.st.View(ctx, func(r store.Reader) error {
		err := r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "proc-paused"), KeysOnly: true}, func(key, _ []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) != 4 {
				return errors.Newf("runengine: bad paused key %q", key)
			}
			paused[pausedRef{parts[2].(string), parts[3].(string)}] = true
			return nil
		})
		if err != nil {
			return err
		}
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "jobs-running"), KeysOnly: true}, func(key, _ []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil || len(parts) != 4 {
				return errors.Newf("runengine: bad job key %q", key)
			}
			jobs = append(jobs, jobRef{parts[2].(string), parts[3].(string)})
			return nil
		})
	})
	if err != nil {
		return nil, nil, errors.Wrap(err, "runengine: read paused processes and running jobs")
	}
	return paused, jobs, nil
}

// rerunArgs make a new run a rerun of another from a step: the steps
// before it are the original's, outputs included; job is the bulk job
// that reruns it, if one does.
type rerunArgs struct {
	of, from, job string
	steps         []StepRun
}

// apply copies the reused steps into r.
func (a *rerunArgs) apply(r *Run) {
	if a == nil {
		return
	}
	r.RerunOf, r.RerunFromStep, r.RerunJob = a.of, a.from, a.job
	copy(r.Steps, a.steps)
	r.Cursor = len(a.steps)
	if r.Cursor < len(r.Steps) {
		r.CurrentStep = &r.Steps[r.Cursor].Key
	}
}

// Rerun starts a new run of a finished run's process version from one of
// its steps: the steps before it keep the original's outcome and outputs,
// the step and those after it run again. The new run names the original
// (rerun_of, rerun_from_step); the original is not changed. A run not
// finished is a 409; a step the run does not have or did not reach, a
// 422. Like Start, it passes the tenant's door (MaxStartingPerTenant,
// FairStartingPerTenant).
func (e *Engine) Rerun(ctx context.Context, tenant, runID, fromStep, actor string) (*Run, error) {
	return e.rerun(ctx, tenant, runID, fromStep, actor, "")
}

// rerun is Rerun; with job set, it is that bulk job's rerun of the run:
// keyed "bulk/<job>/<run>", so that one repeated within IdempotencyWindow
// returns the first one's run instead of starting another (the key is
// written in the rerun's start commit, as a Start's), and marked as the
// job's in that commit (see jobRunKey), so the job finds it later too.
func (e *Engine) rerun(ctx context.Context, tenant, runID, fromStep, actor, job string) (*Run, error) {
	key := ""
	if job != "" {
		key = "bulk/" + job + "/" + runID
	}
	orig, err := e.GetRun(ctx, tenant, runID)
	if err != nil {
		return nil, err
	}
	if !orig.Finished() {
		return nil, errs.Conflictf("run is %s; only a finished run can be rerun", orig.Status)
	}
	idx := -1
	for i, s := range orig.Steps {
		if s.Key == fromStep {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, errs.Invalidf([]any{"from_step"}, "value_error", "the run has no step %q", fromStep)
	}
	for _, s := range orig.Steps[:idx] {
		if s.Status != StepCompleted && s.Status != StepSkipped {
			return nil, errs.Invalidf([]any{"from_step"}, "value_error",
				"step %s before it did not complete (it is %s); rerun from it or an earlier step", s.Key, s.Status)
		}
	}
	// The door, then the key, in Start's order: a keyed rerun waiting at
	// the door while holding its key would stall a Start of that key that
	// holds the tenant's slot. The key before the process: a repeat
	// answers the first rerun whatever changed since (the process
	// archived, say).
	if g := e.starting; g != nil {
		if err := g.enter(ctx, tenant); err != nil {
			return nil, err
		}
		defer g.leave(tenant)
	}
	var ops []func(store.Txn) error
	sweeps := false
	keyed := StartParams{Tenant: tenant, ProcessID: orig.ProcessID, IdempotencyKey: key}
	if key != "" {
		unlock, first, kops, err := e.claimStartKey(ctx, keyed)
		if err != nil || first != nil {
			return first, err
		}
		defer unlock()
		ops, sweeps = kops, len(kops) > 0 // removals of expired keys read them
	}
	def, err := e.loadDef(ctx, tenant, orig.ProcessID)
	if err != nil {
		return nil, err
	}
	switch {
	case def.Archived:
		return nil, errs.Conflictf("process is archived")
	case !def.Enabled:
		return nil, errs.Conflictf("process is disabled")
	}
	ver, err := e.version(tenant, orig.ProcessID, orig.ProcessVersion)
	if err != nil {
		return nil, err
	}
	steps := make([]StepRun, idx)
	copy(steps, orig.Steps[:idx])
	for i := range steps {
		steps[i].internal.WaitToken, steps[i].internal.WaitEvent = "", ""
		steps[i].internal.OutputBytes = 0 // the new run stores it apart again, under its own id
	}
	trig := orig.Trigger
	newID := e.newRunID()
	if job != "" {
		ops = append(ops, setKey(jobRunKey(tenant, job, runID), []byte(newID)))
	}
	if key != "" {
		ops = append(ops, e.startKeyWrite(tenant, key, newID))
		sweeps = sweeps || e.cluster != nil // the write reads the key again
	}
	rep, err := e.send(ctx, &command{kind: cmdStart, tenant: tenant, runID: newID, actor: actor, start: &startArgs{
		version: ver, subject: orig.Subject, trigger: trig, actor: actor, priority: orig.Priority,
		rerun: &rerunArgs{of: orig.ID, from: fromStep, job: job, steps: steps}, ops: ops, reads: sweeps,
	}})
	if isErr(err, errStartKeyTaken) { // another node reran it first
		return e.keyedRun(ctx, keyed)
	}
	if err != nil {
		return nil, err
	}
	return rep.run, nil
}

// Retry reruns a failed run from the step that failed (see Rerun).
func (e *Engine) Retry(ctx context.Context, tenant, runID, actor string) (*Run, error) {
	return e.retry(ctx, tenant, runID, actor, "")
}

// retry is Retry; job is rerun's.
func (e *Engine) retry(ctx context.Context, tenant, runID, actor, job string) (*Run, error) {
	orig, err := e.GetRun(ctx, tenant, runID)
	if err != nil {
		return nil, err
	}
	if orig.Status != RunFailed {
		return nil, errs.Conflictf("run is %s; only a failed run can be retried", orig.Status)
	}
	for _, s := range orig.Steps {
		if s.Status == StepFailed {
			return e.rerun(ctx, tenant, runID, s.Key, actor, job)
		}
	}
	return nil, errs.Conflictf("run has no failed step")
}
