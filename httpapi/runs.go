package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
)

func (h *Handler) registerRunRoutes() {
	h.handle("POST", "/v1/processes/:id/start", access.AppProcesses, access.PermRunsStart, h.handleRunStart).In(StartIn{}).Out(201, runengine.Run{})
	h.handle("GET", "/v1/process-runs", access.AppProcesses, access.PermProcessesRead, h.handleRunList).List(runengine.Run{}).Query("process_id", "status", "overdue")
	h.handle("GET", "/v1/process-runs/:id", access.AppProcesses, access.PermProcessesRead, h.handleRunGet).Out(200, runengine.Run{}).Query("wait")
	h.handle("POST", "/v1/process-runs/:id/cancel", access.AppProcesses, access.PermRunsStart, h.handleRunCancel).Out(200, runengine.Run{})
	h.handle("POST", "/v1/events", access.AppProcesses, access.PermEventsEmit, h.handleEventEmit).In(EventIn{}).Out(202, EventOut{})
	h.handle("GET", "/v1/cockpit", access.AppProcesses, access.PermProcessesRead, h.handleCockpit).Out(200, runengine.Cockpit{})

	h.handle("GET", "/v1/tasks", access.AppTasks, access.PermProcessesRead, h.handleTaskList).List(runengine.Task{}).Query("status", "assignee")
	h.handle("GET", "/v1/tasks/:id", access.AppTasks, access.PermProcessesRead, h.handleTaskGet).Out(200, runengine.Task{})
	h.handle("POST", "/v1/tasks/:id/complete", access.AppTasks, access.PermTasksWork, h.handleTaskComplete).In(CompleteIn{}).Out(200, runengine.Task{})
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
	// Priority is low, normal (the default) or high.
	Priority string `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high"`
}

// handleRunStart serves POST /v1/processes/:id/start.
func (h *Handler) handleRunStart(c *request) error {
	var in StartIn
	if err := c.Decode(&in); err != nil {
		// A missing process is a 404 before the body's 422; a start with
		// a good body learns it from the engine, which reads the process
		// anyway.
		if err := h.ws.Processes().Check(c.Context(), c.Tenant(), c.Param("id")); err != nil {
			return err
		}
		return err
	}
	render := func(a runengine.Answer) (storedResponse, error) {
		return c.jsonResponse(http.StatusCreated, "/v1/process-runs/", jsonID(a.Run), a.Run), nil
	}
	raw, err := h.startJSON(c.engineContext(render), runengine.StartParams{Tenant: c.Tenant(), ProcessID: c.Param("id"),
		Subject: runengine.Subject{Type: in.Subject.Type, Label: in.Subject.Label}, Actor: c.P.Actor(), Priority: in.Priority})
	if err != nil {
		return err
	}
	return c.answerWith(render, runengine.Answer{Run: raw})
}

var runStatuses = []runengine.RunStatus{runengine.RunRunning, runengine.RunWaiting, runengine.RunPaused, runengine.RunCompleted, runengine.RunFailed,
	runengine.RunRejected, runengine.RunCancelled}

// handleRunList serves GET /v1/process-runs?process_id=&status=&overdue=true&q=&search.{name}=.
func (h *Handler) handleRunList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	rq := runengine.RunQuery{ProcessID: q.Get("process_id"), Status: runengine.RunStatus(q.Get("status"))}
	// process_id's length was checked before (queryIDsTooLong).
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
	vs = append(vs, runSearchQuery(q, &rq)...)
	if len(vs) > 0 {
		return errs.Validation(vs...)
	}
	out, next, err := h.ws.Engine().ListRuns(c.Context(), c.Tenant(), rq, p)
	if err != nil {
		return err
	}
	for i, r := range out {
		out[i] = listedRun(r)
	}
	return c.List(out, next)
}

// maxListedOutput bounds a step's output as lists show it.
const maxListedOutput = runengine.MaxListedOutputBytes

// listedRun is r as lists and the cockpit show it: without its trigger's
// data, and with each step output larger than maxListedOutput bytes of JSON
// replaced by {"omitted": ..., "bytes": n} (GET /v1/process-runs/{id} has
// them all), so a page stays small whatever events and providers carried.
func listedRun(r *runengine.Run) *runengine.Run {
	c := *r
	c.Trigger.Data = nil
	copied := false
	for i, st := range r.Steps {
		if st.Output == nil {
			continue
		}
		raw, err := jsonvalue.Append(nil, st.Output)
		if err != nil || len(raw) <= maxListedOutput {
			continue
		}
		if !copied {
			c.Steps, copied = slices.Clone(r.Steps), true
		}
		c.Steps[i].Output = map[string]any{"omitted": "larger than 4096 bytes; GET the run for it", "bytes": len(raw)}
	}
	return &c
}

