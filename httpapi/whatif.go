package httpapi

import (
	"net/http"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/apps/docs"
	"github.com/bas-platform/bas/runengine"
)

// registerWhatIfRoutes declares the what-if replay of a process version;
// its job is read at GET /v1/jobs/{id}.
func (h *Handler) registerWhatIfRoutes() {
	h.handle("POST", "/v1/processes/:id/what-if", access.AppProcesses, access.PermProcessesManage, h.handleWhatIf).In(WhatIfIn{}).Out(202, JobOut{})
	h.handle("POST", "/v1/decisions/:name/what-if", access.AppDecisions, access.PermAutomationManage, h.handleDecisionWhatIf).
		In(decisions.WhatIfIn{}).Out(200, decisions.WhatIfReport{})
	h.handle("POST", "/v1/docs/types/:id/what-if", access.AppDocs, access.PermDocsWrite, h.handleDocTypeWhatIf).
		In(docs.WhatIfIn{}).Out(200, docs.WhatIfReport{})
}

// handleDocTypeWhatIf serves POST /v1/docs/types/:id/what-if: 200 with the
// report of the type's decided documents under the candidate fields and
// workflow.
func (h *Handler) handleDocTypeWhatIf(c *request) error {
	if _, err := h.ws.Docs().GetType(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in docs.WhatIfIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	rep, err := h.ws.Docs().WhatIf(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, rep)
}

// handleDecisionWhatIf serves POST /v1/decisions/:name/what-if: 200 with
// the report of the decision's judged cases under the candidate
// thresholds.
func (h *Handler) handleDecisionWhatIf(c *request) error {
	if _, err := h.ws.Decisions().Get(c.Context(), c.Tenant(), c.Param("name")); err != nil {
		return err
	}
	var in decisions.WhatIfIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	rep, err := h.ws.Decisions().WhatIf(c.Context(), c.Tenant(), c.Param("name"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, rep)
}

// WhatIfIn is the body of POST /v1/processes/{id}/what-if.
type WhatIfIn struct {
	// Version is the candidate version; the process's current one when
	// absent.
	Version int `json:"version,omitempty" jsonschema:"minimum=1"`
	// Since keeps the runs started at or after it.
	Since *time.Time `json:"since,omitempty"`
	// Limit bounds the runs looked at, newest first (default 100).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000"`
}

// NoExtraProperties makes an unknown field of WhatIfIn a 422.
func (WhatIfIn) NoExtraProperties() {}

// handleWhatIf serves POST /v1/processes/:id/what-if: 202 with the job,
// whose result is the agreement report.
func (h *Handler) handleWhatIf(c *request) error {
	if err := h.ws.Processes().Check(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in WhatIfIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	j, err := h.ws.Engine().WhatIf(c.Context(), c.Tenant(), runengine.WhatIfParams{ProcessID: c.Param("id"),
		Version: in.Version, Since: in.Since, Limit: in.Limit}, c.P.Actor())
	if err != nil {
		return err
	}
	c.W.Header().Set("Location", c.h.opts.BasePath+"/v1/jobs/"+j.ID)
	return c.JSON(http.StatusAccepted, JobOut{Job: j})
}
