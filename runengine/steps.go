package runengine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
)

// runStep runs the current step through its type's executor (see
// process.StepType.Run and stepEnv); it returns true when the step
// completed and the run may go on.
func (x *exec) runStep(def *process.Step, st *StepRun) bool {
	t, ok := x.w.e.stepTypes.Lookup(def.Type)
	if !ok {
		return x.stepFail(st, fmt.Errorf("step %s: unknown step type %q", def.Key, def.Type))
	}
	x.def, x.st = def, st
	return t.Run((*stepEnv)(x))
}

// stepFail fails the run with a config or reference error of the step.
func (x *exec) stepFail(st *StepRun, err error) bool {
	x.failRun(st, RunFailed, errorText(err))
	return false
}

// --- tasks

// createTask makes a task of the step: the step's own (kind step, which the
// step waits on) or a review.
func (x *exec) createTask(def *process.Step, st *StepRun, title, desc string, actions []string,
	fields []map[string]any, assignee string, dueHours *float64, kind string) *Task {
	id := x.w.e.ids.New("tsk", x.now)
	title, desc = truncateRunes(title, MaxTaskTitle), truncateRunes(desc, MaxTaskDescription)
	t := &Task{
		ID: id, RunID: x.r.ID, ProcessID: x.r.ProcessID, ProcessName: x.r.ProcessName, StepKey: def.Key,
		Title: title, Subject: x.r.Subject, Actions: actions, Fields: fields, Status: TaskOpen,
		CreatedAt: x.now, Kind: kind, Priority: x.r.Priority,
	}
	if len(fields) == 0 {
		t.Fields = nil
	}
	if desc != "" {
		t.Description = &desc
	}
	if assignee != "" {
		t.Assignee = &assignee
	}
	if dueHours != nil && *dueHours > 0 {
		d := x.now.Add(time.Duration(*dueHours * float64(time.Hour)))
		t.DueAt = &d
	}
	x.putTask(nil, t)
	if kind == "step" {
		st.TaskID = &id
		x.wait(st, StepWaitingTask)
	}
	x.emit("task.created", map[string]any{"task_id": id, "run_id": x.r.ID, "process_id": x.r.ProcessID,
		"step_key": def.Key, "title": title, "kind": kind})
	return t
}

// openTask returns the task id of this run when it is open; otherwise it
// sets x.err (not found, or a conflict naming the task's status) and
// returns nil.
func (x *exec) openTask(id string) *Task {
	t, err := x.task(id)
	if err != nil {
		x.err = err
		return nil
	}
	if t.Status != TaskOpen {
		x.err = errs.Conflictf("task already %s", t.Status)
		return nil
	}
	return t
}

// completeTask applies a person's completion of a task of this run.
func (x *exec) completeTask(a *taskArgs) {
	t := x.openTask(a.taskID)
	if t == nil {
		return
	}
	if vs := checkTaskInput(t, a.action, a.fields); len(vs) > 0 {
		x.err = errs.Validation(vs...)
		return
	}
	old := *t
	now := x.now
	actor := x.cmd.actor
	t.Status, t.Outcome, t.Values, t.CompletedAt, t.CompletedBy = TaskCompleted, &a.action, a.fields, &now, &actor
	if t.Values == nil {
		t.Values = map[string]any{}
	}
	x.putTask(&old, t)
	x.emit("task.completed", map[string]any{"task_id": t.ID, "run_id": t.RunID, "outcome": a.action, "kind": t.Kind})
	if t.Kind == "review" {
		agreed := a.action == "agree"
		x.observe(t.StepKey, agreed)
		return
	}
	if x.r.Finished() || x.r.Cursor >= len(x.r.Steps) || x.r.Steps[x.r.Cursor].TaskID == nil ||
		*x.r.Steps[x.r.Cursor].TaskID != t.ID {
		return
	}
	x.taskDone = t
	x.advance()
}

