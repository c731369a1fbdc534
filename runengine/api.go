package runengine

import (
	"context"
	"encoding/json"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// MarshalJSON encodes the run as the API shows it: without the engine's
// state (each step's internal bookkeeping, the cursor, who started it).
func (r Run) MarshalJSON() ([]byte, error) { return appendRun(nil, &r, false) }

// Answer is what a command run by hand (Start, CompleteTask, Decide)
// answers: the run as the change leaves it, and the task or approval it
// changed (nil when none).
type Answer struct {
	Run      json.RawMessage
	Task     json.RawMessage
	Approval json.RawMessage
}

// AnswerKeeper is given a command's answer before its change commits; the
// write it returns goes into the same transaction as the change, so what
// it writes is durable exactly when the change is (an Idempotency-Key's
// stored response, say). It runs on the engine's goroutines and must not
// block. An error leaves the change as it is, without the write.
type AnswerKeeper func(Answer) (func(tx store.Txn) error, error)

type keeperKey struct{}

// KeepAnswer returns ctx carrying keep: Start, CompleteTask and Decide
// called with it write keep's write in the transaction of their change.
func KeepAnswer(ctx context.Context, keep AnswerKeeper) context.Context {
	return context.WithValue(ctx, keeperKey{}, keep)
}

// send runs a command on its run's worker and waits for its durable
// outcome.
func (e *Engine) send(ctx context.Context, c *command) (reply, error) {
	if e.isClosed() {
		return reply{}, errClosed
	}
	c.keep, _ = ctx.Value(keeperKey{}).(AnswerKeeper)
	c.reply = make(chan reply, 1)
	e.route(c)
	select {
	case r := <-c.reply:
		if e.cluster != nil && r.err != nil {
			return e.cluster.again(ctx, c, r)
		}
		return r, r.err
	case <-ctx.Done():
		return reply{}, errors.WithStack(ctx.Err())
	}
}

// StartParams start a run by hand.
type StartParams struct {
	// Tenant owns the run. Required.
	Tenant string
	// ProcessID is the process whose current version runs. Required.
	ProcessID string
	// Subject is what the run is about. It is optional here (a run
	// started without one shows an empty subject), where the HTTP API's
	// manual start requires one; given, it takes both Type and Label, each
	// at most MaxSubjectLen characters, as that start does.
	Subject Subject
	// Data is what the steps read as the trigger's data
	// (${trigger.data.field}): values JSON can hold.
	Data map[string]any
	// IdempotencyKey, when set, makes the start safe to retry: a start
	// with the same key in the same tenant within IdempotencyWindow returns
	// the run the first one started, and starts nothing. The key is
	// written in the same commit as that run's start. At most 255 bytes.
	IdempotencyKey string
	// Actor is who starts it (a user id, kept as the run's StartedBy).
	Actor string
	// Priority is low, normal or high (empty: normal).
	Priority string
}

// Start starts a run of the process's current version and returns it once
// the start is durable. A process whose trigger is not manual may still be
// started by hand; the run's trigger says manual.
func (e *Engine) Start(ctx context.Context, p StartParams) (*Run, error) {
	rep, err := e.start(ctx, p, false)
	if err != nil {
		return nil, err
	}
	return rep.run, nil
}

// start is Start; with view, the answer is the run's JSON view rather than
// a snapshot (see Internal).
func (e *Engine) start(ctx context.Context, p StartParams, view bool) (reply, error) {
	if vs := p.check(); len(vs) > 0 {
		return reply{}, errs.Validation(vs...)
	}
	if g := e.starting; g != nil {
		if err := g.enter(ctx, p.Tenant); err != nil {
			return reply{}, err
		}
		defer g.leave(p.Tenant)
	}
	var unlock func()
	var ops []func(store.Txn) error
	if p.IdempotencyKey != "" {
		var first *Run
		var err error
		unlock, first, ops, err = e.claimStartKey(ctx, p)
		if err != nil || first != nil {
			return firstReply(first, view, err)
		}
		defer unlock()
	}
	def, err := e.loadDef(ctx, p.Tenant, p.ProcessID)
	if err != nil {
		return reply{}, err
	}
	switch {
	case def.Archived:
		return reply{}, errs.Conflictf("process is archived")
	case !def.Enabled:
		return reply{}, errs.Conflictf("process is disabled")
	}
	ver, err := e.version(p.Tenant, def.ID, def.Version)
	if err != nil {
		return reply{}, err
	}
	runID := e.newRunID()
	sweeps := len(ops) > 0 // removals of expired keys read them
	if p.IdempotencyKey != "" {
		ops = append(ops, e.startKeyWrite(p.Tenant, p.IdempotencyKey, runID))
		sweeps = sweeps || e.cluster != nil // the write reads the key again
	}
	// The command and its arguments in one allocation.
	sc := &struct {
		command
		args startArgs
	}{command: command{kind: cmdStart, tenant: p.Tenant, runID: runID, actor: p.Actor, view: view}, args: startArgs{
		version: ver, subject: p.Subject, trigger: RunTrigger{Type: process.TriggerManual, Data: p.Data}, actor: p.Actor,
		ops: ops, reads: sweeps, priority: normPriority(p.Priority),
	}}
	sc.start = &sc.args
	rep, err := e.send(ctx, &sc.command)
	if isErr(err, errStartKeyTaken) { // another node started it first
		first, err := e.keyedRun(ctx, p)
		return firstReply(first, view, err)
	}
	return rep, unencodable(err)
}

// unencodable returns err as ErrInvalid at data when it is JSON's refusal
// of a value (NaN, a func, a channel) a caller from Go put in the data,
// and err unchanged otherwise. It allocates nothing for a nil err, so a
// start's path pays nothing for it.
func unencodable(err error) error {
	if err == nil {
		return nil
	}
	var value *json.UnsupportedValueError
	var typ *json.UnsupportedTypeError
	var cause error
	switch {
	case errors.As(err, &value):
		cause = value
	case errors.As(err, &typ):
		cause = typ
	default:
		return err
	}
	return errs.Invalidf([]any{"data"}, "type_error", "must hold only values JSON can hold (%s)", cause)
}

// firstReply answers a start with the run its idempotency key started.
func firstReply(first *Run, view bool, err error) (reply, error) {
	if err != nil || !view {
		return reply{run: first}, err
	}
	raw, err := first.MarshalJSON()
	return reply{view: raw}, err
}

// CancelParams cancel a run.
type CancelParams struct {
	// Tenant and RunID name the run. Required.
	Tenant, RunID string
	// Actor is who cancels it (kept in the run's error).
	Actor string
}

// Cancel stops a run that has not finished (bas.ErrConflict when it has)
// and returns it cancelled. Its open tasks and pending approvals are
// cancelled with it.
func (e *Engine) Cancel(ctx context.Context, p CancelParams) (*Run, error) {
	return e.runCommand(ctx, p.Tenant, p.RunID, p.Actor, cmdCancel)
}

// CompleteTaskParams complete a human task.
type CompleteTaskParams struct {
	// Tenant and TaskID name the task. Required.
	Tenant, TaskID string
	// Action is one of the task's actions. Required.
	Action string
	// Fields are the values of the task's fields, checked against them.
	Fields map[string]any
	// Actor is who completes it.
	Actor string
}

// CompleteTask completes an open task with one of its actions and its
// fields, and returns the completed task; the run goes on once the
// completion is durable.
func (e *Engine) CompleteTask(ctx context.Context, p CompleteTaskParams) (*Task, error) {
	t, err := e.GetTask(ctx, p.Tenant, p.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status != TaskOpen {
		return nil, errs.Conflictf("task already %s", t.Status)
	}
	rep, err := e.send(ctx, &command{kind: cmdCompleteTask, tenant: p.Tenant, runID: t.RunID, actor: p.Actor,
		task: &taskArgs{taskID: p.TaskID, action: p.Action, fields: p.Fields}})
	if err != nil {
		return nil, err
	}
	return rep.task, nil
}

// DecideParams decide a pending approval.
type DecideParams struct {
	// Tenant and ApprovalID name the approval. Required.
	Tenant, ApprovalID string
	// Approve approves; false rejects, which stops the run.
	Approve bool
	// Args, when approving, replace the proposed arguments (an edit).
	Args map[string]any
	// Reason says why it was rejected.
	Reason string
	// Actor is who decides.
	Actor string
	// Aliases are the decider's other names, each taken for Actor where
	// a step's separation of duties and its distinct approvers compare
	// people: the person behind an API key, and that person's keys, so
	// that nobody decides as someone else by changing credentials.
	Aliases []string
	// Digest, when set, is the approval's Digest as the person was shown
	// it: one that is no longer the approval's is a bas.ErrConflict, as
	// what the person saw has changed.
	Digest string
}

// Decision is the outcome of deciding an approval: the approval decided
// and its run as the decision left it.
type Decision struct {
	Approval *Approval `json:"approval"`
	Run      *Run      `json:"run"`
}

// Decide approves (with optionally edited args) or rejects a pending
// approval. A rejected approval stops its run.
func (e *Engine) Decide(ctx context.Context, p DecideParams) (*Decision, error) {
	a, err := e.GetApproval(ctx, p.Tenant, p.ApprovalID)
	if err != nil {
		return nil, err
	}
	if a.Status != ApprovalPending {
		return nil, errs.Conflictf("approval already %s", a.Status)
	}
	if a.RunID == nil {
		return nil, errs.Conflictf("approval has no run")
	}
	rep, err := e.send(ctx, &command{kind: cmdDecide, tenant: p.Tenant, runID: *a.RunID, actor: p.Actor,
		decide: &decideArgs{approvalID: p.ApprovalID, approve: p.Approve, args: p.Args, reason: p.Reason, digest: p.Digest,
			aliases: p.Aliases}})
	if err != nil {
		return nil, err
	}
	return &Decision{Approval: rep.approval, Run: rep.run}, nil
}

// PublishParams publish an event from outside.
type PublishParams struct {
	// Tenant owns the event. Required.
	Tenant string
	// Name is the event's name (invoice.received). Required.
	Name string
	// Data is the event's data, what trigger filters and steps read.
	Data map[string]any
	// Emitter is who publishes it (an API key or user id; see
	// Event.EmittedBy); the runs it starts carry it in their trigger.
	Emitter string
}

// check reports what is wrong with p.
func (p PublishParams) check() []errs.Violation {
	return missing("tenant", p.Tenant, "name", p.Name)
}

// Published is what publishing an event did: the event as written and the
// runs it started.
type Published struct {
	Event *Event
	Runs  []*Run
}

// Publish emits an event from outside (POST /v1/events): it is written to
// the outbox durably, dispatched at once, and the runs it started are
// returned. Like a Start, it passes the tenant's door first
// (MaxStartingPerTenant, FairStartingPerTenant): a tenant flooding the
// engine with events waits there as one flooding it with starts does.
func (e *Engine) Publish(ctx context.Context, p PublishParams) (*Published, error) {
	if e.isClosed() {
		return nil, errClosed
	}
	if vs := p.check(); len(vs) > 0 {
		return nil, errs.Validation(vs...)
	}
	if g := e.starting; g != nil {
		if err := g.enter(ctx, p.Tenant); err != nil {
			return nil, err
		}
		defer g.leave(p.Tenant)
	}
	data := p.Data
	if data == nil {
		data = map[string]any{}
	}
	at := e.now()
	ev := e.newEvent(p.Tenant, p.Name, data, at)
	ev.EmittedBy = p.Emitter
	var tapOp func(store.Txn) error
	var tapAfter func()
	if e.cfg.Tap != nil && e.cfg.Tap.Wants(p.Tenant, p.Name) {
		tapOp, tapAfter = e.cfg.Tap.Tap(ev)
	}
	raw, err := ev.appendJSON(nil)
	if err != nil {
		return nil, unencodable(errors.Wrap(err, "encode event"))
	}
	if len(raw) > MaxEventDataBytes { // the data alone may still be within
		if n, err := jsonvalue.Append(nil, data); err == nil && len(n) > MaxEventDataBytes {
			return nil, errs.Invalidf([]any{"data"}, "too_long",
				"event data may be at most %d bytes of JSON; this is %d", MaxEventDataBytes, len(n))
		}
	}
	apply := setKey(outboxKey(ev.ID), raw)
	if tapOp != nil {
		apply = func(tx store.Txn) error {
			if err := tapOp(tx); err != nil {
				return err
			}
			return tx.Set(outboxKey(ev.ID), raw)
		}
	}
	if err := e.commits.commitWait(ctx, &delta{tenant: p.Tenant, apply: apply}); err != nil {
		return nil, err
	}
	if tapAfter != nil {
		tapAfter()
	}
	req := &publishReq{ev: ev, reply: make(chan publishResult, 1)}
	select {
	case e.disp.reqs <- req:
	case <-ctx.Done():
		return nil, errors.WithStack(ctx.Err())
	case <-e.disp.quit:
		return nil, errClosed
	}
	res := <-req.reply
	if res.err != nil {
		return nil, res.err
	}
	return &Published{Event: cloneEvent(ev), Runs: res.runs}, nil
}

// GetRun returns a run of tenant.
func (e *Engine) GetRun(ctx context.Context, tenant, id string) (*Run, error) {
	var out *Run
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		if out, err = runs.Get(r, tenant, id); err != nil {
			return err
		}
		return loadApart(r, tenant, out)
	})
	if out != nil {
		out.Tenant = tenant
		e.withWaitingReason(out)
	}
	return out, err
}

