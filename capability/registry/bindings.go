package registry

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Binding is a tenant's choice of provider for one capability.
type Binding struct {
	// Capability is the capability id.
	Capability string `json:"capability"`
	// ProviderID is the provider calls go to.
	ProviderID string `json:"provider_id"`
	// BoundAt is when the binding was made.
	BoundAt time.Time `json:"bound_at"`
	// BoundBy is the actor who made it.
	BoundBy string `json:"bound_by"`
}

// BindingIn is the body of PUT /v1/capabilities/{id}/binding.
type BindingIn struct {
	ProviderID string `json:"provider_id" jsonschema:"required,minLength=1,maxLength=80"`
}

// bindings is where tenants' bindings are stored: one record per bound
// capability, keyed by the capability id.
var bindingRecords = &store.Collection[Binding]{
	Name:     "capbind",
	ID:       func(b *Binding) string { return b.Capability },
	NotFound: "binding not found",
}

// auditEntity is the entity name of binding changes in the audit log.
const auditEntity = "capability_binding"

// tenantBindings caches one tenant's bindings. m is nil until loaded; it is
// replaced (never modified) under mu, so readers need no lock.
type tenantBindings struct {
	mu sync.Mutex
	m  atomic.Pointer[map[string]Binding]
}

func (r *Registry) tenant(tenant string) *tenantBindings {
	if v, ok := r.tenants.Load(tenant); ok {
		return v.(*tenantBindings)
	}
	v, _ := r.tenants.LoadOrStore(tenant, &tenantBindings{})
	return v.(*tenantBindings)
}

