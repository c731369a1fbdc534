package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/templates"
)

// The process template catalog (api.md section 5, templates row): reading
// needs processes.read, installing processes.manage.
func (h *Handler) registerTemplateRoutes() {
	app := access.AppProcesses
	h.handle("GET", "/v1/process-templates", app, access.PermProcessesRead, h.handleTemplatesList).Out(200, []templates.CatalogEntry{}).Query("function")
	h.handle("GET", "/v1/process-templates/:id", app, access.PermProcessesRead, h.handleTemplateGet).Out(200, templates.CatalogEntry{})
	h.handle("POST", "/v1/process-templates/install", app, access.PermProcessesManage, h.handleTemplatesInstall).In(templates.InstallIn{}).Out(200, templates.InstallOut{}).Out(201, templates.InstallOut{})
}

// handleTemplatesList serves GET /v1/process-templates?function=: every
// template (CatalogEntry) with installed for the caller's workspace, by
// function then id (not paged: the catalog is small and fixed).
func (h *Handler) handleTemplatesList(c *request) error {
	out, err := h.ws.Templates().List(c.Context(), c.Tenant(), c.Query().Get("function"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleTemplateGet serves GET /v1/process-templates/{id}.
func (h *Handler) handleTemplateGet(c *request) error {
	e, err := h.ws.Templates().Get(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

// handleTemplatesInstall serves POST /v1/process-templates/install
// (InstallIn -> InstallOut): 201 when a process was installed, 200 when
// every template was skipped.
func (h *Handler) handleTemplatesInstall(c *request) error {
	var in templates.InstallIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	// The request's violations go under body; a template's own process
	// failing its checks (a catalog defect, not the request's) keeps the
	// process's field names, as the body holds no process.
	if err := h.ws.Templates().Check(in); err != nil {
		return inBody(err)
	}
	out, err := h.ws.Templates().Install(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return err
	}
	if len(out.Installed) == 0 {
		return c.JSON(http.StatusOK, out)
	}
	return c.JSON(http.StatusCreated, out)
}
