package process

import (
	"encoding/json"
	"fmt"
	"time"
)

// StepEnv is what a step type's executor may ask of the engine that runs
// it: the step and its config, the run's data, what woke the step (a
// call's result, a person's task, a timer, an event) and the engine's means
// (capability calls, tasks, approvals, timers, event waits). The engine
// implements it once; an executor (StepDef.Run, or the pure path of a type
// with Eval) holds it only while it runs, and decides what the step does
// next. Every record, key and commit stays the engine's.
//
// An executor is called when the run reaches the step and each time
// something wakes it; it returns true when the step completed and the run
// goes on (Complete returns true, Fail false, for a tail call).
type StepEnv interface {
	// Step is the step being run, as its process version defines it.
	Step() *Step
	// Config decodes the step's config, its references resolved against
	// the run's data, into v (a pointer to the type's config struct). What
	// it yields is read, never changed: maps and slices in it may be
	// shared by the runs of the version.
	Config(v any) error
	// Data is what references read: subject, trigger, the outputs of the
	// completed steps and the run.
	Data() map[string]any
	// Now is the time of the command being applied.
	Now() time.Time
	// State is the step's bookkeeping kept with the run; SetState stores
	// it.
	State() StepState
	// SetState stores the step's bookkeeping.
	SetState(s StepState)
	// Output is the step's output so far (a draft keeps the text ai.draft
	// wrote there while a person reviews it).
	Output() any
	// SetOutput stores the step's output so far, without completing it.
	SetOutput(v any)

	// Called reports whether the result of the step's call is in hand.
	Called() bool
	// Gate returns the autonomy gate's verdict on the step's action when
	// the result in hand carries one (see AskGate). A verdict that a
	// person decides carries no call result: Gate consumes it.
	Gate() (GateVerdict, bool)
	// CallOutcome consumes the result in hand: the decoded output and true
	// on success; on failure the engine has scheduled a retry or failed
	// the run, and it returns false.
	CallOutcome() (any, bool)
	// CallSucceeded consumes the result in hand for a step that no longer
	// needs its output: it reports whether the call succeeded, and a
	// failure is only reported (no retry is scheduled, the run goes on).
	// A successful call's writes join the step's commit, as with
	// CallOutcome.
	CallSucceeded() bool
	// TaskDone consumes the completion of the step's task, when a person
	// just completed it.
	TaskDone() (TaskResult, bool)
	// HasTask reports whether the step has given a person its task.
	HasTask() bool
	// TimerFired consumes the firing of the step's timer of kind (see
	// StartTimer), when it just fired.
	TimerFired(kind string) bool
	// EventArrived consumes the event the step waits for, when it just
	// arrived (see AddWaiter).
	EventArrived() (StepEvent, bool)
	// Pending reports whether the step waits for a timer and for an
	// event.
	Pending() (timer, event bool)

	// Call calls capability with args outside the worker; its result
	// wakes the step (Called). token names the kind of call ("call",
	// "remind"); the engine numbers each call, and the step is woken only
	// by the result of the call it made last. keySuffix goes into its
	// idempotency key before the attempt (run/step/<keySuffix><attempt>).
	// The step's allowed_tools and rate limits apply: a call they refuse
	// fails the run or waits.
	Call(capability string, args any, token, keySuffix string)
	// AskGate asks the autonomy gate whether the step's capability may be
	// called with args without a person, and calls it in the same go when
	// it may; the result (with the verdict, see Gate) wakes the step.
	AskGate(args map[string]any)
	// RequestApproval makes the step wait for a person to approve its
	// action with args; reason says why.
	RequestApproval(args map[string]any, reason string)
	// CreateTask gives a person the step's task and makes the step wait
	// for it.
	CreateTask(t TaskSpec)
	// CreateReview makes the after-the-fact review task of an automatic
	// action of the step; the run does not wait on it.
	CreateReview()
	// StartTimer sets a timer of kind d from now for the step (its State's
	// Deadline becomes the time it fires).
	StartTimer(d time.Duration, kind string)
	// AddWaiter makes the step wait for event, optionally matching filter.
	AddWaiter(event string, filter json.RawMessage)
	// DropWaiter stops the step waiting for an event.
	DropWaiter()
	// Wait puts the run to wait on the step (for its timer or event).
	Wait()
	// Resume puts a waiting run and step back to running.
	Resume()
	// ClearAttempts forgets the failed attempts of the step's last call,
	// before its next one.
	ClearAttempts()
	// Complete completes the step with output (automatic: without a
	// person) and returns true.
	Complete(output any, automatic bool) bool
	// Fail fails the run on the step with err and returns false.
	Fail(err error) bool
}

