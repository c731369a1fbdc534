package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/internal/refs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// exec is one command being applied to one run.
type exec struct {
	w   *worker
	en  *entry
	r   *Run
	ver *process.Version
	cmd *command
	now time.Time

	dirty bool
	// jobChanged says the command, a bulk job's action, changed the run
	// (see command.job).
	jobChanged bool
	fx         effects
	res        *callResult // the call result for the current step
	// taskDone and decided carry a person's action into the step.
	taskDone *Task
	event    *eventArgs
	timer    string
	// def and st are the step runStep runs (see stepEnv).
	def *process.Step
	st  *StepRun

	// replyTask and replyApproval are the command's answer: the task it
	// completes or assigns, the approval it decides (see answers).
	replyTask     *Task
	replyApproval *Approval
	err           error

	oneCall [1]*pendingCall // room for fx.calls (see addCall)
}

// effects are what a command changes besides the run record.
type effects struct {
	ops      []func(store.Txn) error
	reads    bool // an op reads keys (see delta.reads)
	counters []counterInc
	post     []func()
	// settled run after the commit whether it succeeded or not (err).
	settled []func(err error)
	calls   []*pendingCall
	// issue are calls of a new run, made once its first commit is durable
	// (after post); calls that only join the commit of their result go out
	// at once instead (see worker.finish).
	issue []*pendingCall
	// late are the events nothing consumed when they were emitted (none
	// was written): a subscriber that came before the commit is owed
	// them (see Engine.showLate).
	late []lateEvent
	// ended, when set, is the status the run ended in: Engine.ended is
	// told it after post (one field, not a closure made at every run's end).
	ended RunStatus
}

// lateEvent is an event emitted and not written, kept for a late
// subscriber: its data, or what makes it from the run.
type lateEvent struct {
	name string
	data map[string]any
	of   func(*Run) map[string]any
	at   time.Time
	from *Run
}

// dataOf is the event's data.
func (l *lateEvent) dataOf() map[string]any {
	if l.of != nil {
		return l.of(l.from)
	}
	return l.data
}

// merge appends o's changes after f's. o is not used after: f may take
// its slices.
func (f *effects) merge(o *effects) {
	f.ops = appendOrTake(f.ops, o.ops)
	f.reads = f.reads || o.reads
	f.post = appendOrTake(f.post, o.post)
	f.settled = appendOrTake(f.settled, o.settled)
	f.late = appendOrTake(f.late, o.late)
	f.issue = appendOrTake(f.issue, o.issue)
	f.counters = appendOrTake(f.counters, o.counters)
	if o.ended != "" {
		f.ended = o.ended
	}
}

// appendOrTake is append(a, b...), or b itself when a is empty.
func appendOrTake[T any](a, b []T) []T {
	if len(a) == 0 {
		return b
	}
	return append(a, b...)
}

func (w *worker) newExec(en *entry, c *command) *exec {
	x := w.spare
	if x == nil {
		x = &exec{}
	}
	w.spare = nil
	*x = exec{w: w, en: en, r: en.run, ver: en.ver, cmd: c, now: w.e.now()}
	return x
}

// release keeps x, whose command is done, for the worker's next one. What
// outlives a command (the changes it held on the run, the closures it
// left for after the commit) never refers to its exec.
func (w *worker) release(x *exec) {
	if x.res != nil { // a call result the command did not take
		x.res.drop()
	}
	*x = exec{}
	w.spare = x
}

// stamp returns a pointer to x.now for a time field of the run or its
// steps. It points into the entry's slab of them, made for the rest of the
// run, so that a run's times cost one allocation rather than one each. The
// times pointed to are never changed.
func (x *exec) stamp() *time.Time {
	en := x.en
	if len(en.times) == cap(en.times) {
		en.times = make([]time.Time, 0, 2*max(len(x.r.Steps)-x.r.Cursor, 0)+1)
	}
	en.times = append(en.times, x.now)
	return &en.times[len(en.times)-1]
}

func (x *exec) count(key string, n int64) {
	if x.fx.counters == nil {
		x.fx.counters = make([]counterInc, 0, 6) // a run's end counts three, an automatic gate decision two
	}
	x.fx.counters = append(x.fx.counters, counterInc{key, n})
}

// emit writes an event to the outbox in this command's commit.
func (x *exec) emit(name string, data map[string]any) {
	if !x.w.e.outboxWants(x.r.Tenant, name) {
		x.keepLate(lateEvent{name: name, data: data, at: x.now, from: x.r})
		return
	}
	x.write(name, data)
}