// bindings returns tenant's bindings, reading them from the store the first
// time only.
func (r *Registry) bindings(ctx context.Context, tenant string) (map[string]Binding, error) {
	tb := r.tenant(tenant)
	if m := tb.m.Load(); m != nil {
		return *m, nil
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return r.loadLocked(ctx, tenant, tb)
}

// loadLocked returns the cached bindings, loading them if needed; tb.mu is
// held.
func (r *Registry) loadLocked(ctx context.Context, tenant string, tb *tenantBindings) (map[string]Binding, error) {
	if m := tb.m.Load(); m != nil {
		return *m, nil
	}
	m, err := r.readBindings(ctx, tenant)
	if err != nil {
		return nil, err
	}
	tb.m.Store(&m)
	return m, nil
}

// readBindings reads tenant's bindings from the store.
func (r *Registry) readBindings(ctx context.Context, tenant string) (map[string]Binding, error) {
	m := map[string]Binding{}
	err := r.cfg.Store.View(ctx, func(rd store.Reader) error {
		clear(m)
		page := store.Page{Limit: 200, Forward: true}
		for {
			list, next, err := bindingRecords.List(rd, tenant, page)
			if err != nil {
				return err
			}
			for _, b := range list {
				m[b.Capability] = *b
			}
			if next == "" {
				return nil
			}
			page.Cursor = next
		}
	})
	if err != nil {
		return nil, errors.Wrapf(err, "load the capability bindings of tenant %s", tenant)
	}
	return m, nil
}

// peekBindings returns tenant's bindings from the cache, or reads them from
// the store without caching them: the tenant named by a plugin's event may
// be any string, and each one cached would be kept for good.
func (r *Registry) peekBindings(ctx context.Context, tenant string) (map[string]Binding, error) {
	if v, ok := r.tenants.Load(tenant); ok {
		if m := v.(*tenantBindings).m.Load(); m != nil {
			return *m, nil
		}
	}
	return r.readBindings(ctx, tenant)
}

// Bindings returns tenant's bindings, sorted by capability.
func (r *Registry) Bindings(ctx context.Context, tenant string) ([]Binding, error) {
	m, err := r.bindings(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Binding, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out, nil
}

// Bound returns the provider tenant has bound capabilityID to, if any.
func (r *Registry) Bound(tenant, capabilityID string) (string, bool) {
	m, err := r.bindings(context.Background(), tenant)
	if err != nil {
		r.log.Error("read bindings", "tenant", tenant, "error", err)
		return "", false
	}
	b, ok := m[capabilityID]
	return b.ProviderID, ok
}

// Bind makes tenant's calls of capabilityID go to providerID, and writes the
// change (before and after) to the audit log as actor. An unknown
// capability is bas.ErrNotFound; an unknown provider, one that does not fill
// the capability, or a connector that is coming is bas.ErrInvalid at
// ["body", "provider_id"]. Binding the provider already bound changes
// nothing.
func (r *Registry) Bind(ctx context.Context, tenant, capabilityID, providerID, actor string) error {
	s := r.snap.Load()
	if _, ok := s.caps[capabilityID]; !ok {
		return errs.NotFoundf("capability %s not found", capabilityID)
	}
	loc := []any{"body", "provider_id"}
	pe, ok := s.providers[providerID]
	switch {
	case !ok:
		return errs.Invalidf(loc, "value_error", "unknown provider %q", providerID)
	case !pe.fills(capabilityID):
		return errs.Invalidf(loc, "value_error", "provider %s does not provide %s; it provides %s",
			providerID, capabilityID, listOrNone(pe.info.Capabilities))
	case pe.info.Coming:
		return errs.Invalidf(loc, "value_error", "connector %s is coming and cannot be bound yet", pe.info.Name)
	}
	tb := r.tenant(tenant)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	cur, err := r.loadLocked(ctx, tenant, tb)
	if err != nil {
		return err
	}
	if b, ok := cur[capabilityID]; ok && b.ProviderID == providerID {
		return nil
	}
	now := r.cfg.Clock.Now().UTC()
	rec := Binding{Capability: capabilityID, ProviderID: providerID, BoundAt: now, BoundBy: actor}
	err = r.cfg.Store.Update(ctx, func(tx store.Txn) error {
		var before any
		prev, err := bindingRecords.Get(tx, tenant, capabilityID)
		switch {
		case err == nil:
			before = prev
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if err := bindingRecords.Put(tx, tenant, &rec); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &r.ids, audit.Entry{
			At: now, Actor: actor, Action: "capability.bind", Entity: auditEntity, EntityID: capabilityID,
			Before: audit.Marshal(before), After: audit.Marshal(rec),
		})
	})
	if err != nil {
		return errors.Wrapf(err, "bind %s to %s", capabilityID, providerID)
	}
	next := maps.Clone(cur)
	next[capabilityID] = rec
	tb.m.Store(&next)
	r.changes.Add(1)
	r.log.Info("capability bound", "tenant", tenant, "capability", capabilityID, "provider", providerID, "actor", actor)
	return nil
}

// Unbind removes tenant's binding of capabilityID (calls go to the default
// provider again, if there is one) and audits it as actor. An unknown
// capability, or one that is not bound, is bas.ErrNotFound.
func (r *Registry) Unbind(ctx context.Context, tenant, capabilityID, actor string) error {
	if _, ok := r.snap.Load().caps[capabilityID]; !ok {
		return errs.NotFoundf("capability %s not found", capabilityID)
	}
	tb := r.tenant(tenant)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	cur, err := r.loadLocked(ctx, tenant, tb)
	if err != nil {
		return err
	}
	if _, ok := cur[capabilityID]; !ok {
		return errs.NotFoundf("%s is not bound", capabilityID)
	}
	now := r.cfg.Clock.Now().UTC()
	err = r.cfg.Store.Update(ctx, func(tx store.Txn) error {
		prev, err := bindingRecords.Get(tx, tenant, capabilityID)
		if err != nil {
			return err
		}
		if err := bindingRecords.Delete(tx, tenant, capabilityID); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &r.ids, audit.Entry{
			At: now, Actor: actor, Action: "capability.unbind", Entity: auditEntity, EntityID: capabilityID,
			Before: audit.Marshal(prev), After: audit.Marshal(nil),
		})
	})
	if err != nil {
		return errors.Wrapf(err, "unbind %s", capabilityID)
	}
	next := maps.Clone(cur)
	delete(next, capabilityID)
	tb.m.Store(&next)
	r.changes.Add(1)
	r.log.Info("capability unbound", "tenant", tenant, "capability", capabilityID, "actor", actor)
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// Uses reports whether tenant uses the provider providerID, so that events
// the provider emits may land in it (plugins.HostOptions.Uses): the tenant
// bound one of the capabilities the provider fills to it; or, for a
// capability the tenant bound to no provider and this one is the default of
// (its only provider), the tenant's enabled processes need that capability
// (SetNeededBy). A lone provider is every tenant's default, so the default
// alone does not count: a tenant that calls it only outside its processes
// binds one of its capabilities to it to receive its events. An unknown
// provider is used by no tenant. Uses caches nothing of a tenant it reads
// (the tenant is the plugin's word), so a plugin emitting into ever new
// tenants grows no memory.
func (r *Registry) Uses(ctx context.Context, tenant, providerID string) (bool, error) {
	s := r.snap.Load()
	pe, ok := s.providers[providerID]
	if !ok {
		return false, nil
	}
	bound, err := r.peekBindings(ctx, tenant)
	if err != nil {
		return false, err
	}
	var defaults []string // capabilities the provider fills for tenant by default
	for _, c := range pe.info.Capabilities {
		if b, ok := bound[c]; ok {
			if b.ProviderID == providerID {
				return true, nil
			}
			continue
		}
		if s.defaults[c] == pe {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return false, nil
	}
	needed, err := r.Needed(ctx, tenant)
	if err != nil {
		return false, err
	}
	for _, c := range defaults {
		if _, found := slices.BinarySearch(needed, c); found {
			return true, nil
		}
	}
	return false, nil
}
