package registry

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/cockroachdb/errors"
)

// What would fill a gap (Gap.FilledBy), besides "connector:<name>".
const (
	// FilledByPlugin: a system outside the workspace fills the capability,
	// and no connector for one the tenant uses is known: a vendor plugin
	// (plugins/sdk) or a webhook connector to the tenant's own app fills it.
	FilledByPlugin = "plugin"
	// FilledByManual: nothing automatic fills it; a person does the step
	// (a human task).
	FilledByManual = "manual"
)

// Gap is a capability that the tenant's installed processes need and no
// provider fills.
type Gap struct {
	// Capability is the capability id.
	Capability string `json:"capability"`
	// FilledBy says what would fill it: "connector:<name>" (a connector for
	// a system the tenant uses, or the only one there is), "plugin" or
	// "manual".
	FilledBy string `json:"filled_by"`
	// Note explains the gap in a sentence.
	Note string `json:"note"`
}

// SetNeededBy sets how the registry learns what a tenant's installed
// processes need (GapsOf). The process layer sets it when the workspace is
// wired; until then no capability is needed.
func (r *Registry) SetNeededBy(fn NeededFunc) {
	if fn == nil {
		r.neededBy.Store(nil)
		return
	}
	r.neededBy.Store(&fn)
}

// SetSystems sets how the registry learns which business systems a tenant
// uses (the workspace profile). Gaps prefer connectors for those systems
// and GET /v1/integrations lists them by default.
func (r *Registry) SetSystems(fn SystemsFunc) {
	if fn == nil {
		r.systems.Store(nil)
		return
	}
	r.systems.Store(&fn)
}