// write writes an event to the outbox in this command's commit, whoever
// wants it.
func (x *exec) write(name string, data map[string]any) {
	op, post := x.w.e.outboxWrite(x.r.Tenant, name, data, x.now, nil, x.r)
	x.fx.ops = append(x.fx.ops, op)
	x.fx.post = append(x.fx.post, post)
}

// keepLate keeps an event nobody wants written, for a subscriber that
// comes before the commit lands.
func (x *exec) keepLate(ev lateEvent) {
	if x.fx.late == nil {
		x.fx.late = make([]lateEvent, 0, 2)
	}
	x.fx.late = append(x.fx.late, ev)
}

// emitOf is emit of an event whose data of makes from the run's fixed
// fields (its id, process and subject): made only when the event is
// written or a late subscriber is shown it.
func (x *exec) emitOf(name string, of func(*Run) map[string]any) {
	if !x.w.e.outboxWants(x.r.Tenant, name) {
		x.keepLate(lateEvent{name: name, of: of, at: x.now, from: x.r})
		return
	}
	x.write(name, of(x.r))
}

// runEventData is the data of process.run.started and completed.
func runEventData(r *Run) map[string]any {
	return map[string]any{"run_id": r.ID, "process_id": r.ProcessID, "process_name": r.ProcessName, "subject": r.Subject.data()}
}

// setStatus moves the run to status, keeping the counters true.
func (x *exec) setStatus(status RunStatus) {
	r := x.r
	if r.Status == status {
		return
	}
	x.dirty = true
	if r.Status == RunWaiting {
		x.count(x.w.counterKeyWith(r.Tenant, "waiting", r.Function), -1)
	}
	if status == RunWaiting {
		x.count(x.w.counterKeyWith(r.Tenant, "waiting", r.Function), 1)
	}
	// The active index holds the runs a restart must advance: those
	// running. Waiting runs are woken by people, timers and events. Its
	// entry is written by the commit of the run's changes, from the status
	// it had at the commit before (see activeOf).
	wasFinished := r.Finished()
	x.capStatus(r.Status, status)
	r.Status = status
	r.WaitingReason = ""
	if !wasFinished && r.Finished() {
		x.releaseCapSlot()
		x.count(x.w.counterKeyWith(r.Tenant, "inflight", r.Function), -1)
		if r.Overdue {
			r.Overdue = false
			x.count(x.w.counterKey(r.Tenant, "overdue"), -1)
		}
		r.CompletedAt = x.stamp()
		r.CurrentStep = nil
		if obs := x.w.e.cfg.Observer; obs != nil {
			n := x.runNote()
			x.fx.post = append(x.fx.post, func() { obs.RunFinished(n, status) })
		}
		x.fx.ended = status
	}
}

// dataRoots are the keys of the run's data (see data).
var dataRoots = []string{"subject", "trigger", "steps", "run"}

// data is what references in step configs read.
func (x *exec) data() map[string]any { return x.dataParts(dataRoots) }

// dataParts is data with only the keys roots (others are left out): a
// prepared route step reads only what its filters look at, and the rest
// is not built (see process.DataPartsEnv).
func (x *exec) dataParts(roots []string) map[string]any {
	r := x.r
	out := make(map[string]any, len(roots))
	for _, root := range roots {
		switch root {
		case "subject":
			out[root] = r.Subject.data()
		case "trigger":
			trig := map[string]any{"type": r.Trigger.Type, "data": r.Trigger.Data}
			if r.Trigger.Event != nil {
				trig["event"] = *r.Trigger.Event
			}
			out[root] = trig
		case "steps":
			steps := make(map[string]any, len(r.Steps))
			for _, s := range r.Steps {
				if s.Status == StepCompleted {
					steps[s.Key] = s.Output
				}
			}
			out[root] = steps
		case "run":
			out[root] = map[string]any{"id": r.ID, "process_id": r.ProcessID, "process_name": r.ProcessName}
		}
	}
	return out
}

