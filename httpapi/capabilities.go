package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
)

// Bounds of GET /v1/integrations?apps=.
const (
	maxIntegrationNames   = 100
	maxIntegrationNameLen = 200
)

func (h *Handler) registerCapabilityRoutes() {
	app := access.AppCapabilities
	h.handle("GET", "/v1/capabilities", app, "", h.handleCapabilitiesList).List(CapabilityOut{})
	h.handle("GET", "/v1/capabilities/gaps", app, "", h.handleCapabilityGaps).List(registry.Gap{})
	h.handle("GET", "/v1/capabilities/:id", app, "", h.handleCapabilityGet).Out(200, CapabilityOut{})
	h.handle("PUT", "/v1/capabilities/:id/binding", app, access.PermCapabilitiesManage, h.handleCapabilityBind).In(registry.BindingIn{}).Out(200, CapabilityOut{})
	h.handle("DELETE", "/v1/capabilities/:id/binding", app, access.PermCapabilitiesManage, h.handleCapabilityUnbind).Out(204, nil)
	h.handle("GET", "/v1/integrations", app, "", h.handleIntegrations).Query("apps").Out(200, []registry.Integration{})
	h.handle("GET", "/v1/connections", app, "", h.handleConnections).List(registry.ConnectionOut{})
}

// ProviderRecord is a provider as CapabilityOut lists it.
type ProviderRecord struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Kind capability.Kind `json:"kind"`
	// Status is "available", or "coming" for a declared connector that is
	// not built yet (it cannot be bound).
	Status string `json:"status"`
}

// CapabilityOut is a capability as the API shows it.
type CapabilityOut struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Description  string           `json:"description"`
	ArgsSchema   json.RawMessage  `json:"args_schema"`
	ResultSchema json.RawMessage  `json:"result_schema"`
	Providers    []ProviderRecord `json:"providers"`
	// BoundProvider is the provider the tenant bound, or null.
	BoundProvider *string `json:"bound_provider"`
	// DefaultProvider is where calls go when nothing is bound: the only
	// available provider, or null (none, or several: bind one).
	DefaultProvider *string `json:"default_provider"`
}

// capabilityOut builds the record of c for the tenant's bindings.
func (h *Handler) capabilityOut(c capability.Capability, bound map[string]string) CapabilityOut {
	reg := h.ws.Capabilities()
	out := CapabilityOut{
		ID: c.ID, Name: c.Name, Description: c.Description,
		ArgsSchema: c.Args, ResultSchema: c.Result,
		Providers: []ProviderRecord{},
	}
	var avail []string
	for _, in := range reg.ProvidersFor(c.ID) {
		st := "available"
		if in.Coming {
			st = "coming"
		} else {
			avail = append(avail, in.ID)
		}
		out.Providers = append(out.Providers, ProviderRecord{ID: in.ID, Name: in.Name, Kind: in.Kind, Status: st})
	}
	if p, ok := bound[c.ID]; ok {
		out.BoundProvider = &p
	}
	if len(avail) == 1 {
		out.DefaultProvider = &avail[0]
	}
	return out
}

// boundMap returns the caller's bindings as capability -> provider.
func (h *Handler) boundMap(c *request) (map[string]string, error) {
	bs, err := h.ws.Capabilities().Bindings(c.Context(), c.Tenant())
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(bs))
	for _, b := range bs {
		m[b.Capability] = b.ProviderID
	}
	return m, nil
}

// handleCapabilitiesList serves GET /v1/capabilities: every capability with
// its schemas, providers and the caller's binding, by id.
func (h *Handler) handleCapabilitiesList(c *request) error {
	bound, err := h.boundMap(c)
	if err != nil {
		return err
	}
	caps := h.ws.Capabilities().Catalog()
	page, next, err := pageSorted(c, caps, func(x capability.Capability) string { return x.ID })
	if err != nil {
		return err
	}
	out := make([]CapabilityOut, len(page))
	for i, x := range page {
		out[i] = h.capabilityOut(x, bound)
	}
	return c.List(out, next)
}

