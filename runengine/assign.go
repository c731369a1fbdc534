package runengine

import (
	"context"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
)

// EventTaskAssigned is the event a change of a task's assignee emits:
// data {task_id, run_id, process_id, assignee (null when unassigned),
// previous (null when it was unassigned), by, via (claim, unclaim or
// assign)}.
const EventTaskAssigned = "task.assigned"

// The ways a task's assignee changes (AssignTaskParams.Via); each is the
// audit entry's action after "task.".
const (
	AssignViaClaim   = "claim"
	AssignViaUnclaim = "unclaim"
	AssignViaAssign  = "assign"
)

// AssignTaskParams change who an open task is assigned to.
type AssignTaskParams struct {
	// Tenant and TaskID name the task. Required.
	Tenant, TaskID string
	// Assignee is who the task is assigned to afterwards (a user id or an
	// email, as a step's assignee may be); empty unassigns it.
	Assignee string
	// Via says how: AssignViaClaim, AssignViaUnclaim or AssignViaAssign
	// (the default). It names the audit entry's action.
	Via string
	// Actor is who changes it (the audit entry's actor).
	Actor string
	// Check, when set, is given the open task as it stands right before
	// the change, on the goroutine that owns the task's run, so that no
	// other change comes between the check and the change: an error it
	// returns refuses the change (a claim of a task someone else holds, an
	// unclaim by someone who may not). It must not block.
	Check func(t *Task) error
}

type assignArgs struct {
	taskID, assignee, via string
	check                 func(t *Task) error
}

// AssignTask changes an open task's assignee and returns the task as the
// change leaves it, once the change is durable. The change is written in
// one commit with an audit entry (entity "task", action "task.<via>",
// before and after the assignee) and the task.assigned event, and moves
// the task between the indexes of GET /v1/tasks?assignee= and the
// cockpit's counters. An assignee that is already the task's changes
// nothing (no entry, no event). A task that is not open is a
// bas.ErrConflict; a task of a paused run may still be assigned.
func (e *Engine) AssignTask(ctx context.Context, p AssignTaskParams) (*Task, error) {
	if len(p.Assignee) > 320 {
		return nil, errs.Invalidf([]any{"assignee"}, "string_too_long", "must be at most 320 characters")
	}
	t, err := e.GetTask(ctx, p.Tenant, p.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status != TaskOpen {
		return nil, errs.Conflictf("task already %s", t.Status)
	}
	via := p.Via
	if via == "" {
		via = AssignViaAssign
	}
	rep, err := e.send(ctx, &command{kind: cmdAssignTask, tenant: p.Tenant, runID: t.RunID, actor: p.Actor,
		assign: &assignArgs{taskID: p.TaskID, assignee: p.Assignee, via: via, check: p.Check}})
	if err != nil {
		return nil, err
	}
	return rep.task, nil
}

// assignTask applies a change of assignee to a task of this run.
func (x *exec) assignTask(a *assignArgs) {
	t := x.openTask(a.taskID)
	if t == nil {
		return
	}
	if a.check != nil {
		if err := a.check(cloneTask(t)); err != nil {
			x.err = err
			return
		}
	}
	before := t.Assignee
	if deref(before) == deref(nilIfEmpty(a.assignee)) {
		x.replyTask = t
		return
	}
	old := *t
	t.Assignee = nilIfEmpty(a.assignee)
	x.putTask(&old, t)
	tenant, actor := x.r.Tenant, x.cmd.actor
	entry := audit.Entry{At: x.now, Actor: actor, Action: "task." + a.via, Entity: "task", EntityID: t.ID,
		Before: audit.Marshal(map[string]any{"assignee": deref(before)}),
		After:  audit.Marshal(map[string]any{"assignee": deref(t.Assignee)})}
	gen := &x.w.e.ids
	x.fx.ops = append(x.fx.ops, func(tx store.Txn) error { return audit.Write(tx, tenant, gen, entry) })
	x.emit(EventTaskAssigned, map[string]any{"task_id": t.ID, "run_id": t.RunID, "process_id": t.ProcessID,
		"assignee": deref(t.Assignee), "previous": deref(before), "by": actor, "via": a.via})
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deref is *s, or nil for a nil s (an unassigned task's assignee).
func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
