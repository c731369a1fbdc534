package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
)

// registerTaskAssignRoutes declares the routes that change who works a
// human task: claim, unclaim and assign.
func (h *Handler) registerTaskAssignRoutes() {
	h.handle("POST", "/v1/tasks/:id/claim", access.AppTasks, access.PermTasksWork, h.handleTaskClaim).Out(200, runengine.Task{})
	h.handle("POST", "/v1/tasks/:id/unclaim", access.AppTasks, access.PermTasksWork, h.handleTaskUnclaim).Out(200, runengine.Task{})
	h.handle("POST", "/v1/tasks/:id/assign", access.AppTasks, access.PermTasksWork, h.handleTaskAssign).In(AssignIn{}).Out(200, runengine.Task{})
}

// AssignIn assigns a task to a person of the workspace.
type AssignIn struct {
	// Assignee is the person's user id (GET /v1/members).
	Assignee string `json:"assignee" jsonschema:"required,minLength=1,maxLength=100"`
}

// NoExtraProperties makes an unknown field of AssignIn a 422.
func (AssignIn) NoExtraProperties() {}

// isCaller reports whether a task's assignee names the caller (by user id
// or by email, as a step's assignee may).
func isCaller(c *request, assignee *string) bool {
	if assignee == nil || *assignee == "" {
		return false
	}
	return *assignee == c.P.UserID || (c.P.Email != "" && *assignee == c.P.Email)
}

// mayReassign is the rule for taking a task from its assignee: a task
// that is unassigned or the caller's may be handed on by whoever works
// tasks; another person's needs processes.manage.
func mayReassign(c *request) func(t *runengine.Task) error {
	return func(t *runengine.Task) error {
		if t.Assignee == nil || *t.Assignee == "" || isCaller(c, t.Assignee) || c.P.Can(access.PermProcessesManage) {
			return nil
		}
		return errs.Forbiddenf("missing permission %s: the task is assigned to %s", access.PermProcessesManage, *t.Assignee)
	}
}

// openTask reads the task named by the path (another tenant's is a 404).
func (h *Handler) openTask(c *request) (*runengine.Task, error) {
	return h.ws.Engine().GetTask(c.Context(), c.Tenant(), c.Param("id"))
}

// handleTaskClaim serves POST /v1/tasks/:id/claim: the caller takes an
// unassigned task (200 with the task). Claiming one's own is a no-op; a
// task someone else holds is a 409.
func (h *Handler) handleTaskClaim(c *request) error {
	t, err := h.openTask(c)
	if err != nil {
		return err
	}
	if err := c.noBody(); err != nil {
		return err
	}
	if t.Status == runengine.TaskOpen && isCaller(c, t.Assignee) {
		return c.JSON(http.StatusOK, t)
	}
	if c.P.UserID == "" {
		return errs.Conflictf("the caller is no person a task can be assigned to")
	}
	t, err = h.ws.Engine().AssignTask(c.Context(), runengine.AssignTaskParams{Tenant: c.Tenant(), TaskID: t.ID,
		Assignee: c.P.UserID, Via: runengine.AssignViaClaim, Actor: c.P.Actor(),
		Check: func(t *runengine.Task) error {
			if t.Assignee != nil && *t.Assignee != "" && !isCaller(c, t.Assignee) {
				return errs.Conflictf("task is assigned to %s", *t.Assignee)
			}
			return nil
		}})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// handleTaskUnclaim serves POST /v1/tasks/:id/unclaim: the task goes back
// to the unassigned list. The assignee may unclaim it; another person's
// task needs processes.manage (403). An unassigned task stays as it is
// (200).
func (h *Handler) handleTaskUnclaim(c *request) error {
	t, err := h.openTask(c)
	if err != nil {
		return err
	}
	if err := c.noBody(); err != nil {
		return err
	}
	t, err = h.ws.Engine().AssignTask(c.Context(), runengine.AssignTaskParams{Tenant: c.Tenant(), TaskID: t.ID,
		Via: runengine.AssignViaUnclaim, Actor: c.P.Actor(), Check: mayReassign(c)})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// handleTaskAssign serves POST /v1/tasks/:id/assign {assignee}: the task
// goes to a person of the workspace (422 for anyone else). An unassigned
// task or the caller's own may be handed on by whoever works tasks;
// another person's needs processes.manage (403).
func (h *Handler) handleTaskAssign(c *request) error {
	t, err := h.openTask(c)
	if err != nil {
		return err
	}
	var in AssignIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	if _, err := h.access().Member(c.Context(), c.Tenant(), in.Assignee); err != nil {
		if errors.Is(err, errs.NotFound) {
			return errs.Invalidf([]any{"body", "assignee"}, "value_error", "is not a member of this workspace")
		}
		return err
	}
	t, err = h.ws.Engine().AssignTask(c.Context(), runengine.AssignTaskParams{Tenant: c.Tenant(), TaskID: t.ID,
		Assignee: in.Assignee, Via: runengine.AssignViaAssign, Actor: c.P.Actor(), Check: mayReassign(c)})
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, t)
}