// Needed returns the capabilities tenant's installed processes need (none
// until SetNeededBy is called), sorted and without repeats.
func (r *Registry) Needed(ctx context.Context, tenant string) ([]string, error) {
	fn := r.neededBy.Load()
	if fn == nil {
		return nil, nil
	}
	ids, err := (*fn)(ctx, tenant)
	if err != nil {
		return nil, errors.Wrap(err, "list the capabilities installed processes need")
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Systems returns the business systems tenant says it uses (none until
// SetSystems is called).
func (r *Registry) Systems(ctx context.Context, tenant string) ([]string, error) {
	fn := r.systems.Load()
	if fn == nil {
		return nil, nil
	}
	names, err := (*fn)(ctx, tenant)
	if err != nil {
		return nil, errors.Wrap(err, "read the workspace's systems")
	}
	return names, nil
}

// GapsOf returns the gaps of what tenant's installed processes need.
func (r *Registry) GapsOf(ctx context.Context, tenant string) ([]Gap, error) {
	needed, err := r.Needed(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return r.Gaps(ctx, tenant, needed)
}

// Gaps returns, sorted by capability, each capability of needed that
// nothing fills for tenant: not bound and without an available default
// provider (a connector that is coming does not fill anything). A
// capability several providers fill is not a gap: it needs a binding, which
// GET /v1/capabilities shows. FilledBy prefers a connector for one of the
// tenant's systems (Systems), then the only connector that fills it, then
// "plugin" for capabilities external systems fill, else "manual".
func (r *Registry) Gaps(ctx context.Context, tenant string, needed []string) ([]Gap, error) {
	s := r.snap.Load()
	bound, err := r.bindings(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var (
		systemsOnce sync.Once
		systems     map[string]bool // integration ids the tenant uses
	)
	tenantSystems := func() map[string]bool {
		systemsOnce.Do(func() {
			systems = map[string]bool{}
			names, err := r.Systems(ctx, tenant)
			if err != nil {
				r.log.Warn("gaps without the workspace's systems", "tenant", tenant, "error", err)
				return
			}
			for _, in := range Integrations(names) {
				if in.Recognized {
					systems[in.ID] = true
				}
			}
		})
		return systems
	}
	ids := slices.Clone(needed)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []Gap
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, ok := bound[id]; ok {
			continue
		}
		ce, known := s.caps[id]
		if known {
			avail := 0
			for _, pe := range s.byCap[id] {
				if !pe.info.Coming {
					avail++
				}
			}
			if avail > 0 {
				continue
			}
		}
		out = append(out, r.gap(s, id, known && ce.external || !known, tenantSystems))
	}
	return out, nil
}

// gap says what would fill capability id.
func (r *Registry) gap(s *snapshot, id string, external bool, systems func() map[string]bool) Gap {
	// Connectors: the registered ones (coming or not) and those the
	// integrations catalog knows, by integration id.
	type cand struct{ id, name string }
	var cands []cand
	seen := map[string]bool{}
	add := func(id, name string) {
		if !seen[id] {
			seen[id] = true
			cands = append(cands, cand{id, name})
		}
	}
	for _, pe := range s.byCap[id] {
		if pe.info.Kind == capability.KindConnector {
			add(strings.TrimPrefix(pe.info.ID, connectorPrefix), pe.info.Name)
		}
	}
	for _, in := range integrationIndex().systems {
		if (in.How == HowConnector || in.How == HowComing) && slices.Contains(in.Provides, id) {
			add(in.ID, in.Name)
		}
	}
	uses := systems()
	for _, c := range cands {
		if uses[c.id] {
			return Gap{Capability: id, FilledBy: "connector:" + c.id,
				Note: "the workspace uses " + c.name + "; its connector would fill " + id}
		}
	}
	if len(cands) == 1 {
		return Gap{Capability: id, FilledBy: "connector:" + cands[0].id,
			Note: "the " + cands[0].name + " connector would fill " + id}
	}
	if _, known := s.caps[id]; !known {
		return Gap{Capability: id, FilledBy: FilledByPlugin,
			Note: id + " is not in the catalog: a plugin that describes it would fill it"}
	}
	if external {
		note := "a plugin (plugins/sdk) or a webhook connector to your own system would fill " + id
		if len(cands) > 1 {
			names := make([]string, len(cands))
			for i, c := range cands {
				names[i] = c.name
			}
			note += "; connectors that would: " + strings.Join(names, ", ") +
				" (name your systems in the workspace profile to pick one)"
		}
		return Gap{Capability: id, FilledBy: FilledByPlugin, Note: note}
	}
	return Gap{Capability: id, FilledBy: FilledByManual,
		Note: "no provider fills " + id + "; a person can do the step as a human task"}
}

// ConnectionOut is a provider's live state (GET /v1/connections).
type ConnectionOut struct {
	// Provider is the provider id.
	Provider string `json:"provider"`
	// Name is the provider's human title.
	Name string `json:"name"`
	// Kind is builtin, connector or plugin.
	Kind capability.Kind `json:"kind"`
	// Status is connected, starting, failed, coming or not_configured.
	Status string `json:"status"`
	// Detail says why, when the status is not connected.
	Detail *string `json:"detail"`
	// Circuits lists the provider's capabilities whose circuit breaker is
	// open or half-open, sorted by capability; left out when all are
	// closed.
	Circuits []CircuitOut `json:"circuits,omitempty"`
}

// Connections returns one entry per registered provider, sorted by id:
// providers that check their own health (HealthChecker: plugins,
// connectors) are asked, concurrently and each within HealthTimeout; the
// others are connected.
func (r *Registry) Connections(ctx context.Context) []ConnectionOut {
	s := r.snap.Load()
	out := make([]ConnectionOut, len(s.provIDs))
	var wg sync.WaitGroup
	for i, id := range s.provIDs {
		pe := s.providers[id]
		out[i] = ConnectionOut{Provider: id, Name: pe.info.Name, Kind: pe.info.Kind, Status: "connected",
			Circuits: r.openCircuits(pe.circuits)}
		hc, ok := pe.p.(capability.HealthChecker)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := r.health(ctx, id, hc)
			out[i].Status = h.Status
			if h.Detail != "" {
				d := h.Detail
				out[i].Detail = &d
			}
		}()
	}
	wg.Wait()
	return out
}

// health asks hc within HealthTimeout; a checker that does not answer in
// time (or panics) is reported failed.
func (r *Registry) health(ctx context.Context, id string, hc capability.HealthChecker) (h capability.Health) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.HealthTimeout)
	defer cancel()
	done := make(chan capability.Health, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				r.log.Error("health check panicked", "provider", id, "panic", v)
				done <- capability.Health{Status: "failed", Detail: "health check panicked"}
			}
		}()
		done <- hc.Health(ctx)
	}()
	select {
	case h = <-done:
	case <-ctx.Done():
		h = capability.Health{Status: "failed", Detail: "health check did not answer within " + r.cfg.HealthTimeout.Round(time.Millisecond).String()}
	}
	if h.Status == "" {
		h.Status = "connected"
	}
	return h
}
