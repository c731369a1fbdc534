package httpapi

import (
	"net/http"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/runengine"
)

// registerWhatIfRoutes declares the what-if replay of a process version;
// its job is read at GET /v1/jobs/{id}.
func (h *Handler) registerWhatIfRoutes() {
	h.handle("POST", "/v1/processes/:id/what-if", access.AppProcesses, access.PermProcessesManage, h.handleWhatIf).In(WhatIfIn{}).Out(202, JobOut{})
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
