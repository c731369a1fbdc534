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
	e.workerFor(c.runID).send(c)
	select {
	case r := <-c.reply:
		return r, r.err
	case <-ctx.Done():
		return reply{}, errors.WithStack(ctx.Err())
	}
}

// StartInput starts a run by hand.
type StartInput struct {
	Tenant    string
	ProcessID string
	Subject   Subject
	// Actor is who started it.
	Actor string
	// Priority is low, normal or high (empty: normal).
	Priority string
}

// Start starts a run of the process's current version and returns it once
// the start is durable. A process whose trigger is not manual may still be
// started by hand; the run's trigger says manual.
func (e *Engine) Start(ctx context.Context, in StartInput) (json.RawMessage, error) {
	var def *process.Definition
	if err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		def, err = e.cfg.Processes.Load(r, in.Tenant, in.ProcessID)
		return err
	}); err != nil {
		return nil, err
	}
	switch {
	case def.Archived:
		return nil, errs.Conflictf("process is archived")
	case !def.Enabled:
		return nil, errs.Conflictf("process is disabled")
	}
	ver, err := e.version(in.Tenant, def.ID, def.Version)
	if err != nil {
		return nil, err
	}
	runID := e.ids.New("run", e.now())
	rep, err := e.send(ctx, &command{kind: cmdStart, tenant: in.Tenant, runID: runID, actor: in.Actor, start: &startArgs{
		version: ver, subject: in.Subject, trigger: RunTrigger{Type: process.TriggerManual}, actor: in.Actor,
		priority: normPriority(in.Priority),
	}})
	if err != nil {
		return nil, err
	}
	return rep.run, nil
}

// Cancel stops a run that has not finished (409 when it has).
func (e *Engine) Cancel(ctx context.Context, tenant, runID, actor string) (json.RawMessage, error) {
	if _, err := e.GetRun(ctx, tenant, runID); err != nil {
		return nil, err
	}
	rep, err := e.send(ctx, &command{kind: cmdCancel, tenant: tenant, runID: runID, actor: actor})
	if err != nil {
		return nil, err
	}
	return rep.run, nil
}

// CompleteTask completes an open task with one of its actions and its
// fields; the run goes on once the completion is durable.
func (e *Engine) CompleteTask(ctx context.Context, tenant, taskID, action string, fields map[string]any, actor string) (json.RawMessage, error) {
	t, err := e.GetTask(ctx, tenant, taskID)
	if err != nil {
		return nil, err
	}
	if t.Status != TaskOpen {
		return nil, errs.Conflictf("task already %s", t.Status)
	}
	rep, err := e.send(ctx, &command{kind: cmdCompleteTask, tenant: tenant, runID: t.RunID, actor: actor,
		task: &taskArgs{taskID: taskID, action: action, fields: fields}})
	if err != nil {
		return nil, err
	}
	return rep.task, nil
}

// Decision is the outcome of deciding an approval.
type Decision struct {
	Approval json.RawMessage `json:"approval"`
	Run      json.RawMessage `json:"run"`
}

// Decide approves (with optionally edited args) or rejects a pending
// approval. A rejected approval stops its run.
func (e *Engine) Decide(ctx context.Context, tenant, approvalID string, approve bool, args map[string]any, reason, actor string) (*Decision, error) {
	return e.DecideShown(ctx, tenant, approvalID, approve, args, reason, actor, "")
}

// DecideShown is Decide by a person who was shown the approval with
// digest (its Digest then): a digest that is no longer the approval's is a
// 409, as what the person saw has changed. An empty digest checks nothing.
func (e *Engine) DecideShown(ctx context.Context, tenant, approvalID string, approve bool, args map[string]any, reason, actor, digest string) (*Decision, error) {
	a, err := e.GetApproval(ctx, tenant, approvalID)
	if err != nil {
		return nil, err
	}
	if a.Status != ApprovalPending {
		return nil, errs.Conflictf("approval already %s", a.Status)
	}
	if a.RunID == nil {
		return nil, errs.Conflictf("approval has no run")
	}
	rep, err := e.send(ctx, &command{kind: cmdDecide, tenant: tenant, runID: *a.RunID, actor: actor,
		decide: &decideArgs{approvalID: approvalID, approve: approve, args: args, reason: reason, digest: digest}})
	if err != nil {
		return nil, err
	}
	return &Decision{Approval: rep.approval, Run: rep.run}, nil
}

// Publish emits an event from outside (POST /v1/events): it is written to
// the outbox durably, dispatched at once, and the runs it started are
// returned. emitter is who publishes it (see Event.EmittedBy); the runs
// it starts carry it in their trigger.
func (e *Engine) Publish(ctx context.Context, tenant, emitter, name string, data map[string]any) (string, []json.RawMessage, error) {
	if e.isClosed() {
		return "", nil, errClosed
	}
	if data == nil {
		data = map[string]any{}
	}
	at := e.now()
	ev := &Event{ID: e.ids.New("evt", at), Tenant: tenant, Name: name, Data: data, At: at, EmittedBy: emitter}
	raw, err := ev.appendJSON(nil)
	if err != nil {
		return "", nil, errors.Wrap(err, "encode event")
	}
	if len(raw) > MaxEventDataBytes { // the data alone may still be within
		if n, err := jsonvalue.Append(nil, data); err == nil && len(n) > MaxEventDataBytes {
			return "", nil, errs.Invalidf([]any{"body", "data"}, "too_long",
				"event data may be at most %d bytes of JSON; this is %d", MaxEventDataBytes, len(n))
		}
	}
	if err := e.commits.commitWait(ctx, &delta{apply: setKey(outboxKey(ev.ID), raw)}); err != nil {
		return "", nil, err
	}
	req := &publishReq{ev: ev, reply: make(chan publishResult, 1)}
	select {
	case e.disp.reqs <- req:
	case <-ctx.Done():
		return "", nil, errors.WithStack(ctx.Err())
	case <-e.disp.quit:
		return "", nil, errClosed
	}
	res := <-req.reply
	if res.err != nil {
		return "", nil, res.err
	}
	return ev.ID, res.runs, nil
}

// runJSON reads a run as the API shows it.
func (e *Engine) runJSON(tenant, id string) (json.RawMessage, error) {
	r, err := e.GetRun(e.ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
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
	}
	return out, err
}

// RunQuery filters ListRuns.
type RunQuery struct {
	ProcessID string
	Status    string
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
			kept = append(kept, r)
		}
	}
	markApart(kept)
	return kept, next, nil
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
	Status string
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
				values[i] = []any{q.Status, a}
			}
			out, next, err = tasks.ListByAny(r, tenant, "assignee", values, p)
		case q.Status != "" && q.Assignee != "":
			out, next, err = tasks.ListBy(r, tenant, "assignee", []any{q.Status, q.Assignee}, p)
		case q.Status != "":
			out, next, err = tasks.ListBy(r, tenant, "status", []any{q.Status}, p)
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
func (e *Engine) ListApprovals(ctx context.Context, tenant, status string, p store.Page) ([]*Approval, string, error) {
	var out []*Approval
	var next string
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		if status != "" {
			out, next, err = approvals.ListBy(r, tenant, "status", []any{status}, p)
		} else {
			out, next, err = approvals.List(r, tenant, p)
		}
		return err
	})
	return out, next, err
}