// checkTaskInput validates a completion against the task's actions and
// fields, reporting every violation.
func checkTaskInput(t *Task, action string, fields map[string]any) []errs.Violation {
	var vs []errs.Violation
	if !slices.Contains(t.Actions, action) {
		vs = append(vs, errs.Violation{Loc: []any{"action"}, Type: "enum",
			Msg: "must be one of: " + strings.Join(t.Actions, ", ")})
	}
	known := map[string]bool{}
	for _, f := range t.Fields {
		key, _ := f["key"].(string)
		known[key] = true
		v, present := fields[key]
		if present && v == nil {
			present = false
		}
		if s, ok := v.(string); ok && s == "" {
			present = false
		}
		if req, _ := f["required"].(bool); req && !present {
			vs = append(vs, errs.Violation{Loc: []any{"fields", key}, Msg: "is required", Type: "missing"})
			continue
		}
		if !present {
			continue
		}
		typ, _ := f["type"].(string)
		if msg, typeName := checkFieldValue(typ, f, v); msg != "" {
			vs = append(vs, errs.Violation{Loc: []any{"fields", key}, Msg: msg, Type: typeName})
		}
	}
	for k := range fields {
		if !known[k] {
			vs = append(vs, errs.Violation{Loc: []any{"fields", k}, Msg: "is not a field of this task", Type: "extra_forbidden"})
		}
	}
	if raw, err := jsonvalue.Append(nil, fields); err == nil && len(raw) > MaxStepOutputBytes {
		vs = append(vs, errs.Violation{Loc: []any{"fields"}, Type: "too_long",
			Msg: fmt.Sprintf("the fields are %d bytes of JSON; a step's output may be at most %d", len(raw), MaxStepOutputBytes)})
	}
	slices.SortFunc(vs, func(a, b errs.Violation) int { return strings.Compare(a.String(), b.String()) })
	return vs
}

