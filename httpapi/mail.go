package httpapi

import (
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/mail"
)

// registerMailRoutes declares the outbox of the built-in email.send
// provider, where development and tests read the sign-in codes and
// invitations that were "sent".
func (h *Handler) registerMailRoutes() {
	h.handle("GET", "/v1/outbox", access.AppAccess, access.PermAccessManage, h.handleOutboxList).List(mail.Message{})
}

// handleOutboxList serves GET /v1/outbox: the tenant's outbox, newest first.
func (h *Handler) handleOutboxList(c *request) error {
	page, err := c.Page()
	if err != nil {
		return err
	}
	msgs, next, err := mail.List(c.Context(), h.ws.Store(), c.Tenant(), page)
	if err != nil {
		return err
	}
	return c.List(msgs, next)
}
