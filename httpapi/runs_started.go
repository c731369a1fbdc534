package httpapi

import (
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/runengine"
)

// registerStartedRunsRoutes declares GET /v1/process-runs/:id/runs, the
// runs a run's events started.
func (h *Handler) registerStartedRunsRoutes() {
	h.handle("GET", "/v1/process-runs/:id/runs", access.AppProcesses, access.PermProcessesRead, h.handleStartedRuns).List(runengine.Run{})
}

// handleStartedRuns serves GET /v1/process-runs/:id/runs: one page of the
// runs whose trigger.cause.run_id is the run, newest first, as lists show
// runs. Another tenant's run is a 404.
func (h *Handler) handleStartedRuns(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Engine().ListStartedRuns(c.Context(), c.Tenant(), c.Param("id"), p)
	if err != nil {
		return err
	}
	for i, r := range out {
		out[i] = listedRun(r)
	}
	return c.List(out, next)
}