// RunQuery filters ListRuns.
type RunQuery struct {
	ProcessID string
	Status    RunStatus
	Overdue   bool
	// Q keeps runs having every word of it (see SearchWords) in their
	// subject label or declared search fields.
	Q string
	// Search keeps runs whose declared search field of each name has the
	// value (compared as SearchValue makes it).
	Search map[string]string
}

// ListRuns returns one page of tenant's runs, newest first, from an index.
func (e *Engine) ListRuns(ctx context.Context, tenant string, q RunQuery, p store.Page) ([]*Run, string, error) {
	var out []*Run
	var next string
	err := e.st.View(ctx, func(r store.Reader) error {
		if q.all() && p.Cursor == "" && !p.Forward {
			// The first page of every run: between the ids of the
			// tenant's newest runs, when held (see newestRuns).
			page, more, ok, err := e.newestRuns(r, tenant, p.Size(), true)
			if err != nil || ok {
				out = page
				if more {
					next = runs.ListCursor(page[len(page)-1].ID)
				}
				return err
			}
		}
		var err error
		out, next, err = listRunCandidates(r, tenant, q, p)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	kept := out[:0]
	for _, r := range out {
		if q.matches(r) {
			r.Tenant = tenant
			e.withWaitingReason(r)
			kept = append(kept, r)
		}
	}
	markApart(kept)
	return kept, next, nil
}

// all reports whether q keeps every run.
func (q RunQuery) all() bool {
	return q.ProcessID == "" && q.Status == "" && !q.Overdue && q.Q == "" && len(q.Search) == 0
}

// matches reports whether r passes the filters q's index did not apply.
func (q RunQuery) matches(r *Run) bool {
	return (q.ProcessID == "" || r.ProcessID == q.ProcessID) && (q.Status == "" || r.Status == q.Status) &&
		(!q.Overdue || r.Overdue) && matchesSearch(r, SearchWords(q.Q), q.Search)
}

// listRunCandidates lists one page of the runs of q's most selective
// index, which ListRuns then filters by the rest of q.
func listRunCandidates(r store.Reader, tenant string, q RunQuery, p store.Page) ([]*Run, string, error) {
	if prefix := searchPrefix(tenant, q); prefix != nil {
		return runs.ListUnder(r, tenant, prefix, p)
	}
	switch {
	case q.Overdue:
		return runs.ListBy(r, tenant, "overdue", nil, p)
	case q.ProcessID != "":
		return runs.ListBy(r, tenant, "process", []any{q.ProcessID}, p)
	case q.Status == RunRunning:
		return runs.ListUnder(r, tenant, activePrefix(tenant), p)
	case q.Status != "":
		return runs.ListBy(r, tenant, "status", []any{q.Status}, p)
	default:
		return runs.List(r, tenant, p)
	}
}

// GetTask returns a task of tenant.
func (e *Engine) GetTask(ctx context.Context, tenant, id string) (*Task, error) {
	var t *Task
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		t, err = tasks.Get(r, tenant, id)
		return err
	})
	return t, err
}