// config decodes the step's config with references resolved into v, a
// pointer. A config without references is decoded once per process version
// and type, and copied into v: maps and slices in it are shared by every
// run of the version, so what config yields is read, never changed.
func (x *exec) config(def *process.Step, v any) error {
	if len(def.Config) == 0 {
		return nil
	}
	if !bytes.Contains(def.Config, []byte("${")) {
		dst := reflect.ValueOf(v).Elem()
		k := configKey{ver: x.ver, step: def.Key, typ: dst.Type()}
		if c, ok := x.w.e.configs.Load(k); ok {
			dst.Set(reflect.ValueOf(c).Elem())
			return nil
		}
		fresh := reflect.New(dst.Type())
		dec := json.NewDecoder(bytes.NewReader(def.Config))
		dec.UseNumber()
		if err := dec.Decode(fresh.Interface()); err != nil {
			return errors.Wrapf(err, "step %s: config does not fit its type", def.Key)
		}
		if p, ok := fresh.Interface().(preparer); ok {
			p.Prepare()
		}
		x.w.e.configs.Store(k, fresh.Interface())
		dst.Set(fresh.Elem())
		return nil
	}
	doc, err := decodeJSON(def.Config)
	if err != nil {
		return errors.Wrapf(err, "step %s: config", def.Key)
	}
	resolved, err := refs.Resolve(doc, x.data())
	if err != nil {
		return errors.Wrapf(err, "step %s", def.Key)
	}
	b, err := json.Marshal(resolved)
	if err != nil {
		return errors.Wrapf(err, "step %s: config", def.Key)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errors.Wrapf(err, "step %s: config does not fit its type", def.Key)
	}
	return nil
}

// preparer is a config that prepares, once, what every run using it needs
// (process.RouteConfig parses its rules' filters): a config decoded once per
// version is prepared before it is shared.
type preparer interface{ Prepare() }

// configKey names a decoded config: a version (kept alive by the key, so
// its address is not reused), a step and the type decoded into.
type configKey struct {
	ver  *process.Version
	step string
	typ  reflect.Type
}

// decodeJSON decodes raw keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	if string(raw) == "{}" { // the answer of most actions that return nothing
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// advance runs the run's steps until one waits or the run ends.
func (x *exec) advance() {
	r := x.r
	for !r.Finished() {
		if r.Cursor >= len(x.ver.Steps) {
			x.completeRun()
			return
		}
		def := &x.ver.Steps[r.Cursor]
		st := &r.Steps[r.Cursor]
		switch st.Status {
		case StepCompleted, StepSkipped:
			r.Cursor++
			continue
		case StepPending:
			x.beginStep(def, st)
		}
		if def.Controls.RequireApproval && !st.internal.Approved {
			if st.ApprovalID == nil {
				x.requestApproval(def, st, x.proposedArgs(def), "the step requires approval")
			}
			return
		}
		if !x.runStep(def, st) {
			return
		}
	}
}

func (x *exec) beginStep(def *process.Step, st *StepRun) {
	x.dirty = true
	t := x.now
	st.StartedAt = x.stamp()
	st.Status = StepRunning
	x.r.CurrentStep = &st.Key
	x.setStatus(RunRunning)
	if obs := x.w.e.cfg.Observer; obs != nil {
		obs.StepStarted(x.stepNote(st))
	}
	if h := def.Controls.SLAHours; h != nil && *h > 0 {
		at := t.Add(time.Duration(*h * float64(time.Hour)))
		x.addTimer(at, slaToken(x.r.Cursor))
	}
}

func slaToken(cursor int) string { return "sla-" + strconv.Itoa(cursor) }

// completeStep records output and moves to the next step.
func (x *exec) completeStep(def *process.Step, st *StepRun, output any, automatic bool) {
	x.dirty = true
	st.Status = StepCompleted
	st.CompletedAt = x.stamp()
	x.setOutput(st, output)
	st.Error = nil // an earlier failed attempt's error
	x.observeStepEnd(st, StepCompleted, "")
	st.internal.WaitToken = ""
	st.internal.WaitEvent = ""
	x.en.inflight = "" // a result of the step's call still on its way is stale
	if automatic {
		x.r.MinutesSaved += effortMinutes[def.Type]
	}
	if h := def.Controls.SLAHours; h != nil && *h > 0 && st.StartedAt != nil {
		at := st.StartedAt.Add(time.Duration(*h * float64(time.Hour)))
		x.fx.ops = append(x.fx.ops, deleteKey(dueKey(at, x.r.Tenant, x.r.ID, slaToken(x.r.Cursor))))
	}
	if x.r.Overdue {
		x.r.Overdue = false
		x.count(x.w.counterKey(x.r.Tenant, "overdue"), -1)
	}
	x.r.Cursor++
	if x.r.Cursor < len(x.r.Steps) {
		x.r.CurrentStep = &x.r.Steps[x.r.Cursor].Key
	}
	x.setStatus(RunRunning)
}