func checkFieldValue(typ string, f map[string]any, v any) (string, string) {
	switch typ {
	case "number", "money":
		if _, ok := jsonvalue.Float(v); !ok {
			return "must be a number", "type_error"
		}
		if typ == "money" {
			if n, _ := jsonvalue.Float(v); n != math.Trunc(n) {
				return "must be an integer amount of cents", "type_error"
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "must be true or false", "type_error"
		}
	case "date":
		s, ok := v.(string)
		if _, err := time.Parse("2006-01-02", s); !ok || err != nil {
			return "must be a date (YYYY-MM-DD)", "value_error"
		}
	case "email":
		s, ok := v.(string)
		if !ok || !strings.Contains(s, "@") || strings.ContainsAny(s, " \t") {
			return "must be an email address", "value_error"
		}
	case "enum":
		opts, _ := f["options"].([]string)
		s, _ := v.(string)
		if !slices.Contains(opts, s) {
			return "must be one of: " + strings.Join(opts, ", "), "enum"
		}
	default:
		if _, ok := v.(string); !ok {
			return "must be a string", "type_error"
		}
	}
	return "", ""
}

// --- the autonomy gate and approvals

// decide asks the autonomy gate outside the worker and, when the action
// may run on its own, makes the call in the same go.
func (x *exec) decide(def *process.Step, st *StepRun, args map[string]any) {
	pc := x.prepareCall(def, st, def.Capability, args, "gate", "")
	if pc == nil {
		return
	}
	pc.asksGate = true
	x.en.inflight = pc.res.token
	x.addCall(pc)
}

// createReview makes the after-the-fact review task of a sampled
// automatic action; the run does not wait on it.
func (x *exec) createReview(def *process.Step) {
	i := slices.IndexFunc(x.r.Steps, func(s StepRun) bool { return s.Key == def.Key })
	x.createTask(def, &x.r.Steps[i], "Review automatic action: "+def.Capability,
		"This action ran without a person. Agree if it was right.", []string{"agree", "disagree"}, nil, "", nil, "review")
}

// observe tells the gate what a person thought of an action.
func (x *exec) observe(stepKey string, agreed bool) {
	e := x.w.e
	o := Outcome{Tenant: x.r.Tenant, ProcessID: x.r.ProcessID, RunID: x.r.ID, StepKey: stepKey, Agreed: agreed, Actor: x.cmd.actor}
	x.fx.post = append(x.fx.post, func() {
		e.goCall(func() {
			// A panic of the gate is logged, as a call's is (doSafe):
			// an outcome not told must not end the process.
			defer func() {
				if v := recover(); v != nil {
					e.log.Error("autonomy gate observe panicked", "run", o.RunID, "panic", fmt.Sprint(v))
				}
			}()
			if err := e.cfg.Gate.Observe(e.ctx, o); err != nil {
				e.log.Error("autonomy gate observe", "run", o.RunID, "error", err)
			}
		})
	})
}

// decideApproval applies a person's decision on an approval of this run.
func (x *exec) decideApproval(d *decideArgs) {
	a, err := x.approval(d.approvalID)
	if err != nil {
		x.err = err
		return
	}
	if a.Status != ApprovalPending {
		x.err = errs.Conflictf("approval already %s", a.Status)
		return
	}
	if x.holdVote(a, d) {
		return
	}
	x.settleApproval(a, d.approve, d.args, d.reason, x.cmd.actor, false)
}

// settleApproval decides a (approve, reject or expire) and moves the run.
func (x *exec) settleApproval(a *Approval, approve bool, args map[string]any, reason, actor string, expired bool) {
	old := *a
	now := x.now
	switch {
	case expired:
		a.Status = ApprovalExpired
	case approve:
		a.Status = ApprovalApproved
	default:
		a.Status = ApprovalRejected
	}
	if !expired {
		a.DecidedBy, a.DecidedAt = &actor, &now
	}
	if reason != "" {
		a.Note = &reason
	}
	edited := approve && args != nil && !reflect.DeepEqual(normalize(args), normalize(a.Args))
	if edited {
		a.Edited = true
		a.Args = args
	}
	x.putApproval(&old, a)
	if a.ExpiresAt != nil && !expired {
		x.fx.ops = append(x.fx.ops, deleteKey(dueKey(*a.ExpiresAt, x.r.Tenant, x.r.ID, "expire-"+a.ID)))
	}
	x.emit("approval.decided", map[string]any{"approval_id": a.ID, "run_id": x.r.ID, "status": string(a.Status), "edited": edited})
	if !expired && a.StepKey != "" {
		x.observe(a.StepKey, approve && !edited)
	}
	i := slices.IndexFunc(x.r.Steps, func(s StepRun) bool { return s.ApprovalID != nil && *s.ApprovalID == a.ID })
	if i < 0 || x.r.Finished() || i != x.r.Cursor {
		return
	}
	st := &x.r.Steps[i]
	if !approve {
		msg := "approval rejected"
		if expired {
			msg = "approval expired"
		} else if reason != "" {
			msg = "approval rejected: " + reason
		}
		x.failRun(st, RunRejected, msg)
		return
	}
	st.internal.Approved = true
	st.internal.Args = a.Args
	st.Status = StepRunning
	x.setStatus(RunRunning)
	x.advance()
}

// normalize makes JSON-equal values DeepEqual.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// --- timers and event waits

// startTimer makes the step wait for a timer d from now.
func (x *exec) startTimer(st *StepRun, d time.Duration, kind string) {
	token := fmt.Sprintf("%s-%d-%d", kind, x.r.Cursor, x.now.UnixNano())
	st.internal.WaitToken = token
	at := x.now.Add(d)
	st.internal.Deadline = &at
	x.addTimer(at, token)
}

// addWaiter registers the run as waiting for event (with an optional
// filter) in the waiter index the dispatcher reads.
func (x *exec) addWaiter(st *StepRun, event string, flt json.RawMessage) {
	st.internal.WaitEvent = event
	x.w.e.listen(x.r.Tenant, event)
	val, _ := json.Marshal(waiter{Cursor: x.r.Cursor, Filter: flt})
	x.fx.ops = append(x.fx.ops, setKey(waiterKey(x.r.Tenant, event, x.r.ID), val))
}

func (x *exec) dropWaiter(st *StepRun) {
	if st.internal.WaitEvent != "" {
		x.fx.ops = append(x.fx.ops, deleteKey(waiterKey(x.r.Tenant, st.internal.WaitEvent, x.r.ID)))
		st.internal.WaitEvent = ""
	}
}

type waiter struct {
	Cursor int             `json:"cursor"`
	Filter json.RawMessage `json:"filter,omitempty"`
}

func waiterKey(tenant, event, runID string) []byte {
	return store.Key(store.System, "waiter", tenant, event, runID)
}

// --- timers, events, cancel

// fireTimer applies a due timer to the run.
func (x *exec) fireTimer(token string) {
	r := x.r
	if r.Finished() {
		return
	}
	switch {
	case strings.HasPrefix(token, "sla-"):
		i, _ := strconv.Atoi(strings.TrimPrefix(token, "sla-"))
		if i != r.Cursor || r.Steps[i].internal.SLAFired || r.Steps[i].Status == StepCompleted {
			return
		}
		r.Steps[i].internal.SLAFired = true
		r.Overdue = true
		x.dirty = true
		x.count(x.w.counterKey(r.Tenant, "overdue"), 1)
		x.emit("process.run.overdue", map[string]any{"run_id": r.ID, "process_id": r.ProcessID, "step_key": r.Steps[i].Key})
	case strings.HasPrefix(token, "expire-"):
		id := strings.TrimPrefix(token, "expire-")
		a, err := x.approval(id)
		if err != nil || a.Status != ApprovalPending {
			return
		}
		x.settleApproval(a, false, nil, "", "", true)
	default:
		if r.Cursor >= len(r.Steps) || r.Steps[r.Cursor].internal.WaitToken != token {
			return
		}
		st := &r.Steps[r.Cursor]
		if strings.HasPrefix(token, "retry-") || strings.HasPrefix(token, "rate-") {
			x.rateWaitOver(token)
			st.internal.WaitToken = ""
			st.Status = StepRunning
			x.setStatus(RunRunning)
		} else {
			x.timer = token
		}
		x.advance()
	}
}

// deliverEvent hands an event to a run waiting on it.
func (x *exec) deliverEvent(ev *eventArgs) {
	r := x.r
	if r.Finished() || r.Cursor >= len(r.Steps) || r.Steps[r.Cursor].internal.WaitEvent != ev.name {
		x.fx.ops = append(x.fx.ops, deleteKey(ev.key))
		x.dirty = true
		return
	}
	x.event = ev
	x.advance()
}

// cancel stops the run; its open task and pending approval are cancelled.
func (x *exec) cancel() {
	r := x.r
	if r.Finished() {
		x.err = errs.Conflictf("run already %s", r.Status)
		return
	}
	if r.Cursor < len(r.Steps) {
		st := &r.Steps[r.Cursor]
		x.dropWaiter(st)
		x.dropRateSlot(st)
		if st.TaskID != nil && st.Status == StepWaitingTask {
			if t, err := x.task(*st.TaskID); err == nil && t.Status == TaskOpen {
				old := *t
				t.Status = TaskCancelled
				x.putTask(&old, t)
			}
		}
		if st.ApprovalID != nil && st.Status == StepWaitingApproval {
			if a, err := x.approval(*st.ApprovalID); err == nil && a.Status == ApprovalPending {
				old := *a
				a.Status = ApprovalCancelled
				x.putApproval(&old, a)
			}
		}
		st.Status = StepSkipped
	}
	x.replyTask, x.replyApproval = nil, nil
	msg := "cancelled"
	if x.cmd.actor != "" {
		msg = "cancelled by " + x.cmd.actor
	}
	r.Error = &msg
	x.en.inflight = ""
	x.setStatus(RunCancelled)
}