// TaskQuery filters ListTasks.
type TaskQuery struct {
	// Status is open, completed or cancelled; empty lists every task.
	Status TaskStatus
	// Assignee keeps tasks of this assignee ("*" for unassigned); it needs
	// Status.
	Assignee string
	// Assignees keeps tasks of any of these assignees (a person's user id
	// and email, say) instead; it needs Status.
	Assignees []string
}

// ListTasks returns one page of tenant's tasks, newest first.
func (e *Engine) ListTasks(ctx context.Context, tenant string, q TaskQuery, p store.Page) ([]*Task, string, error) {
	var out []*Task
	var next string
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		switch {
		case q.Status != "" && len(q.Assignees) > 0:
			values := make([][]any, len(q.Assignees))
			for i, a := range q.Assignees {
				values[i] = []any{string(q.Status), a}
			}
			out, next, err = tasks.ListByAny(r, tenant, "assignee", values, p)
		case q.Status != "" && q.Assignee != "":
			out, next, err = tasks.ListBy(r, tenant, "assignee", []any{string(q.Status), q.Assignee}, p)
		case q.Status != "":
			out, next, err = tasks.ListBy(r, tenant, "status", []any{string(q.Status)}, p)
		default:
			out, next, err = tasks.List(r, tenant, p)
		}
		return err
	})
	return out, next, err
}

// GetApproval returns an approval of tenant.
func (e *Engine) GetApproval(ctx context.Context, tenant, id string) (*Approval, error) {
	var a *Approval
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		a, err = approvals.Get(r, tenant, id)
		return err
	})
	return a, err
}

// ListApprovals returns one page of tenant's approvals (of one status when
// status is set), newest first.
func (e *Engine) ListApprovals(ctx context.Context, tenant string, status ApprovalStatus, p store.Page) ([]*Approval, string, error) {
	var out []*Approval
	var next string
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		if status != "" {
			out, next, err = approvals.ListBy(r, tenant, "status", []any{string(status)}, p)
		} else {
			out, next, err = approvals.List(r, tenant, p)
		}
		return err
	})
	return out, next, err
}