// StepState is the bookkeeping of a step the engine keeps with its run
// for the step's executor.
type StepState struct {
	// Approved says a person approved the step's action; Args are the
	// approved (possibly edited) arguments.
	Approved bool
	Args     map[string]any
	// Auto says the autonomy gate let the action run without a person;
	// Sample asks for its review afterwards.
	Auto   bool
	Sample bool
	// Reminders counts a follow_up's reminders sent, Checks a monitor's
	// checks.
	Reminders int
	Checks    int
	// Deadline is when the step's timer fires, or a monitor's timeout.
	Deadline *time.Time
	// AmountSeen is the amount an execute step compared with its cap.
	AmountSeen *int64
}

// GateVerdict is the autonomy gate's verdict on a step's action.
type GateVerdict struct {
	// Auto is true when the action runs without a person.
	Auto bool
	// Sample asks for an after-the-fact review of an automatic action.
	Sample bool
	// Reason says why.
	Reason string
}

// TaskSpec is the task a step gives a person.
type TaskSpec struct {
	// Title and Description say what to do.
	Title       string
	Description string
	// Actions are the outcomes a person may choose, Fields what they fill
	// in (as the task shows them: key, label, type, required, options).
	Actions []string
	Fields  []map[string]any
	// Assignee is who works it (empty: anyone); DueHours, when positive,
	// sets its due time that many hours from now.
	Assignee string
	DueHours *float64
}

// TaskResult is a person's completion of a step's task.
type TaskResult struct {
	// Outcome is the action chosen, Fields the values submitted.
	Outcome     string
	Fields      map[string]any
	CompletedBy string
}

// StepEvent is an event a waiting step received.
type StepEvent struct {
	Name string
	ID   string
	Data map[string]any
}

// Run runs a step of the type in env (see StepEnv): the type's executor,
// or the pure path for a type with Eval. It returns true when the step
// completed and the run goes on.
func (t StepType) Run(env StepEnv) bool {
	switch {
	case t.run != nil:
		return t.run(env)
	case t.eval != nil:
		return t.runPure(env)
	}
	def := env.Step()
	return env.Fail(fmt.Errorf("step %s: step type %q has no work", def.Key, def.Type))
}

// runPure runs a pure step: its output is Eval of its resolved config, or
// the result of the capability call Call names (an intake given a document
// calls document.extract).
func (t StepType) runPure(env StepEnv) bool {
	def := env.Step()
	cfg := t.NewConfig()
	if err := env.Config(cfg); err != nil {
		return env.Fail(err)
	}
	var out any
	if capID, args, ok := t.Call(cfg, *def); ok {
		if !env.Called() {
			env.Call(capID, args, "call", "")
			return false
		}
		o, ok := env.CallOutcome()
		if !ok {
			return false
		}
		var err error
		if out, err = t.Result(cfg, *def, o); err != nil {
			return env.Fail(fmt.Errorf("step %s: %w", def.Key, err))
		}
	} else {
		var err error
		out, err = t.Eval(cfg, *def, stepData(env, cfg))
		if err != nil {
			return env.Fail(fmt.Errorf("step %s: %w", def.Key, err))
		}
	}
	v, err := toAny(out)
	if err != nil {
		return env.Fail(fmt.Errorf("step %s: output: %w", def.Key, err))
	}
	return env.Complete(v, true)
}

// DataPartsEnv is a StepEnv that can make part of the run's data: a pure
// step whose config says which keys of the data it reads (a prepared route)
// is given only those, and the rest is never built.
type DataPartsEnv interface {
	StepEnv
	// DataParts is Data with only the keys roots ("subject", "trigger",
	// "steps", "run"; others are left out).
	DataParts(roots []string) map[string]any
}

// dataReader is a step's config that knows which keys of the run's data
// its step reads (ok false: it does not know).
type dataReader interface {
	dataRoots() (roots []string, ok bool)
}

// stepData is the run's data a pure step of config cfg is evaluated on:
// only the keys cfg reads where both cfg and env can say so, else Data.
func stepData(env StepEnv, cfg any) map[string]any {
	if d, ok := cfg.(dataReader); ok {
		if pe, ok := env.(DataPartsEnv); ok {
			if roots, ok := d.dataRoots(); ok {
				return pe.DataParts(roots)
			}
		}
	}
	return env.Data()
}

// toAny turns a Go value into its decoded JSON form (numbers exact), so
// references can walk it.
func toAny(v any) (any, error) {
	if d, ok := v.(decodedForm); ok {
		if out, ok := d.decoded(); ok {
			return out, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := decodeJSON(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodedForm is a step output that makes its decoded JSON form itself,
// without an encoding and a decoding; ok false leaves it to toAny.
type decodedForm interface {
	decoded() (v any, ok bool)
}

// orEmpty is m, or an empty map for nil.
func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
