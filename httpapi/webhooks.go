package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/webhooks"
)

// Outbound webhooks (api.md section 6, webhooks row). They belong to the
// automation app: reading and changing them needs automation.manage, as
// a subscription sends the workspace's events out of it.
func (h *Handler) registerWebhookRoutes() {
	app, perm := access.AppAutomation, access.PermAutomationManage
	h.handle("GET", "/v1/webhooks", app, perm, h.handleWebhooksList).List(webhooks.Subscription{})
	h.handle("POST", "/v1/webhooks", app, perm, h.handleWebhookCreate).In(webhooks.In{}).Out(201, webhooks.Created{})
	h.handle("GET", "/v1/webhooks/:id", app, perm, h.handleWebhookGet).Out(200, webhooks.Subscription{})
	h.handle("PATCH", "/v1/webhooks/:id", app, perm, h.handleWebhookUpdate).In(webhooks.Patch{}).Out(200, webhooks.Subscription{})
	h.handle("DELETE", "/v1/webhooks/:id", app, perm, h.handleWebhookDelete).Out(204, nil)
	h.handle("GET", "/v1/webhooks/:id/deliveries", app, perm, h.handleWebhookDeliveries).List(webhooks.Delivery{})
	h.handle("POST", "/v1/webhooks/:id/deliveries/:delivery_id/redeliver", app, perm, h.handleWebhookRedeliver).Out(202, webhooks.Delivery{})
}

// handleWebhooksList serves GET /v1/webhooks: newest first, without
// secrets.
func (h *Handler) handleWebhooksList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Webhooks().List(c.Context(), c.Tenant(), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleWebhookCreate serves POST /v1/webhooks ({url, events,
// description, active}): 201 with the secret, shown this once.
func (h *Handler) handleWebhookCreate(c *request) error {
	var in webhooks.In
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Webhooks().Create(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return inBody(err)
	}
	c.holdsSecret() // the signing secret is shown once
	return c.Created("/v1/webhooks/"+out.ID, out)
}

// handleWebhookGet serves GET /v1/webhooks/{id} (no secret).
func (h *Handler) handleWebhookGet(c *request) error {
	out, err := h.ws.Webhooks().Get(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleWebhookUpdate serves PATCH /v1/webhooks/{id}.
func (h *Handler) handleWebhookUpdate(c *request) error {
	if _, err := h.ws.Webhooks().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in webhooks.Patch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Webhooks().Update(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleWebhookDelete serves DELETE /v1/webhooks/{id}: 204.
func (h *Handler) handleWebhookDelete(c *request) error {
	if err := h.ws.Webhooks().Delete(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleWebhookDeliveries serves GET /v1/webhooks/{id}/deliveries:
// newest first.
func (h *Handler) handleWebhookDeliveries(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Webhooks().Deliveries(c.Context(), c.Tenant(), c.Param("id"), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleWebhookRedeliver serves POST
// /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver: 202 with the new
// delivery, due at once.
func (h *Handler) handleWebhookRedeliver(c *request) error {
	if _, err := h.ws.Webhooks().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err // another tenant's subscription is a 404 whatever the body
	}
	if err := c.noBody(); err != nil {
		return err
	}
	out, err := h.ws.Webhooks().Redeliver(c.Context(), c.Tenant(), c.Param("id"), c.Param("delivery_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}