// effortMinutes is the documented estimate of a person's minutes a step
// saves when it completes without a person; the cockpit's
// minutes_saved_30d sums it over completed runs.
var effortMinutes = map[string]int{
	process.StepIntake: 10, process.StepValidate: 10, process.StepRoute: 3, process.StepConsolidate: 15,
	process.StepAnalyse: 15, process.StepDraft: 10, process.StepMonitor: 5, process.StepFollowUp: 5,
	process.StepExecute: 5,
}

// failRun ends the run with err on the current step.
func (x *exec) failRun(st *StepRun, status RunStatus, msg string) {
	x.dirty = true
	if st != nil {
		st.Status = StepFailed
		st.Error = &msg
		st.CompletedAt = x.stamp()
		x.observeStepEnd(st, StepFailed, msg)
	}
	x.r.Error = &msg
	x.setStatus(status)
	event := "process.run.failed"
	if status == RunRejected {
		event = "process.run.rejected"
	}
	x.emit(event, map[string]any{"run_id": x.r.ID, "process_id": x.r.ProcessID, "error": msg})
}

func (x *exec) completeRun() {
	x.setStatus(RunCompleted)
	day := x.w.dayOf(x.now)
	x.count(x.w.counterKeyWith(x.r.Tenant, "completed", day), 1)
	if x.r.MinutesSaved > 0 {
		x.count(x.w.counterKeyWith(x.r.Tenant, "minutes", day), int64(x.r.MinutesSaved))
	}
	x.emitOf("process.run.completed", runEventData)
}

// wait puts the run to wait on the current step.
func (x *exec) wait(st *StepRun, stepStatus StepStatus) {
	x.dirty = true
	st.Status = stepStatus
	x.setStatus(RunWaiting)
}

// addTimer schedules token for the run at at.
func (x *exec) addTimer(at time.Time, token string) {
	key := dueKey(at, x.r.Tenant, x.r.ID, token)
	x.fx.ops = append(x.fx.ops, setKey(key, nil))
	e := x.w.e // not x: an exec is reused once its command is done (see worker.release)
	x.fx.post = append(x.fx.post, func() { e.sched.wakeAt(at) })
}

// call asks for a capability call outside the worker; its result comes
// back as a command carrying token.
func (x *exec) call(def *process.Step, st *StepRun, capID string, args any, token, keySuffix string) {
	pc := x.prepareCall(def, st, capID, args, token, keySuffix)
	if pc == nil {
		return
	}
	x.en.inflight = pc.res.token
	x.addCall(pc)
}

// addCall adds pc to the calls the command makes: a run makes one at a
// time, held in the exec itself (so fx.calls is never kept beyond the
// command: see finish).
func (x *exec) addCall(pc *pendingCall) {
	if x.fx.calls == nil {
		x.fx.calls = x.oneCall[:0]
	}
	x.fx.calls = append(x.fx.calls, pc)
}

