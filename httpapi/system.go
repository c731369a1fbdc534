package httpapi

import (
	"net/http"
)

func (h *Handler) registerSystemRoutes() {
	h.handlePublic("GET", "/healthz", h.handleHealth)
	h.handle("GET", "/v1/apps", "", "", h.handleAppsList)
}

// handleHealth serves GET /healthz: 200 when the store answers.
func (h *Handler) handleHealth(c *request) error {
	if err := h.ws.Ping(c.Context()); err != nil {
		writeDetail(c.W, http.StatusServiceUnavailable, "store unavailable")
		return nil
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// handleAppsList serves GET /v1/apps: the built-in apps and plugin apps.
func (h *Handler) handleAppsList(c *request) error {
	return c.JSON(http.StatusOK, h.ws.Apps())
}
