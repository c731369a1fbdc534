package runengine

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/bas-platform/bas/process"
)

// stepEnv is an exec seen by the executor of the step it runs: the
// engine's one implementation of process.StepEnv. The step is exec's def
// and st, set by runStep.
type stepEnv exec

var _ process.DataPartsEnv = (*stepEnv)(nil)

func (e *stepEnv) x() *exec { return (*exec)(e) }

// Step implements process.StepEnv.
func (e *stepEnv) Step() *process.Step { return e.def }

// Config implements process.StepEnv.
func (e *stepEnv) Config(v any) error { return e.x().config(e.def, v) }

// Data implements process.StepEnv.
func (e *stepEnv) Data() map[string]any { return e.x().data() }

// DataParts implements process.DataPartsEnv.
func (e *stepEnv) DataParts(roots []string) map[string]any { return e.x().dataParts(roots) }

// Now implements process.StepEnv.
func (e *stepEnv) Now() time.Time { return e.now }

// State implements process.StepEnv.
func (e *stepEnv) State() process.StepState {
	in := &e.st.internal
	return process.StepState{Approved: in.Approved, Args: in.Args, Auto: in.Auto, Sample: in.Sample,
		Reminders: in.Reminders, Checks: in.Checks, Deadline: in.Deadline, AmountSeen: in.AmountSeen}
}

// SetState implements process.StepEnv.
func (e *stepEnv) SetState(s process.StepState) {
	in := &e.st.internal
	in.Approved, in.Args, in.Auto, in.Sample = s.Approved, s.Args, s.Auto, s.Sample
	in.Reminders, in.Checks, in.Deadline, in.AmountSeen = s.Reminders, s.Checks, s.Deadline, s.AmountSeen
	e.dirty = true
}

// Output implements process.StepEnv.
func (e *stepEnv) Output() any { return e.st.Output }

// SetOutput implements process.StepEnv.
func (e *stepEnv) SetOutput(v any) {
	e.x().setOutput(e.st, v)
	e.dirty = true
}

// Called implements process.StepEnv.
func (e *stepEnv) Called() bool { return e.res != nil }

// Gate implements process.StepEnv.
func (e *stepEnv) Gate() (process.GateVerdict, bool) {
	if e.res == nil || e.res.gate == nil {
		return process.GateVerdict{}, false
	}
	g := e.res.gate
	e.dirty = true
	e.x().join(&e.res.gateWrites)
	if !g.Auto {
		e.res = nil
	}
	return process.GateVerdict{Auto: g.Auto, Sample: g.Sample, Reason: g.Reason}, true
}

// CallOutcome implements process.StepEnv.
func (e *stepEnv) CallOutcome() (any, bool) { return e.x().callOutcome(e.def, e.st) }

// CallSucceeded implements process.StepEnv.
func (e *stepEnv) CallSucceeded() bool {
	x := e.x()
	res := x.res
	if res == nil {
		return false
	}
	x.res = nil
	if res.err != nil {
		x.callFailed(e.def, e.st, res)
		return false
	}
	b := res.writes.TakeAll()
	x.join(&b)
	return true
}

// TaskDone implements process.StepEnv.
func (e *stepEnv) TaskDone() (process.TaskResult, bool) {
	t := e.taskDone
	if t == nil || e.st.TaskID == nil || *e.st.TaskID != t.ID {
		return process.TaskResult{}, false
	}
	e.taskDone = nil
	r := process.TaskResult{Fields: t.Values}
	if t.Outcome != nil {
		r.Outcome = *t.Outcome
	}
	if t.CompletedBy != nil {
		r.CompletedBy = *t.CompletedBy
	}
	return r, true
}

// HasTask implements process.StepEnv.
func (e *stepEnv) HasTask() bool { return e.st.TaskID != nil }

// TimerFired implements process.StepEnv.
func (e *stepEnv) TimerFired(kind string) bool {
	if e.timer == "" || e.timer != e.st.internal.WaitToken || !strings.HasPrefix(e.timer, kind) {
		return false
	}
	e.timer = ""
	e.st.internal.WaitToken = ""
	return true
}

// EventArrived implements process.StepEnv.
func (e *stepEnv) EventArrived() (process.StepEvent, bool) {
	ev := e.event
	if ev == nil || e.st.internal.WaitEvent != ev.name {
		return process.StepEvent{}, false
	}
	e.event = nil
	return process.StepEvent{Name: ev.name, ID: ev.id, Data: ev.data}, true
}

// Pending implements process.StepEnv.
func (e *stepEnv) Pending() (timer, event bool) {
	return e.st.internal.WaitToken != "", e.st.internal.WaitEvent != ""
}

// Call implements process.StepEnv.
func (e *stepEnv) Call(capID string, args any, token, keySuffix string) {
	e.x().call(e.def, e.st, capID, args, token, keySuffix)
}

// AskGate implements process.StepEnv.
func (e *stepEnv) AskGate(args map[string]any) { e.x().decide(e.def, e.st, args) }

// RequestApproval implements process.StepEnv.
func (e *stepEnv) RequestApproval(args map[string]any, reason string) {
	e.x().requestApproval(e.def, e.st, args, reason)
}

// CreateTask implements process.StepEnv.
func (e *stepEnv) CreateTask(t process.TaskSpec) {
	e.x().createTask(e.def, e.st, t.Title, t.Description, t.Actions, t.Fields, t.Assignee, t.DueHours, "step")
}

// CreateReview implements process.StepEnv.
func (e *stepEnv) CreateReview() { e.x().createReview(e.def) }

// StartTimer implements process.StepEnv.
func (e *stepEnv) StartTimer(d time.Duration, kind string) { e.x().startTimer(e.st, d, kind) }

// AddWaiter implements process.StepEnv.
func (e *stepEnv) AddWaiter(event string, filter json.RawMessage) {
	e.x().addWaiter(e.st, event, filter)
}

// DropWaiter implements process.StepEnv.
func (e *stepEnv) DropWaiter() { e.x().dropWaiter(e.st) }

// Wait implements process.StepEnv.
func (e *stepEnv) Wait() { e.x().wait(e.st, StepWaiting) }

// Resume implements process.StepEnv.
func (e *stepEnv) Resume() {
	e.x().setStatus(RunRunning)
	e.st.Status = StepRunning
}

// ClearAttempts implements process.StepEnv.
func (e *stepEnv) ClearAttempts() {
	e.st.Attempts = 0
	e.st.Error = nil
}

// Complete implements process.StepEnv.
func (e *stepEnv) Complete(output any, automatic bool) bool {
	e.x().completeStep(e.def, e.st, output, automatic)
	return true
}

// Fail implements process.StepEnv.
func (e *stepEnv) Fail(err error) bool { return e.x().stepFail(e.st, err) }