// prepareCall prepares a capability call of the step: the allowed_tools
// check, the arguments and the idempotency key. It fails the run and
// returns nil when the call may not be made.
func (x *exec) prepareCall(def *process.Step, st *StepRun, capID string, args any, token, keySuffix string) *pendingCall {
	if len(def.Controls.AllowedTools) > 0 && !slices.Contains(def.Controls.AllowedTools, capID) {
		x.failRun(st, RunFailed, fmt.Sprintf("step %s: capability %s is not in the step's allowed_tools %v",
			def.Key, capID, def.Controls.AllowedTools))
		return nil
	}
	if x.rateLimited(st, capID, args) {
		return nil
	}
	raw, err := jsonvalue.Append(nil, args)
	if err != nil {
		x.failRun(st, RunFailed, fmt.Sprintf("step %s: arguments: %v", def.Key, err))
		return nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	r := x.r
	pc := &pendingCall{capID: capID, args: raw, key: r.ID + "/" + def.Key + "/" + keySuffix + strconv.Itoa(st.Attempts+1),
		info: RunInfo{ID: r.ID, ProcessID: r.ProcessID, ProcessName: r.ProcessName, Subject: r.Subject, StepKey: def.Key,
			Priority: r.Priority, cause: r.Trigger.Cause}}
	// A call asked for before the run's first commit was submitted goes
	// out once that commit is durable, or, if it only joins the commit of
	// its result (see Engine.joinsCommit), before: then what it writes is
	// lost with the run if that commit is. Either way nothing was written
	// under its key. Not on a cluster: a node that lost the run's shard may
	// still make the call after the new owner did, and the autonomy gate's
	// answer is not fenced.
	pc.res.writes.New = !x.en.durable && x.w.e.cluster == nil
	pc.res.token = x.w.callToken(token)
	pc.cmd = command{kind: cmdCallResult, tenant: r.Tenant, runID: r.ID, result: &pc.res}
	return pc
}

// callFailed drops what res, the failed result of the step's call, would
// have written, and logs the failure.
func (x *exec) callFailed(def *process.Step, st *StepRun, res *callResult) {
	x.dirty = true
	res.drop()
	x.w.e.log.Warn("step call failed", "tenant", x.r.Tenant, "run", x.r.ID, "step", def.Key, "attempt", st.Attempts+1,
		"error", errorText(res.err))
}

// callOutcome interprets the result of the current step's call: it returns
// the decoded output and true on success; on failure it schedules a retry
// or fails the run and returns false. The writes a built-in provider
// handed over with a successful result (callwrites) join this command's
// commit, which records the step's result: they commit together or not at
// all. A failed result's writes are dropped.
func (x *exec) callOutcome(def *process.Step, st *StepRun) (any, bool) {
	res := x.res
	x.res = nil
	if res.err == nil && len(res.out) > MaxStepOutputBytes {
		res.err = errs.Invalidf([]any{"output"}, "too_long", "the output is %d bytes of JSON; a step's output may be at most %d",
			len(res.out), MaxStepOutputBytes)
	}
	if res.err == nil {
		var out any
		var err error
		if len(res.out) > 0 {
			out, err = decodeJSON(res.out)
		} else {
			out = map[string]any{}
		}
		if err == nil {
			b := res.writes.TakeAll()
			x.join(&b)
			return out, true
		}
		res.err = errs.Validation(errs.Violation{Loc: []any{"output"}, Msg: "is not JSON: " + err.Error(), Type: "json_invalid"})
	}
	x.callFailed(def, st, res)
	msg := fmt.Sprintf("step %s: %s", def.Key, errorText(res.err))
	if permanent(res.err) {
		st.Attempts++
		x.failRun(st, RunFailed, msg)
		return nil, false
	}
	st.Attempts++
	if st.Attempts >= x.w.e.cfg.MaxAttempts {
		x.failRun(st, RunFailed, fmt.Sprintf("%s (gave up after %d attempts)", msg, st.Attempts))
		return nil, false
	}
	st.Error = &msg
	delay := x.w.e.cfg.RetryBase << (st.Attempts - 1)
	if delay > x.w.e.cfg.RetryMax || delay <= 0 {
		delay = x.w.e.cfg.RetryMax
	}
	token := "retry-" + strconv.Itoa(st.Attempts)
	st.internal.WaitToken = token
	x.addTimer(x.now.Add(delay), token)
	x.wait(st, StepRunning)
	return nil, false
}

// join adds b, writes a provider or the autonomy gate handed over with a
// call's result (callwrites), to this command's commit: they commit
// together or not at all, and b's Settled functions are told how it ended.
func (x *exec) join(b *callwrites.Batch) {
	if b.Empty() {
		return
	}
	x.dirty = true
	x.fx.ops = append(x.fx.ops, b.Ops...)
	for _, c := range b.Counts {
		x.count(c.Key, c.N)
	}
	x.fx.settled = append(x.fx.settled, b.Settled...)
	*b = callwrites.Batch{}
}

// permanent reports whether retrying err cannot help.
func permanent(err error) bool {
	return errors.Is(err, errs.Invalid) || errors.Is(err, errs.NotFound) || errors.Is(err, capability.ErrMalformedOutput) ||
		errors.Is(err, errs.Forbidden) || errors.Is(err, errs.Unauthenticated)
}

// errorText is the message a run shows for a failed call.
func errorText(err error) string { return errs.Text(err) }

// proposedArgs are the arguments an approval of the step shows.
func (x *exec) proposedArgs(def *process.Step) map[string]any {
	if def.Type != process.StepExecute {
		var cfg map[string]any
		if err := x.config(def, &cfg); err != nil || cfg == nil {
			return map[string]any{}
		}
		return cfg
	}
	var cfg process.ExecuteConfig
	if err := x.config(def, &cfg); err != nil || cfg.Args == nil {
		return map[string]any{}
	}
	return cfg.Args
}

// requestApproval creates an approval the step waits on.
func (x *exec) requestApproval(def *process.Step, st *StepRun, args map[string]any, reason string) {
	e := x.w.e
	id := x.w.e.ids.New("apr", x.now)
	exp := x.now.Add(e.cfg.ApprovalTTL)
	tool := def.Capability
	if tool == "" {
		tool = "step." + def.Type
	}
	risk := "medium"
	if def.Type == process.StepExecute {
		var cfg process.ExecuteConfig
		if err := x.config(def, &cfg); err == nil && cfg.Risk != "" {
			risk = cfg.Risk
		}
	}
	name := def.Name
	if name == "" {
		name = def.Key
	}
	runID := x.r.ID
	a := &Approval{
		ID: id, RunID: &runID, ProcessID: x.r.ProcessID, StepKey: def.Key, AppID: "processes", Tool: tool,
		Risk: risk, Summary: fmt.Sprintf("%s: %s (%s)", x.r.ProcessName, name, reason), Reason: reason,
		Args: args, Status: ApprovalPending, CreatedAt: x.now, ExpiresAt: &exp,
	}
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	if n := def.Controls.ApprovalsRequired; n > 1 {
		a.ApprovalsRequired = n
	}
	a.Digest = approvalDigest(a)
	st.ApprovalID = &id
	x.putApproval(nil, a)
	x.addTimer(exp, "expire-"+id)
	x.wait(st, StepWaitingApproval)
	x.emit("approval.requested", map[string]any{"approval_id": id, "run_id": runID, "process_id": x.r.ProcessID,
		"step_key": def.Key, "tool": tool, "reason": reason})
}

func (x *exec) putApproval(old, a *Approval) {
	tenant := x.r.Tenant
	raw, err := json.Marshal(a)
	if err != nil {
		x.err = err
		return
	}
	x.dirty = true
	if old != nil && old.Status == ApprovalPending {
		x.count(x.w.counterKey(tenant, "approvals-pending"), -1)
	}
	if x.en.approvals == nil {
		x.en.approvals = map[string]*Approval{}
	}
	kept := *a
	x.en.approvals[a.ID] = &kept
	if a.Status == ApprovalPending {
		x.count(x.w.counterKey(tenant, "approvals-pending"), 1)
	}
	x.fx.ops = append(x.fx.ops, func(tx store.Txn) error { return approvals.PutOver(tx, tenant, old, a, raw) })
	if x.answers(a.ID) {
		x.replyApproval = a
	}
}

// answers reports whether the command answers with the task or approval
// id: the one it completes, assigns or decides. A run that goes on in the
// same change to a step making another task or approval still answers
// with the command's own.
func (x *exec) answers(id string) bool {
	c := x.cmd
	switch {
	case c == nil:
		return false
	case c.task != nil:
		return c.task.taskID == id
	case c.assign != nil:
		return c.assign.taskID == id
	case c.decide != nil:
		return c.decide.approvalID == id
	}
	return false
}

func (x *exec) putTask(old, t *Task) {
	tenant := x.r.Tenant
	raw, err := json.Marshal(t)
	if err != nil {
		x.err = err
		return
	}
	x.dirty = true
	if old != nil && old.Status == TaskOpen {
		x.count(x.w.counterKeyWith(tenant, "tasks-open", assigneeOf(old)), -1)
	}
	if x.en.tasks == nil {
		x.en.tasks = map[string]*Task{}
	}
	kept := *t
	x.en.tasks[t.ID] = &kept
	if t.Status == TaskOpen {
		x.count(x.w.counterKeyWith(tenant, "tasks-open", assigneeOf(t)), 1)
	}
	x.fx.ops = append(x.fx.ops, func(tx store.Txn) error { return tasks.PutOver(tx, tenant, old, t, raw) })
	if x.answers(t.ID) {
		x.replyTask = t
	}
}

// RunInfo tells an in-process provider which run and step a call comes
// from.
type RunInfo struct {
	ID          string
	ProcessID   string
	ProcessName string
	Subject     Subject
	StepKey     string
	// Priority is the run's: low or high; empty is normal.
	Priority string

	// cause is the run's own causation (its trigger's), so that an event
	// an app emits during the call carries the run's chain (see Emit).
	cause *Cause
}

type runInfoKey struct{}

// RunFromContext returns the run a capability call comes from, when the
// engine made it.
func RunFromContext(ctx context.Context) (RunInfo, bool) {
	info, ok := ctx.Value(runInfoKey{}).(*RunInfo)
	if !ok {
		return RunInfo{}, false
	}
	return *info, true
}
