package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
)

func (h *Handler) registerRunRoutes() {
	h.handle("POST", "/v1/processes/:id/start", access.AppProcesses, access.PermRunsStart, h.handleRunStart).In(StartIn{}).Out(201, runengine.Run{})
	h.handle("GET", "/v1/process-runs", access.AppProcesses, access.PermProcessesRead, h.handleRunList).List(runengine.Run{}).Query("process_id", "status", "overdue")
	h.handle("GET", "/v1/process-runs/:id", access.AppProcesses, access.PermProcessesRead, h.handleRunGet).Out(200, runengine.Run{})
	h.handle("POST", "/v1/process-runs/:id/cancel", access.AppProcesses, access.PermRunsStart, h.handleRunCancel).Out(200, runengine.Run{})
	h.handle("POST", "/v1/events", access.AppProcesses, access.PermEventsEmit, h.handleEventEmit).In(EventIn{}).Out(202, EventOut{})
	h.handle("GET", "/v1/cockpit", access.AppProcesses, access.PermProcessesRead, h.handleCockpit).Out(200, runengine.Cockpit{})

	h.handle("GET", "/v1/tasks", access.AppTasks, access.PermProcessesRead, h.handleTaskList).List(runengine.Task{}).Query("status", "assignee")
	h.handle("GET", "/v1/tasks/:id", access.AppTasks, access.PermProcessesRead, h.handleTaskGet).Out(200, runengine.Task{})
	h.handle("POST", "/v1/tasks/:id/complete", access.AppTasks, access.PermTasksWork, h.handleTaskComplete).In(CompleteIn{}).Out(200, runengine.Run{})
	h.handle("GET", "/v1/approvals", access.AppTasks, access.PermProcessesRead, h.handleApprovalList).List(runengine.Approval{}).Query("status")
	h.handle("GET", "/v1/approvals/:id", access.AppTasks, access.PermProcessesRead, h.handleApprovalGet).Out(200, runengine.Approval{})
	h.handle("POST", "/v1/approvals/:id/approve", access.AppTasks, access.PermApprovalsDecide, h.handleApprovalApprove).In(ApproveIn{}).Out(200, runengine.Decision{})
	h.handle("POST", "/v1/approvals/:id/reject", access.AppTasks, access.PermApprovalsDecide, h.handleApprovalReject).In(RejectIn{}).Out(200, runengine.Decision{})
}

// SubjectIn is what a manually started run is about.
type SubjectIn struct {
	Type  string `json:"type" jsonschema:"required,minLength=1,maxLength=200"`
	Label string `json:"label" jsonschema:"required,minLength=1,maxLength=200"`
}

// StartIn is the body of a manual start.
type StartIn struct {
	Subject SubjectIn `json:"subject" jsonschema:"required"`
}

