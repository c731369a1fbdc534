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
func (h *Handler) handleHealth(c *Ctx) error {
	if err := h.ws.Ping(c.Context()); err != nil {
		writeDetail(c.W, http.StatusServiceUnavailable, "store unavailable")
		return nil
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// handleAppsList serves GET /v1/apps: the built-in apps and plugin apps.
func (h *Handler) handleAppsList(c *Ctx) error {
	return c.JSON(http.StatusOK, h.ws.Apps())
}
