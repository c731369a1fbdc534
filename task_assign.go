package bas

import (
	"context"

	"github.com/bas-platform/bas/runengine"
)

// AssignTaskParams change who an open task is assigned to (see
// Workspace.AssignTask).
type AssignTaskParams = runengine.AssignTaskParams

// The ways a task's assignee changes (AssignTaskParams.Via).
const (
	AssignViaClaim   = runengine.AssignViaClaim
	AssignViaUnclaim = runengine.AssignViaUnclaim
	AssignViaAssign  = runengine.AssignViaAssign
)

// EventTaskAssigned is the event a change of a task's assignee emits.
const EventTaskAssigned = runengine.EventTaskAssigned

// AssignTask changes an open task's assignee (empty Assignee unassigns
// it) and returns the task once the change is durable: written with an
// audit entry and the task.assigned event in one commit. p.Check, when
// set, may refuse the change against the task as it stands right before
// it (a claim of a task someone else holds, say). A task that is not open
// is ErrConflict, another tenant's ErrNotFound.
func (ws *Workspace) AssignTask(ctx context.Context, p AssignTaskParams) (*Task, error) {
	return kind(ws.engine.AssignTask(ctx, p))
}
