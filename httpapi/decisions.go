package httpapi

import (
	"net/http"
	"net/url"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/decisions"
)

// registerDecisionRoutes declares the decisions app. Reading needs
// processes.read; defining and deleting decisions automation.manage;
// evaluating runs.start; judging cases (feedback, recorded outcomes)
// approvals.decide.
func (h *Handler) registerDecisionRoutes() {
	app := access.AppDecisions
	h.handle("GET", "/v1/decisions", app, access.PermProcessesRead, h.handleDecisionList).List(decisions.Record{})
	h.handle("POST", "/v1/decisions", app, access.PermAutomationManage, h.handleDecisionCreate).In(decisions.Decision{}).Out(201, decisions.Record{})
	h.handle("GET", "/v1/decisions/:name", app, access.PermProcessesRead, h.handleDecisionGet).Out(200, decisions.Record{})
	h.handle("DELETE", "/v1/decisions/:name", app, access.PermAutomationManage, h.handleDecisionDelete).Out(204, nil)
	h.handle("POST", "/v1/decisions/:name/evaluate", app, access.PermRunsStart, h.handleDecisionEvaluate).In(decisions.EvaluateIn{}).Out(200, decisions.Evaluation{})
	h.handle("POST", "/v1/decisions/:name/feedback", app, access.PermApprovalsDecide, h.handleDecisionFeedback).In(decisions.FeedbackIn{}).Out(200, decisions.Agreement{})
	h.handle("GET", "/v1/decisions/:name/agreement", app, access.PermProcessesRead, h.handleDecisionAgreement).Out(200, decisions.Agreement{})
	h.handle("POST", "/v1/decisions/:name/outcomes", app, access.PermApprovalsDecide, h.handleDecisionOutcome).In(decisions.OutcomeIn{}).Out(201, decisions.Case{})
	h.handle("GET", "/v1/decisions/:name/cases", app, access.PermProcessesRead, h.handleDecisionCases).List(decisions.Case{})
	h.handle("GET", "/v1/decisions/:name/cases/:case_id", app, access.PermProcessesRead, h.handleDecisionCase).Out(200, decisions.Case{})
}

// handleDecisionList serves GET /v1/decisions: the decisions in name order,
// paged.
func (h *Handler) handleDecisionList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Decisions().List(c.Context(), c.Tenant(), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleDecisionCreate serves POST /v1/decisions (Decision, no extra
// properties): 201 with the decision, its defaults applied; 409 when the
// name is taken.
func (h *Handler) handleDecisionCreate(c *request) error {
	var in decisions.Decision
	if err := c.Decode(&in); err != nil {
		return err
	}
	rec, err := h.ws.Decisions().Create(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/decisions/"+url.PathEscape(rec.Name), rec)
}

// handleDecisionGet serves GET /v1/decisions/:name.
func (h *Handler) handleDecisionGet(c *request) error {
	rec, err := h.ws.Decisions().Get(c.Context(), c.Tenant(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rec)
}

// handleDecisionDelete serves DELETE /v1/decisions/:name: 204, and its cases
// go with it; a second DELETE is 404.
func (h *Handler) handleDecisionDelete(c *request) error {
	if err := h.ws.Decisions().Delete(c.Context(), c.Tenant(), c.P.Actor(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleDecisionEvaluate serves POST /v1/decisions/:name/evaluate
// (DecisionIn): 200 {case_id, output, confidence, mode, rule_id}.
func (h *Handler) handleDecisionEvaluate(c *request) error {
	if err := h.decisionExists(c); err != nil {
		return err
	}
	var in decisions.EvaluateIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	ev, err := h.ws.Decisions().Evaluate(c.Context(), c.Tenant(), c.Param("name"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, ev)
}

// handleDecisionFeedback serves POST /v1/decisions/:name/feedback
// (FeedbackIn; rule_id names a case): 200 with the decision's Agreement.
func (h *Handler) handleDecisionFeedback(c *request) error {
	if err := h.decisionExists(c); err != nil {
		return err
	}
	var in decisions.FeedbackIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	ag, err := h.ws.Decisions().Feedback(c.Context(), c.Tenant(), c.P.Actor(), c.Param("name"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, ag)
}

// handleDecisionAgreement serves GET /v1/decisions/:name/agreement.
func (h *Handler) handleDecisionAgreement(c *request) error {
	ag, err := h.ws.Decisions().Agreement(c.Context(), c.Tenant(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ag)
}

// handleDecisionOutcome serves POST /v1/decisions/:name/outcomes ({input,
// output}): 201 with the recorded (confirmed) case.
func (h *Handler) handleDecisionOutcome(c *request) error {
	if err := h.decisionExists(c); err != nil {
		return err
	}
	var in decisions.OutcomeIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	cs, err := h.ws.Decisions().RecordOutcome(c.Context(), c.Tenant(), c.P.Actor(), c.Param("name"), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/decisions/"+url.PathEscape(c.Param("name"))+"/cases/"+cs.ID, cs)
}

// handleDecisionCases serves GET /v1/decisions/:name/cases: its cases,
// newest first, paged.
func (h *Handler) handleDecisionCases(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Decisions().Cases(c.Context(), c.Tenant(), c.Param("name"), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleDecisionCase serves GET /v1/decisions/:name/cases/:case_id.
func (h *Handler) handleDecisionCase(c *request) error {
	cs, err := h.ws.Decisions().Case(c.Context(), c.Tenant(), c.Param("name"), c.Param("case_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cs)
}

// decisionExists looks the path's decision up before the body is read, so
// an unknown name is a 404 whatever the body.
func (h *Handler) decisionExists(c *request) error {
	_, err := h.ws.Decisions().Get(c.Context(), c.Tenant(), c.Param("name"))
	return err
}