// handleCapabilityGet serves GET /v1/capabilities/{id}.
func (h *Handler) handleCapabilityGet(c *request) error {
	capab, ok := h.ws.Capabilities().Capability(c.Param("id"))
	if !ok {
		return errs.NotFoundf("capability not found")
	}
	bound, err := h.boundMap(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.capabilityOut(capab, bound))
}

// handleCapabilityBind serves PUT /v1/capabilities/{id}/binding: binds the
// capability to a provider for the caller's tenant and answers with the
// capability.
func (h *Handler) handleCapabilityBind(c *request) error {
	id := c.Param("id")
	reg := h.ws.Capabilities()
	capab, ok := reg.Capability(id)
	if !ok {
		return errs.NotFoundf("capability not found")
	}
	var in registry.BindingIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	if err := reg.Bind(c.Context(), c.Tenant(), id, in.ProviderID, c.P.Actor()); err != nil {
		return err
	}
	bound, err := h.boundMap(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.capabilityOut(capab, bound))
}

// handleCapabilityUnbind serves DELETE /v1/capabilities/{id}/binding: 204,
// or 404 when the capability is unknown or not bound.
func (h *Handler) handleCapabilityUnbind(c *request) error {
	if err := h.ws.Capabilities().Unbind(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor()); err != nil {
		return err
	}
	return c.NoContent()
}

// handleCapabilityGaps serves GET /v1/capabilities/gaps: what the tenant's
// installed processes need and no provider fills, by capability.
func (h *Handler) handleCapabilityGaps(c *request) error {
	gaps, err := h.ws.Capabilities().GapsOf(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	page, next, err := pageSorted(c, gaps, func(g registry.Gap) string { return g.Capability })
	if err != nil {
		return err
	}
	return c.List(page, next)
}

// handleIntegrations serves GET /v1/integrations?apps=Xero,Slack: how each
// named business system works with the workspace. Without ?apps= it
// answers for the systems of the workspace profile.
func (h *Handler) handleIntegrations(c *request) error {
	var names []string
	if q, ok := c.Query()["apps"]; ok {
		for _, v := range q {
			names = append(names, strings.Split(v, ",")...)
		}
		var vs []errs.Violation
		if len(names) > maxIntegrationNames {
			vs = append(vs, errs.Violation{Loc: []any{"query", "apps"}, Type: "too_long",
				Msg: "must name at most 100 systems"})
		}
		for _, n := range names {
			if len(strings.TrimSpace(n)) > maxIntegrationNameLen {
				vs = append(vs, errs.Violation{Loc: []any{"query", "apps"}, Type: "string_too_long",
					Msg: "each name must be at most 200 characters"})
				break
			}
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
	} else {
		sys, err := h.ws.Capabilities().Systems(c.Context(), c.Tenant())
		if err != nil {
			return err
		}
		names = sys
	}
	return c.List(registry.Integrations(names), "")
}

// handleConnections serves GET /v1/connections: each provider's live state.
func (h *Handler) handleConnections(c *request) error {
	conns := h.ws.Capabilities().Connections(capability.WithTenant(c.Context(), c.Tenant()))
	page, next, err := pageSorted(c, conns, func(x registry.ConnectionOut) string { return x.Provider })
	if err != nil {
		return err
	}
	return c.List(page, next)
}

// pageSorted pages an in-memory list already sorted by key (ascending):
// ?limit= and ?cursor= as for every list, the cursor being the last key of
// the previous page.
func pageSorted[T any](c *request, items []T, key func(T) string) ([]T, string, error) {
	p, err := c.Page()
	if err != nil {
		return nil, "", err
	}
	start := 0
	if p.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil || len(after) == 0 {
			return nil, "", store.ErrBadCursor
		}
		for start < len(items) && key(items[start]) <= string(after) {
			start++
		}
	}
	end := min(start+p.Limit, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(key(items[end-1])))
	}
	return items[start:end], next, nil
}