// handleRunStart serves POST /v1/processes/:id/start.
func (h *Handler) handleRunStart(c *Ctx) error {
	if err := h.ws.Processes().Check(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in StartIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	raw, err := h.ws.Engine().Start(c.Context(), runengine.StartInput{Tenant: c.Tenant(), ProcessID: c.Param("id"),
		Subject: runengine.Subject{Type: in.Subject.Type, Label: in.Subject.Label}, Actor: c.P.Actor()})
	if err != nil {
		return err
	}
	return c.createdRaw("/v1/process-runs/"+jsonID(raw), raw)
}

var runStatuses = []string{runengine.RunRunning, runengine.RunWaiting, runengine.RunCompleted, runengine.RunFailed,
	runengine.RunRejected, runengine.RunCancelled}

// handleRunList serves GET /v1/process-runs?process_id=&status=&overdue=true.
func (h *Handler) handleRunList(c *Ctx) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.R.URL.Query()
	rq := runengine.RunQuery{ProcessID: q.Get("process_id"), Status: q.Get("status")}
	var vs []errs.Violation
	if rq.Status != "" && !slices.Contains(runStatuses, rq.Status) {
		vs = append(vs, enumViolation("status", runStatuses))
	}
	switch q.Get("overdue") {
	case "", "false":
	case "true":
		rq.Overdue = true
	default:
		vs = append(vs, errs.Violation{Loc: []any{"query", "overdue"}, Msg: "must be true or false", Type: "type_error"})
	}
	if len(vs) > 0 {
		return errs.Validation(vs...)
	}
	out, next, err := h.ws.Engine().ListRuns(c.Context(), c.Tenant(), rq, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleRunGet serves GET /v1/process-runs/:id.
func (h *Handler) handleRunGet(c *Ctx) error {
	r, err := h.ws.Engine().GetRun(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// handleRunCancel serves POST /v1/process-runs/:id/cancel.
func (h *Handler) handleRunCancel(c *Ctx) error {
	raw, err := h.ws.Engine().Cancel(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor())
	if err != nil {
		return err
	}
	return c.raw(http.StatusOK, raw)
}

// EventIn is an event emitted from outside.
type EventIn struct {
	Name string         `json:"name" jsonschema:"required,minLength=1,maxLength=200,pattern=^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)*$"`
	Data map[string]any `json:"data,omitempty"`
}

// EventOut answers POST /v1/events.
type EventOut struct {
	EventID string `json:"event_id"`
	Runs    []any  `json:"runs"`
}

// handleEventEmit serves POST /v1/events: 202 with the runs it started.
func (h *Handler) handleEventEmit(c *Ctx) error {
	var in EventIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	id, started, err := h.ws.Engine().Publish(c.Context(), c.Tenant(), in.Name, in.Data)
	if err != nil {
		return err
	}
	out := EventOut{EventID: id, Runs: make([]any, len(started))}
	for i, r := range started {
		out.Runs[i] = r
	}
	return c.JSON(http.StatusAccepted, out)
}

// handleCockpit serves GET /v1/cockpit.
func (h *Handler) handleCockpit(c *Ctx) error {
	v := runengine.Viewer{CanDecide: c.P.Can(access.PermApprovalsDecide), CanWork: c.P.Can(access.PermTasksWork)}
	for _, a := range []string{c.P.UserID, c.P.Email} {
		if a != "" {
			v.Assignees = append(v.Assignees, a)
		}
	}
	rate, err := h.ws.AgreementRate(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	out, err := h.ws.Engine().Cockpit(c.Context(), c.Tenant(), v, rate)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

var taskStatuses = []string{runengine.TaskOpen, runengine.TaskCompleted, runengine.TaskCancelled}

// handleTaskList serves GET /v1/tasks?status=&assignee= (assignee "me" is
// the caller).
func (h *Handler) handleTaskList(c *Ctx) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.R.URL.Query()
	tq := runengine.TaskQuery{Status: q.Get("status"), Assignee: q.Get("assignee")}
	var vs []errs.Violation
	if tq.Status != "" && !slices.Contains(taskStatuses, tq.Status) {
		vs = append(vs, enumViolation("status", taskStatuses))
	}
	if tq.Assignee != "" && tq.Status == "" {
		vs = append(vs, errs.Violation{Loc: []any{"query", "assignee"}, Msg: "needs status", Type: "value_error"})
	}
	if len(vs) > 0 {
		return errs.Validation(vs...)
	}
	if tq.Assignee == "me" {
		// A task may name the caller by user id or by email; the cockpit
		// counts both, and so does this list.
		tq.Assignee = ""
		for _, a := range []string{c.P.UserID, c.P.Email} {
			if a != "" {
				tq.Assignees = append(tq.Assignees, a)
			}
		}
		if len(tq.Assignees) == 0 {
			return c.List([]*runengine.Task{}, "") // a caller with neither has no tasks
		}
	}
	out, next, err := h.ws.Engine().ListTasks(c.Context(), c.Tenant(), tq, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleTaskGet serves GET /v1/tasks/:id.
func (h *Handler) handleTaskGet(c *Ctx) error {
	t, err := h.ws.Engine().GetTask(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// CompleteIn completes a task.
type CompleteIn struct {
	Action string         `json:"action" jsonschema:"required,minLength=1,maxLength=100"`
	Fields map[string]any `json:"fields,omitempty"`
}

// handleTaskComplete serves POST /v1/tasks/:id/complete.
func (h *Handler) handleTaskComplete(c *Ctx) error {
	if _, err := h.ws.Engine().GetTask(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in CompleteIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	raw, err := h.ws.Engine().CompleteTask(c.Context(), c.Tenant(), c.Param("id"), in.Action, in.Fields, c.P.Actor())
	if err != nil {
		return err
	}
	return c.raw(http.StatusOK, raw)
}

var approvalStatuses = []string{runengine.ApprovalPending, runengine.ApprovalApproved, runengine.ApprovalRejected,
	runengine.ApprovalExpired, runengine.ApprovalCancelled}

// handleApprovalList serves GET /v1/approvals?status=.
func (h *Handler) handleApprovalList(c *Ctx) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	status := c.R.URL.Query().Get("status")
	if status != "" && !slices.Contains(approvalStatuses, status) {
		return errs.Validation(enumViolation("status", approvalStatuses))
	}
	out, next, err := h.ws.Engine().ListApprovals(c.Context(), c.Tenant(), status, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleApprovalGet serves GET /v1/approvals/:id.
func (h *Handler) handleApprovalGet(c *Ctx) error {
	a, err := h.ws.Engine().GetApproval(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// ApproveIn approves an approval; Args, when given, replace the proposed
// arguments.
type ApproveIn struct {
	Args map[string]any `json:"args,omitempty"`
}

// RejectIn rejects an approval.
type RejectIn struct {
	Reason string `json:"reason,omitempty" jsonschema:"maxLength=2000"`
}

// handleApprovalApprove serves POST /v1/approvals/:id/approve.
func (h *Handler) handleApprovalApprove(c *Ctx) error {
	if _, err := h.ws.Engine().GetApproval(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in ApproveIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Engine().Decide(c.Context(), c.Tenant(), c.Param("id"), true, in.Args, "", c.P.Actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// handleApprovalReject serves POST /v1/approvals/:id/reject.
func (h *Handler) handleApprovalReject(c *Ctx) error {
	if _, err := h.ws.Engine().GetApproval(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in RejectIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Engine().Decide(c.Context(), c.Tenant(), c.Param("id"), false, nil, in.Reason, c.P.Actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func enumViolation(param string, allowed []string) errs.Violation {
	return errs.Violation{Loc: []any{"query", param}, Msg: "must be one of: " + strings.Join(allowed, ", "), Type: "enum"}
}
