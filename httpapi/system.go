package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/capability"
)

func (h *Handler) registerSystemRoutes() {
	h.handlePublic("GET", "/healthz", h.handleHealth).Out(200, map[string]string{})
	h.handle("GET", "/v1/apps", "", "", h.handleAppsList).Out(200, []capability.App{})
	h.handlePublic("GET", "/v1/openapi.json", h.handleOpenAPI).Out(200, map[string]any{})
}

// handleHealth serves GET /healthz: 200 when the store answers.
func (h *Handler) handleHealth(c *request) error {
	if err := h.ws.Ping(c.Context()); err != nil {
		writeDetail(c.W, http.StatusServiceUnavailable, "store unavailable")
		return nil
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// handleAppsList serves GET /v1/apps: the built-in apps this handler
// serves (an app is served when a route of the route table belongs to
// it) and the apps plugins describe.
func (h *Handler) handleAppsList(c *request) error {
	builtin := map[string]bool{}
	for _, a := range capability.BuiltinApps() {
		builtin[a.ID] = true
	}
	served := map[string]bool{}
	for _, r := range h.routes {
		served[r.App] = true
	}
	all := h.ws.Apps()
	out := all[:0]
	for _, a := range all {
		if !builtin[a.ID] || served[a.ID] {
			out = append(out, a)
		}
	}
	return c.JSON(http.StatusOK, out)
}
