package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/automation"
)

// registerAutomationRoutes declares the automation settings of the workspace
// and of each process. Reading them needs processes.read (every role has it:
// people see how much runs without them); changing them needs
// automation.manage. All belong to the automation app.
func (h *Handler) registerAutomationRoutes() {
	app := access.AppAutomation
	h.handle("GET", "/v1/automation", app, access.PermProcessesRead, h.handleAutomationGet).Out(200, automation.View{})
	h.handle("PATCH", "/v1/automation", app, access.PermAutomationManage, h.handleAutomationPatch).In(automation.Patch{}).Out(200, automation.View{}).Out(202, changeOut{})
	h.handle("GET", "/v1/processes/:id/automation", app, access.PermProcessesRead, h.handleProcessAutomationGet).Out(200, automation.View{})
	h.handle("PATCH", "/v1/processes/:id/automation", app, access.PermAutomationManage, h.handleProcessAutomationPatch).In(automation.Patch{}).Out(200, automation.View{}).Out(202, changeOut{})
}

// handleAutomationGet serves GET /v1/automation: the workspace's settings,
// with the defaults of the fields it does not set.
func (h *Handler) handleAutomationGet(c *request) error {
	v, err := h.ws.Automation().Workspace(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// handleAutomationPatch serves PATCH /v1/automation (AutomationPatch): 200
// with the settings, or 202 {change} when the change widens automation and
// four-eyes is on (no break_glass_reason).
func (h *Handler) handleAutomationPatch(c *request) error {
	p, err := h.automationPatch(c)
	if err != nil {
		return err
	}
	res, err := h.ws.Automation().UpdateWorkspace(c.Context(), c.Tenant(), c.P.Actor(), p)
	if err != nil {
		return inBody(err)
	}
	return automationResult(c, res)
}

// handleProcessAutomationGet serves GET /v1/processes/:id/automation: the
// process's settings (unset fields inherited from the workspace, named in
// "inherited") and the agreement on its approvals; 404 for a process not in
// the tenant.
func (h *Handler) handleProcessAutomationGet(c *request) error {
	v, err := h.ws.Automation().Process(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// handleProcessAutomationPatch serves PATCH /v1/processes/:id/automation
// (AutomationPatch): as PATCH /v1/automation, for one process.
func (h *Handler) handleProcessAutomationPatch(c *request) error {
	// The process first: another tenant's id is a 404 whatever the body.
	if err := h.ws.Automation().ProcessExists(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	p, err := h.automationPatch(c)
	if err != nil {
		return err
	}
	res, err := h.ws.Automation().UpdateProcess(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor(), p)
	if err != nil {
		return inBody(err)
	}
	return automationResult(c, res)
}

// automationPatch reads an AutomationPatch: it tells an absent field from a
// null one, which a struct decode cannot, so it is parsed by ParsePatch
// (every violation at once, as Decode reports them).
func (h *Handler) automationPatch(c *request) (automation.Patch, error) {
	body, err := c.jsonBody(nil) // ParsePatch matches keys exactly
	if err != nil {
		return automation.Patch{}, err
	}
	p, err := automation.ParsePatch(body)
	return p, inBody(err)
}

func automationResult(c *request, res *automation.Result) error {
	if res.Change != nil {
		return c.waiting(res.Change.ID, changeOut{Change: res.Change})
	}
	return c.JSON(http.StatusOK, res.Settings)
}
