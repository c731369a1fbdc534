package runengine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Provider returns the engine's built-in provider of task.create and
// approval.request: a step calls them to give a person a task or ask for an
// approval that the run does not wait on. A repeated idempotency key
// returns the first call's record.
func (e *Engine) Provider() capability.Provider { return tasksProvider{e} }

type tasksProvider struct{ e *Engine }

// Info describes the provider.
func (p tasksProvider) Info() capability.Info {
	return capability.Info{ID: "builtin.tasks", Name: "Tasks and approvals", Kind: capability.KindBuiltin,
		Capabilities: []string{capability.TaskCreate, capability.ApprovalRequest}}
}

// Call creates the task or approval.
func (p tasksProvider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	r, ok := RunFromContext(ctx)
	if !ok {
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "%s is called by a process step", call.Capability)
	}
	stepKey := r.StepKey
	now := p.e.now()
	dedupe := store.Key(call.Tenant, "cap-call", call.IdempotencyKey)
	var out json.RawMessage
	var counters []counterInc
	var record func(tx store.Txn) error
	switch call.Capability {
	case capability.TaskCreate:
		var a capability.TaskCreateArgs
		if err := json.Unmarshal(call.Args, &a); err != nil {
			return nil, errs.Invalidf([]any{"args"}, "type_error", "%v", err)
		}
		t := &Task{ID: p.e.ids.New("tsk", now), RunID: r.ID, ProcessID: r.ProcessID, ProcessName: r.ProcessName,
			StepKey: stepKey, Title: a.Title, Subject: r.Subject, Actions: a.Actions, Status: TaskOpen,
			CreatedAt: now, Kind: "capability", Priority: r.Priority}
		if len(t.Actions) == 0 {
			t.Actions = []string{"complete"}
		}
		if a.Description != "" {
			t.Description = &a.Description
		}
		if a.Assignee != "" {
			t.Assignee = &a.Assignee
		}
		if a.DueHours != nil {
			d := now.Add(time.Duration(*a.DueHours * float64(time.Hour)))
			t.DueAt = &d
		}
		for _, f := range a.Fields {
			typ := f.Type
			if typ == "" {
				typ = "text"
			}
			t.Fields = append(t.Fields, map[string]any{"key": f.Key, "label": f.Label, "type": typ,
				"required": f.Required, "options": f.Options})
		}
		out, _ = json.Marshal(capability.TaskCreateResult{TaskID: t.ID, Status: string(t.Status)})
		counters = []counterInc{{counterKey(call.Tenant, "tasks-open", assigneeOf(t)), 1}}
		record = func(tx store.Txn) error {
			raw, err := json.Marshal(t)
			if err != nil {
				return err
			}
			return tasks.PutOver(tx, call.Tenant, nil, t, raw)
		}
	case capability.ApprovalRequest:
		var a capability.ApprovalRequestArgs
		if err := json.Unmarshal(call.Args, &a); err != nil {
			return nil, errs.Invalidf([]any{"args"}, "type_error", "%v", err)
		}
		risk := a.Risk
		if risk == "" {
			risk = "medium"
		}
		summary := a.Title
		if a.Summary != "" {
			summary += ": " + a.Summary
		}
		id := r.ID
		ap := &Approval{ID: p.e.ids.New("apr", now), RunID: &id, ProcessID: r.ProcessID, AppID: "processes",
			Tool: capability.ApprovalRequest, Risk: risk, Summary: summary, Args: a.Details, Status: ApprovalPending, CreatedAt: now}
		if ap.Args == nil {
			ap.Args = map[string]any{}
		}
		ap.Digest = approvalDigest(ap)
		if a.DueHours != nil {
			d := now.Add(time.Duration(*a.DueHours * float64(time.Hour)))
			ap.ExpiresAt = &d
		}
		out, _ = json.Marshal(capability.ApprovalRequestResult{ApprovalID: ap.ID, Status: string(ap.Status)})
		counters = []counterInc{{counterKey(call.Tenant, "approvals-pending"), 1}}
		record = func(tx store.Txn) error {
			raw, err := json.Marshal(ap)
			if err != nil {
				return err
			}
			return approvals.PutOver(tx, call.Tenant, nil, ap, raw)
		}
	default:
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "builtin.tasks does not fill %s", call.Capability)
	}
	// The engine never makes two calls with one key at once, so a repeat
	// (a retry after a crash) finds the first call's answer here.
	var first json.RawMessage
	err := p.e.st.View(ctx, func(r store.Reader) error {
		prev, err := r.Get(dedupe)
		if err == nil {
			first = prev
			return nil
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if first != nil {
		return first, nil
	}
	err = p.e.commits.commitWait(ctx, &delta{counters: counters, apply: func(tx store.Txn) error {
		if err := record(tx); err != nil {
			return err
		}
		return tx.Set(dedupe, out)
	}})
	if err != nil {
		return nil, err
	}
	return out, nil
}