// handleRunGet serves GET /v1/process-runs/:id.
//
// ?wait=N (1..60 seconds) makes it a long poll: the answer comes as soon as
// the run has ended (completed, failed, rejected or cancelled), or after N
// seconds with the run as it then is, so a client waits for a run without
// polling. Either way the status is 200; the run's status tells which.
func (h *Handler) handleRunGet(c *request) error {
	wait, err := waitParam(c.Query())
	if err != nil {
		return err
	}
	eng := h.ws.Engine()
	r, err := eng.GetRun(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	if wait > 0 && !r.Finished() {
		ctx, cancel := context.WithTimeout(c.Context(), wait)
		defer cancel()
		if _, err := eng.WaitRun(ctx, c.Tenant(), r.ID); err != nil && ctx.Err() == nil {
			return err
		}
		if c.Context().Err() != nil {
			return errors.WithStack(c.Context().Err()) // the client went away
		}
		if r, err = eng.GetRun(c.Context(), c.Tenant(), r.ID); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, r)
}

// maxRunWait bounds a run long poll (?wait=), well inside the example
// server's write timeout.
const maxRunWait = 60 * time.Second

// waitParam reads ?wait= as whole seconds, 1..60; absent is 0.
func waitParam(q url.Values) (time.Duration, error) {
	s := q.Get("wait")
	if s == "" && !q.Has("wait") {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, errs.Invalidf([]any{"query", "wait"}, "type_error", "must be a whole number of seconds")
	case n < 1:
		return 0, errs.Invalidf([]any{"query", "wait"}, "greater_than_equal", "must be at least 1")
	case n > int(maxRunWait/time.Second):
		return 0, errs.Invalidf([]any{"query", "wait"}, "less_than_equal", "must be at most 60")
	}
	return time.Duration(n) * time.Second, nil
}

// handleRunCancel serves POST /v1/process-runs/:id/cancel.
func (h *Handler) handleRunCancel(c *request) error {
	if _, err := h.ws.Engine().GetRun(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err // another tenant's run is a 404 whatever the body
	}
	if err := c.noBody(); err != nil {
		return err
	}
	r, err := h.ws.Engine().Cancel(c.Context(), runengine.CancelParams{Tenant: c.Tenant(), RunID: c.Param("id"),
		Actor: c.P.Actor()})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// EventIn is an event emitted from outside.
type EventIn struct {
	Name string         `json:"name" jsonschema:"required,minLength=1,maxLength=200,pattern=^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)*$"`
	Data map[string]any `json:"data,omitempty" jsonschema:"nullable"`
}

// EventOut answers POST /v1/events.
type EventOut struct {
	EventID string `json:"event_id"`
	Runs    []any  `json:"runs"`
}

// handleEventEmit serves POST /v1/events: 202 with the runs it started.
// Names in a namespace an app or the engine owns are a 422; the event
// records the key or user that emitted it, and so do the runs it starts.
func (h *Handler) handleEventEmit(c *request) error {
	var in EventIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	if ns, owned := capability.ReservedNamespace(in.Name); owned {
		return errs.Invalidf([]any{"body", "name"}, "value_error",
			"events named %s.* are emitted only by the workspace itself; use a name of your own (custom.*, or your product's namespace)", ns)
	}
	pub, err := h.ws.Engine().Publish(c.Context(), runengine.PublishParams{Tenant: c.Tenant(), Name: in.Name, Data: in.Data,
		Emitter: c.P.Actor()})
	if err != nil {
		return inBody(err)
	}
	out := EventOut{EventID: pub.Event.ID, Runs: make([]any, len(pub.Runs))}
	for i, r := range pub.Runs {
		out.Runs[i] = r
	}
	return c.JSON(http.StatusAccepted, out)
}

// handleCockpit serves GET /v1/cockpit.
func (h *Handler) handleCockpit(c *request) error {
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
	for i, r := range out.RecentRuns {
		out.RecentRuns[i] = listedRun(r)
	}
	return c.JSON(http.StatusOK, out)
}

// maxAssignee bounds GET /v1/tasks?assignee=, as process.HumanTaskConfig
// and capability.TaskCreateArgs bound the assignee of the tasks it lists.
const maxAssignee = 200

var taskStatuses = []runengine.TaskStatus{runengine.TaskOpen, runengine.TaskCompleted, runengine.TaskCancelled}

// handleTaskList serves GET /v1/tasks?status=&assignee= (assignee "me" is
// the caller).
func (h *Handler) handleTaskList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	tq := runengine.TaskQuery{Status: runengine.TaskStatus(q.Get("status")), Assignee: q.Get("assignee")}
	// A task's assignee is at most maxAssignee characters (a step's or
	// task.create's assignee).
	vs := queryTooLong(nil, "assignee", tq.Assignee, maxAssignee)
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
func (h *Handler) handleTaskGet(c *request) error {
	t, err := h.ws.Engine().GetTask(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// CompleteIn completes a task.
type CompleteIn struct {
	Action string         `json:"action" jsonschema:"required,minLength=1,maxLength=100"`
	Fields map[string]any `json:"fields,omitempty" jsonschema:"nullable"`
}

// handleTaskComplete serves POST /v1/tasks/:id/complete.
func (h *Handler) handleTaskComplete(c *request) error {
	if _, err := h.ws.Engine().GetTask(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in CompleteIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	render := func(a runengine.Answer) (storedResponse, error) {
		return c.jsonResponse(http.StatusOK, "", "", a.Task), nil
	}
	t, err := h.ws.Engine().CompleteTask(c.engineContext(render), runengine.CompleteTaskParams{Tenant: c.Tenant(),
		TaskID: c.Param("id"), Action: in.Action, Fields: in.Fields, Actor: c.P.Actor()})
	if err != nil {
		return inBody(err)
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return c.answerWith(render, runengine.Answer{Task: raw})
}

var approvalStatuses = []runengine.ApprovalStatus{runengine.ApprovalPending, runengine.ApprovalApproved, runengine.ApprovalRejected,
	runengine.ApprovalExpired, runengine.ApprovalCancelled}

// handleApprovalList serves GET /v1/approvals?status=.
func (h *Handler) handleApprovalList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	status := runengine.ApprovalStatus(c.Query().Get("status"))
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
func (h *Handler) handleApprovalGet(c *request) error {
	a, err := h.ws.Engine().GetApproval(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// ApproveIn approves an approval; Args, when given, replace the proposed
// arguments.
type ApproveIn struct {
	Args map[string]any `json:"args,omitempty" jsonschema:"nullable"`
	// Digest, when given, is the approval's digest as the decider saw it:
	// a digest that is no longer the approval's is a 409.
	Digest string `json:"digest,omitempty" jsonschema:"maxLength=64"`
}

// RejectIn rejects an approval.
type RejectIn struct {
	Reason string `json:"reason,omitempty" jsonschema:"maxLength=2000"`
	// Digest is as ApproveIn's.
	Digest string `json:"digest,omitempty" jsonschema:"maxLength=64"`
}

// handleApprovalApprove serves POST /v1/approvals/:id/approve.
func (h *Handler) handleApprovalApprove(c *request) error {
	if _, err := h.ws.Engine().GetApproval(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in ApproveIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	aliases, err := h.deciderAliases(c)
	if err != nil {
		return err
	}
	d, err := h.ws.Engine().Decide(c.engineContext(c.renderDecision), runengine.DecideParams{Tenant: c.Tenant(),
		ApprovalID: c.Param("id"), Approve: true, Args: in.Args, Actor: c.P.Actor(), Aliases: aliases, Digest: in.Digest})
	if err != nil {
		return err
	}
	return c.answerDecision(d)
}

// handleApprovalReject serves POST /v1/approvals/:id/reject.
func (h *Handler) handleApprovalReject(c *request) error {
	if _, err := h.ws.Engine().GetApproval(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in RejectIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	aliases, err := h.deciderAliases(c)
	if err != nil {
		return err
	}
	d, err := h.ws.Engine().Decide(c.engineContext(c.renderDecision), runengine.DecideParams{Tenant: c.Tenant(),
		ApprovalID: c.Param("id"), Reason: in.Reason, Actor: c.P.Actor(), Aliases: aliases, Digest: in.Digest})
	if err != nil {
		return err
	}
	return c.answerDecision(d)
}

// deciderAliases are the caller's other names for an approval's separation
// of duties and distinct approvers (runengine.DecideParams.Aliases): the
// person (for an API key, the person who made it) and the person's keys,
// so that a requester deciding through a key of theirs, or one person
// approving as a session and as a key, is told apart from someone else.
func (h *Handler) deciderAliases(c *request) ([]string, error) {
	ids, err := h.access().KeyIDsOf(c.Context(), c.Tenant(), c.P.UserID)
	if err != nil {
		return nil, err
	}
	return append(ids, c.P.UserID), nil
}

// renderDecision is the answer to an approve or a reject: the approval and
// the run.
func (c *request) renderDecision(a runengine.Answer) (storedResponse, error) {
	b, err := json.Marshal(struct {
		Approval json.RawMessage `json:"approval"`
		Run      json.RawMessage `json:"run"`
	}{a.Approval, a.Run})
	if err != nil {
		return storedResponse{}, errors.Wrap(err, "encode decision")
	}
	return c.jsonResponse(http.StatusOK, "", "", b), nil
}

// answerDecision answers an approve or a reject with d.
func (c *request) answerDecision(d *runengine.Decision) error {
	approval, err := json.Marshal(d.Approval)
	if err != nil {
		return errors.Wrap(err, "encode approval")
	}
	run, err := json.Marshal(d.Run)
	if err != nil {
		return errors.Wrap(err, "encode run")
	}
	return c.answerWith(c.renderDecision, runengine.Answer{Approval: approval, Run: run})
}

func enumViolation[S ~string](param string, allowed []S) errs.Violation {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return errs.Violation{Loc: []any{"query", param}, Msg: "must be one of: " + strings.Join(names, ", "), Type: "enum"}
}
