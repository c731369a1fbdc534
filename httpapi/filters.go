package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
)

// registerFilterRoutes declares the caller's saved inbox filters.
func (h *Handler) registerFilterRoutes() {
	// Every caller keeps their own: no app and no permission.
	h.handle("GET", "/v1/me/inbox-filters", "", "", h.handleFiltersGet).Out(200, access.SavedFilters{})
	h.handle("PUT", "/v1/me/inbox-filters", "", "", h.handleFiltersPut).In(access.SavedFilters{}).Out(200, access.SavedFilters{})
}

// filterOwner is the person whose filters the caller reads and writes: a
// session's person, a key's creator.
func filterOwner(c *request) (string, error) {
	if c.P.UserID == "" {
		return "", errs.Conflictf("the caller is no person who keeps filters")
	}
	return c.P.UserID, nil
}

// handleFiltersGet serves GET /v1/me/inbox-filters.
func (h *Handler) handleFiltersGet(c *request) error {
	who, err := filterOwner(c)
	if err != nil {
		return err
	}
	out, err := h.access().InboxFilters(c.Context(), c.Tenant(), who)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleFiltersPut serves PUT /v1/me/inbox-filters {filters}: the list
// replaces the caller's saved filters.
func (h *Handler) handleFiltersPut(c *request) error {
	who, err := filterOwner(c)
	if err != nil {
		return err
	}
	var in access.SavedFilters
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.access().SetInboxFilters(c.Context(), c.Tenant(), who, in.Filters)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
