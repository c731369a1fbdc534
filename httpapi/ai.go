package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/internal/apps/access"
)

// registerAIRoutes declares the AI connection's routes: the workspace's
// language-model connection, its token usage and its call records.
func (h *Handler) registerAIRoutes() {
	app := access.AppCapabilities
	h.handle("GET", "/v1/ai/connection", app, "", h.handleAIConnectionGet).Out(200, ai.Connection{}).Errors(404)
	h.handle("PUT", "/v1/ai/connection", app, access.PermCapabilitiesManage, h.handleAIConnectionPut).In(ai.ConnectionIn{}).Out(200, ai.Connection{}).Out(201, ai.Connection{})
	h.handle("DELETE", "/v1/ai/connection", app, access.PermCapabilitiesManage, h.handleAIConnectionDelete).Out(204, nil).Errors(404)
	h.handle("GET", "/v1/ai/usage", app, "", h.handleAIUsage).Query("month").Out(200, ai.MonthUsage{})
	h.handle("GET", "/v1/ai/calls", app, "", h.handleAICalls).List(ai.Call{})
	h.handle("GET", "/v1/ai/calls/:id", app, "", h.handleAICallGet).Out(200, ai.Call{})
}

// handleAIConnectionGet serves GET /v1/ai/connection: 404 until one is
// configured. The API key is never returned.
func (h *Handler) handleAIConnectionGet(c *request) error {
	out, err := h.ws.AI().Connection(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleAIConnectionPut serves PUT /v1/ai/connection (ai.ConnectionIn):
// 201 when it creates the connection, 200 when it replaces it.
func (h *Handler) handleAIConnectionPut(c *request) error {
	var in ai.ConnectionIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, created, err := h.ws.AI().SetConnection(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return err
	}
	if created {
		return c.Created("/v1/ai/connection", out)
	}
	return c.JSON(http.StatusOK, out)
}

// handleAIConnectionDelete serves DELETE /v1/ai/connection: 204, 404 when
// none is configured.
func (h *Handler) handleAIConnectionDelete(c *request) error {
	if err := h.ws.AI().DeleteConnection(c.Context(), c.Tenant(), c.P.Actor()); err != nil {
		return err
	}
	return c.NoContent()
}

// handleAIUsage serves GET /v1/ai/usage?month=YYYY-MM (default: this
// month, UTC).
func (h *Handler) handleAIUsage(c *request) error {
	month := c.Query().Get("month")
	if month == "" {
		month = h.ws.Clock().Now().UTC().Format("2006-01")
	}
	out, err := h.ws.AI().Usage(c.Context(), c.Tenant(), month)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleAICalls serves GET /v1/ai/calls: the call records, newest first.
func (h *Handler) handleAICalls(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.AI().Calls(c.Context(), c.Tenant(), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleAICallGet serves GET /v1/ai/calls/{id}.
func (h *Handler) handleAICallGet(c *request) error {
	out, err := h.ws.AI().Call(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
