// Package registry is a workspace's capabilities and providers: the standard
// catalog with its JSON Schemas (reflected from the argument and result
// types of package capability), the registered providers, each tenant's
// bindings of a capability to one provider (when exactly one provider fills
// a capability it is the default), the calls that go through them with their
// arguments and results validated, the gaps a tenant's processes leave, the
// connections' health, the declared connectors and the integrations catalog.
package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/bounded"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Config configures New.
type Config struct {
	// Store keeps the per-tenant bindings (and their audit entries).
	// Required.
	Store store.Store
	// Clock stamps bindings and audit entries. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives the registry's messages. Defaults to discarding them.
	Logger *slog.Logger
	// CallTimeout bounds every provider call; a caller's earlier deadline
	// wins. Defaults to 30s.
	CallTimeout time.Duration
	// HealthTimeout bounds each provider's health check in Connections.
	// Defaults to 5s.
	HealthTimeout time.Duration
	// Observer, when set, sees every provider call (metrics and traces).
	// Defaults to none, at no cost.
	Observer capability.CallObserver
	// CircuitFailures is how many consecutive failures that are a
	// provider's fault (timeouts, unavailable, malformed output; not a
	// caller's errors) open the circuit of that provider and capability:
	// its calls then fail at once (errs.Unavailable, ErrCircuitOpen)
	// until the cool-down ends and one trial call is let through.
	// Defaults to 5.
	CircuitFailures int
	// CircuitCoolDown is how long an open circuit refuses calls before it
	// lets a trial call through. Defaults to 30s.
	CircuitCoolDown time.Duration
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = 5 * time.Second
	}
	if c.CircuitFailures <= 0 {
		c.CircuitFailures = 5
	}
	if c.CircuitCoolDown <= 0 {
		c.CircuitCoolDown = 30 * time.Second
	}
	return c
}

// NeededFunc returns the capabilities the processes installed in a tenant
// need (see Registry.SetNeededBy).
type NeededFunc func(ctx context.Context, tenant string) ([]string, error)

// SystemsFunc returns the business systems a tenant says it uses (the
// workspace profile's systems: "Xero", "Slack" ...); see
// Registry.SetSystems.
type SystemsFunc func(ctx context.Context, tenant string) ([]string, error)

// Registry is a workspace's capabilities and providers: the catalog, the
// registered providers, each tenant's bindings, and the calls that go
// through them. It is safe for concurrent use.
//
// Call is on the run engine's hot path: the catalog and providers are an
// immutable snapshot swapped atomically on Register and Unregister, and
// each tenant's bindings are read from the store once and then served from
// memory, kept current by Bind and Unbind.
type Registry struct {
	cfg Config
	log *slog.Logger

	mu   sync.Mutex // serializes Register, Unregister and Refresh
	snap atomic.Pointer[snapshot]
	// changes counts the changes of snap and of the tenants' bindings,
	// each counted once it is in place (see Route).
	changes atomic.Uint64

	tenants sync.Map // tenant -> *tenantBindings

	neededBy atomic.Pointer[NeededFunc]
	systems  atomic.Pointer[SystemsFunc]

	ids ids.Generator // makes the ids of the records and audit entries it writes
}

// snapshot is the registry's providers and catalog at one moment. It is
// never modified once published.
type snapshot struct {
	caps      map[string]*capEntry
	capIDs    []string // sorted
	providers map[string]*providerEntry
	provIDs   []string                    // sorted
	byCap     map[string][]*providerEntry // capability -> providers filling it, by id
	defaults  map[string]*providerEntry   // capability -> its only available provider
}

// capEntry is one capability with its compiled schemas.
type capEntry struct {
	cap       capability.Capability
	external  bool
	definedBy string // the provider that described it; "" for standard ones

	once   sync.Once
	args   *schema.Validator
	result *schema.Validator
	err    error

	// validArgs holds argument documents that passed the argument schema
	// (the fixed arguments of a process step, say), so that the same bytes
	// are not validated again; bounded by maxValidArgs and maxValidArgBytes.
	// It lives as long as the entry, so a changed schema starts afresh.
	validMu   sync.Mutex
	validArgs map[string]struct{}
}

const (
	maxValidArgs     = 1024
	maxValidArgBytes = 4096
)

// argsKnownValid reports whether args passed the argument schema before.
func (e *capEntry) argsKnownValid(args []byte) bool {
	if len(args) > maxValidArgBytes {
		return false
	}
	e.validMu.Lock()
	_, ok := e.validArgs[string(args)]
	e.validMu.Unlock()
	return ok
}

// argsValid remembers that args passed the argument schema.
func (e *capEntry) argsValid(args []byte) {
	if len(args) > maxValidArgBytes {
		return
	}
	e.validMu.Lock()
	defer e.validMu.Unlock()
	if e.validArgs == nil {
		e.validArgs = map[string]struct{}{}
	}
	bounded.MakeRoom(e.validArgs, maxValidArgs)
	e.validArgs[string(args)] = struct{}{}
}

func (e *capEntry) validators() (args, result *schema.Validator, err error) {
	e.once.Do(func() {
		e.args, e.err = schema.Compile(e.cap.Args)
		if e.err != nil {
			e.err = errors.Wrapf(e.err, "compile the argument schema of %s", e.cap.ID)
			return
		}
		e.result, e.err = schema.Compile(e.cap.Result)
		if e.err != nil {
			e.err = errors.Wrapf(e.err, "compile the result schema of %s", e.cap.ID)
		}
	})
	return e.args, e.result, e.err
}

// providerEntry is a registered provider with the Info it gave.
type providerEntry struct {
	p        capability.Provider
	info     capability.Info
	circuits *circuits // shared by the entries of one registration
}

func (pe *providerEntry) fills(capID string) bool {
	return slices.Contains(pe.info.Capabilities, capID)
}

// New returns a registry holding the standard catalog and no
// providers.
func New(cfg Config) *Registry {
	cfg = cfg.withDefaults()
	r := &Registry{cfg: cfg, log: cfg.Logger.With("component", "capabilities")}
	s := &snapshot{
		caps:      map[string]*capEntry{},
		providers: map[string]*providerEntry{},
		byCap:     map[string][]*providerEntry{},
		defaults:  map[string]*providerEntry{},
	}
	for _, e := range standard() {
		s.caps[e.cap.ID] = &capEntry{cap: e.cap, external: e.external}
	}
	s.index()
	r.snap.Store(s)
	return r
}

// index recomputes the sorted id lists, byCap and defaults from caps and
// providers.
func (s *snapshot) index() {
	s.capIDs = slices.Sorted(maps.Keys(s.caps))
	s.provIDs = slices.Sorted(maps.Keys(s.providers))
	s.byCap = map[string][]*providerEntry{}
	s.defaults = map[string]*providerEntry{}
	for _, id := range s.provIDs {
		pe := s.providers[id]
		for _, c := range pe.info.Capabilities {
			s.byCap[c] = append(s.byCap[c], pe)
		}
	}
	for c, pes := range s.byCap {
		var only *providerEntry
		n := 0
		for _, pe := range pes {
			if !pe.info.Coming {
				only = pe
				n++
			}
		}
		if n == 1 {
			s.defaults[c] = only
		}
	}
}

func (s *snapshot) clone() *snapshot {
	return &snapshot{caps: maps.Clone(s.caps), providers: maps.Clone(s.providers)}
}

// Register adds a provider. Its Info is read once here (see Refresh). The
// id must be new and at most 80 characters; every capability it lists must
// be in the catalog or described by the provider itself (Describer).
func (r *Registry) Register(p capability.Provider) error {
	if p == nil {
		return errors.New("capability: register a nil provider")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	info := p.Info()
	if _, dup := old.providers[info.ID]; dup {
		return errors.Newf("capability: a provider with id %q is already registered", info.ID)
	}
	next, err := r.with(old, p, info)
	if err != nil {
		return err
	}
	r.snap.Store(next)
	r.changes.Add(1)
	r.log.Debug("provider registered", "provider", info.ID, "kind", string(info.Kind),
		"capabilities", len(info.Capabilities), "coming", info.Coming)
	return nil
}

// with returns old plus p (replacing a provider with the same id), or an
// error when p's description is not acceptable.
func (r *Registry) with(old *snapshot, p capability.Provider, info capability.Info) (*snapshot, error) {
	if err := checkInfo(info); err != nil {
		return nil, err
	}
	info.Capabilities = slices.Clone(info.Capabilities)
	next := old.clone()
	if prev, ok := old.providers[info.ID]; ok {
		dropDefinedBy(next, prev.info.ID)
	}
	if d, ok := p.(capability.Describer); ok {
		for _, c := range d.Capabilities() {
			if _, known := next.caps[c.ID]; known || !slices.Contains(info.Capabilities, c.ID) {
				continue
			}
			if err := checkDescribed(info.ID, c); err != nil {
				return nil, err
			}
			next.caps[c.ID] = &capEntry{cap: cloneCapability(c), external: true, definedBy: info.ID}
		}
	}
	for _, c := range info.Capabilities {
		if _, ok := next.caps[c]; !ok {
			return nil, errors.Newf("capability: provider %s lists %q, which is neither in the catalog nor described by the provider", info.ID, c)
		}
	}
	cs := &circuits{} // a Refresh keeps the provider's circuits
	if prev, ok := old.providers[info.ID]; ok {
		cs = prev.circuits
	}
	next.providers[info.ID] = &providerEntry{p: p, info: info, circuits: cs}
	next.index()
	return next, nil
}

func checkInfo(info capability.Info) error {
	switch {
	case strings.TrimSpace(info.ID) == "" || info.ID != strings.TrimSpace(info.ID):
		return errors.Newf("capability: provider id %q must be non-empty without surrounding spaces", info.ID)
	case len(info.ID) > capability.MaxProviderIDLen:
		return errors.Newf("capability: provider id %q is longer than %d characters", info.ID, capability.MaxProviderIDLen)
	}
	switch info.Kind {
	case capability.KindBuiltin, capability.KindConnector, capability.KindPlugin:
	default:
		return errors.Newf("capability: provider %s has kind %q; want builtin, connector or plugin", info.ID, info.Kind)
	}
	return nil
}

func checkDescribed(provider string, c capability.Capability) error {
	if strings.TrimSpace(c.ID) == "" {
		return errors.Newf("capability: provider %s describes a capability without an id", provider)
	}
	for _, sc := range []struct {
		what string
		raw  json.RawMessage
	}{{"argument", c.Args}, {"result", c.Result}} {
		if len(sc.raw) == 0 {
			return errors.Newf("capability: provider %s describes %s without its %s schema", provider, c.ID, sc.what)
		}
		if _, err := schema.Compile(sc.raw); err != nil {
			return errors.Wrapf(err, "capability: provider %s describes %s with a bad %s schema", provider, c.ID, sc.what)
		}
	}
	return nil
}

// dropDefinedBy removes the capabilities provider described.
func dropDefinedBy(s *snapshot, provider string) {
	for id, e := range s.caps {
		if e.definedBy == provider {
			delete(s.caps, id)
		}
	}
}

// Unregister removes the provider id and the capabilities it described. A
// tenant binding that names it stays stored: calls fail until the provider
// comes back or the binding changes. It reports whether id was registered.
func (r *Registry) Unregister(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	if _, ok := old.providers[id]; !ok {
		return false
	}
	next := old.clone()
	delete(next.providers, id)
	dropDefinedBy(next, id)
	next.index()
	r.snap.Store(next)
	r.changes.Add(1)
	r.log.Info("provider unregistered", "provider", id)
	return true
}

// Refresh reads the Info of provider id again (a plugin that restarted may
// describe itself differently) and re-indexes it. The id itself must not
// change.
func (r *Registry) Refresh(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	pe, ok := old.providers[id]
	if !ok {
		return errs.NotFoundf("provider %s not found", id)
	}
	info := pe.p.Info()
	if info.ID != id {
		return errors.Newf("capability: provider %s now calls itself %s; unregister and register it instead", id, info.ID)
	}
	next, err := r.with(old, pe.p, info)
	if err != nil {
		return err
	}
	r.snap.Store(next)
	r.changes.Add(1)
	return nil
}

// Catalog returns every capability the registry knows (the standard catalog
// and those providers described), sorted by id.
func (r *Registry) Catalog() []capability.Capability {
	s := r.snap.Load()
	out := make([]capability.Capability, len(s.capIDs))
	for i, id := range s.capIDs {
		out[i] = cloneCapability(s.caps[id].cap)
	}
	return out
}

// Capability returns the capability id.
func (r *Registry) Capability(id string) (capability.Capability, bool) {
	e, ok := r.snap.Load().caps[id]
	if !ok {
		return capability.Capability{}, false
	}
	return cloneCapability(e.cap), true
}

// Providers returns the registered providers, sorted by id.
func (r *Registry) Providers() []capability.Provider {
	s := r.snap.Load()
	out := make([]capability.Provider, len(s.provIDs))
	for i, id := range s.provIDs {
		out[i] = s.providers[id].p
	}
	return out
}

// Provider returns the provider id.
func (r *Registry) Provider(id string) (capability.Provider, bool) {
	pe, ok := r.snap.Load().providers[id]
	if !ok {
		return nil, false
	}
	return pe.p, true
}

// Infos returns the Info of every registered provider as it was read at
// registration (or the last Refresh), sorted by id.
func (r *Registry) Infos() []capability.Info {
	s := r.snap.Load()
	out := make([]capability.Info, len(s.provIDs))
	for i, id := range s.provIDs {
		out[i] = cloneInfo(s.providers[id].info)
	}
	return out
}

// ProvidersFor returns the Info of every provider that fills capability id,
// sorted by provider id (declared connectors that are coming included).
func (r *Registry) ProvidersFor(id string) []capability.Info {
	pes := r.snap.Load().byCap[id]
	out := make([]capability.Info, len(pes))
	for i, pe := range pes {
		out[i] = cloneInfo(pe.info)
	}
	return out
}

func cloneInfo(i capability.Info) capability.Info {
	i.Capabilities = slices.Clone(i.Capabilities)
	if i.App != nil {
		a := normalizeApp(*i.App)
		i.App = &a
	}
	return i
}

// Apps returns the built-in apps (capability.BuiltinApps) followed by the apps the
// registered providers describe, sorted by id. A provider app whose id is
// a built-in app's is left out (and logged).
func (r *Registry) Apps() []capability.App {
	out := capability.BuiltinApps()
	seen := map[string]bool{}
	for _, a := range out {
		seen[a.ID] = true
	}
	s := r.snap.Load()
	var extra []capability.App
	for _, id := range s.provIDs {
		info := s.providers[id].info
		if info.App == nil {
			continue
		}
		if seen[info.App.ID] {
			r.log.Warn("provider describes an app whose id is taken; it is not listed",
				"provider", id, "app", info.App.ID)
			continue
		}
		seen[info.App.ID] = true
		extra = append(extra, normalizeApp(*info.App))
	}
	slices.SortFunc(extra, func(a, b capability.App) int { return strings.Compare(a.ID, b.ID) })
	return append(out, extra...)
}

// Resolve returns the provider a call of capabilityID in tenant goes to:
// the tenant's binding, else the default when exactly one registered
// provider (not counting connectors that are coming) fills it. Otherwise it
// is an errs.Unavailable error that says what to do; an unknown capability
// is errs.Invalid.
func (r *Registry) Resolve(ctx context.Context, tenant, capabilityID string) (capability.Provider, error) {
	s := r.snap.Load()
	if _, ok := s.caps[capabilityID]; !ok {
		return nil, unknownCapability(capabilityID)
	}
	pe, err := r.resolve(ctx, s, tenant, capabilityID)
	if err != nil {
		return nil, err
	}
	return pe.p, nil
}

func unknownCapability(id string) error {
	return errs.Invalidf([]any{"capability"}, "value_error", "unknown capability %q", id)
}

// Route is the provider a tenant's calls of a capability go to, resolved
// once (Registry.Route) for a caller that asks several things of one call:
// whether it joins the caller's commit, whether it returns at once, and
// the call itself (Registry.CallRoute). It holds while neither the
// registered providers nor any tenant's bindings change (Current); the
// zero Route, and one that resolved no provider, is not current.
type Route struct {
	changes uint64 // Registry.changes when it was resolved
	pe      *providerEntry
}

// Route resolves the provider tenant's calls of capabilityID go to, as
// Resolve does. When none (an error), the Route says neither JoinsWrites
// nor ReturnsAtOnce, and CallRoute resolves again (and fails as Call).
func (r *Registry) Route(ctx context.Context, tenant, capabilityID string) Route {
	changes := r.changes.Load()
	pe, err := r.resolve(ctx, r.snap.Load(), tenant, capabilityID)
	if err != nil {
		return Route{}
	}
	return Route{changes: changes, pe: pe}
}

// Current reports whether rt is still where its calls go: it resolved a
// provider, and neither the registered providers nor any tenant's
// bindings changed since. A nil rt is not current.
func (r *Registry) Current(rt *Route) bool {
	return rt != nil && rt.pe != nil && rt.changes == r.changes.Load()
}

// JoinsWrites reports whether rt's provider is a callwrites.Joiner: every
// action of it commits with the caller's commit of the call's result. The
// run engine asks it only when the registry itself is its Caller, not a
// Caller embedding it.
func (rt *Route) JoinsWrites() bool {
	if rt.pe == nil {
		return false
	}
	_, ok := rt.pe.p.(callwrites.Joiner)
	return ok
}

// ReturnsAtOnce reports whether rt's provider is a built-in one that is a
// capability.ReturnsAtOnce: its calls never block, so a caller may make
// them on its own goroutine.
func (rt *Route) ReturnsAtOnce() bool {
	if rt.pe == nil || rt.pe.info.Kind != capability.KindBuiltin {
		return false
	}
	_, ok := rt.pe.p.(capability.ReturnsAtOnce)
	return ok
}

func (r *Registry) resolve(ctx context.Context, s *snapshot, tenant, capabilityID string) (*providerEntry, error) {
	bound, err := r.bindings(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if b, ok := bound[capabilityID]; ok {
		pe, ok := s.providers[b.ProviderID]
		switch {
		case !ok:
			return nil, errs.Unavailablef("%s is bound to provider %s, which is not registered", capabilityID, b.ProviderID)
		case !pe.fills(capabilityID):
			return nil, errs.Unavailablef("%s is bound to provider %s, which no longer provides it", capabilityID, b.ProviderID)
		}
		return pe, nil
	}
	if pe, ok := s.defaults[capabilityID]; ok {
		return pe, nil
	}
	var avail, coming []string
	for _, pe := range s.byCap[capabilityID] {
		if pe.info.Coming {
			coming = append(coming, pe.info.Name)
		} else {
			avail = append(avail, pe.info.ID)
		}
	}
	if len(avail) > 1 {
		return nil, errs.Unavailablef("several providers fill %s (%s) and none is bound: bind one with PUT /v1/capabilities/%s/binding",
			capabilityID, strings.Join(avail, ", "), capabilityID)
	}
	if len(coming) > 0 {
		return nil, errs.Unavailablef("no provider is bound to %s (coming: %s)", capabilityID, strings.Join(coming, ", "))
	}
	return nil, errs.Unavailablef("no provider is bound to %s", capabilityID)
}

// Call validates call.Args against the capability's argument schema (every
// violation, located under "args", as an errs.Invalid error) before any
// provider sees them, resolves the provider, calls it with a deadline
// (CallTimeout unless ctx has an earlier one), and checks its result against
// the result schema. Each provider and capability has a circuit breaker
// (Config.CircuitFailures, Config.CircuitCoolDown): while it is open the
// call fails at once with an errs.Unavailable error marked ErrCircuitOpen
// that says when it lets a trial call through. An unknown capability is errs.Invalid; a result that
// does not match is ErrMalformedOutput, naming the provider; a call that
// runs out of time is ErrTimeout (and errs.Unavailable). The provider's own
// errors keep their kinds.
func (r *Registry) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	return r.CallRoute(ctx, nil, call)
}

// CallRoute is Call made to rt's provider, resolved before for the same
// tenant and capability, while rt is Current; else (or when rt is nil) the
// provider is resolved again, as Call does.
func (r *Registry) CallRoute(ctx context.Context, rt *Route, call capability.Call) (json.RawMessage, error) {
	s := r.snap.Load()
	ce, ok := s.caps[call.Capability]
	if !ok {
		return nil, unknownCapability(call.Capability)
	}
	argsV, resultV, err := ce.validators()
	if err != nil {
		return nil, err
	}
	if len(call.Args) == 0 {
		call.Args = json.RawMessage("{}")
	}
	if !ce.argsKnownValid(call.Args) {
		if vs := argsV.ValidateJSON(call.Args, "args"); len(vs) > 0 {
			return nil, errs.Validation(vs...)
		}
		ce.argsValid(call.Args)
	}
	var pe *providerEntry
	if r.Current(rt) {
		pe = rt.pe
	} else {
		pe, err = r.resolve(ctx, s, call.Tenant, call.Capability)
	}
	if err != nil {
		return nil, err
	}
	if w := callwrites.From(ctx); w != nil && w.MustJoin {
		if _, ok := pe.p.(callwrites.Joiner); !ok {
			return nil, errs.Unavailablef("%s is now bound to provider %s, which acts outside the run's commit; the call is made again later",
				call.Capability, pe.info.ID)
		}
	}
	c := pe.circuits.get(call.Capability)
	trial, err := r.admit(c, pe.info.ID, call.Capability)
	if err != nil {
		return nil, err
	}
	out, err := r.invoke(ctx, pe, call)
	if err == nil {
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		if _, checked := pe.p.(ResultsMatchCatalog); !checked || pe.info.Kind != capability.KindBuiltin {
			if vs := resultV.ValidateJSON(out, "result"); len(vs) > 0 {
				err = malformed(pe.info.ID, call.Capability, vs)
			}
		}
	}
	r.record(ctx, c, trial, err, pe.info.ID, call.Capability)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ResultsMatchCatalog is implemented by a provider whose results match the
// catalog's result schemas by construction (a fixed shape its tests check
// against the schema): Call does not check them again on every call. Only
// a built-in provider (capability.KindBuiltin) is taken at its word; the
// results of connectors and plugins are always checked.
type ResultsMatchCatalog interface {
	ResultsMatchCatalog()
}

func malformed(provider, capID string, vs []errs.Violation) error {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return errors.Mark(
		errors.Newf("provider %s returned malformed output for %s: %s", provider, capID, strings.Join(parts, "; ")),
		capability.ErrMalformedOutput)
}

// invoke calls the provider with the deadline and turns a panic into an
// error. A caller whose own deadline comes first (the run engine gives each
// call one) needs no second timer.
func (r *Registry) invoke(ctx context.Context, pe *providerEntry, call capability.Call) (out json.RawMessage, err error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	dl, ok := ctx.Deadline()
	budget := time.Until(dl) // the caller's, when it is the sooner
	if !ok || budget > r.cfg.CallTimeout {
		cctx, cancel = context.WithTimeout(ctx, r.cfg.CallTimeout)
	}
	defer cancel()
	if o := r.cfg.Observer; o != nil {
		var done func(error)
		cctx, done = o.ProviderCall(cctx, pe.info.ID, call)
		defer func() { done(err) }()
	}
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("provider panicked", "provider", pe.info.ID, "capability", call.Capability, "panic", fmt.Sprint(v))
			out, err = nil, errors.Newf("provider %s panicked during %s: %v", pe.info.ID, call.Capability, v)
		}
	}()
	out, err = pe.p.Call(cctx, call)
	if err == nil {
		return out, nil
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		var terr error
		switch {
		case ctx.Err() != nil && budget.Round(time.Millisecond) <= 0:
			// The caller's deadline was (nearly) past when the call began.
			terr = errs.Unavailablef("provider %s did not answer %s before the caller's deadline", pe.info.ID, call.Capability)
		case ctx.Err() != nil:
			terr = errs.Unavailablef("provider %s did not answer %s within %s, the caller's deadline", pe.info.ID, call.Capability,
				budget.Round(time.Millisecond))
		default:
			terr = errs.Unavailablef("provider %s did not answer %s within %s", pe.info.ID, call.Capability, r.cfg.CallTimeout)
		}
		return nil, errors.Mark(errors.Mark(terr, capability.ErrTimeout), context.DeadlineExceeded)
	}
	return nil, errors.Wrapf(err, "provider %s: %s", pe.info.ID, call.Capability)
}

// normalizeApp returns a copy of a with nil lists made empty, so it encodes
// as api.md's App (lists default to empty, never null).
func normalizeApp(a capability.App) capability.App {
	a.Events.Emits = nonNil(slices.Clone(a.Events.Emits))
	a.Events.Consumes = nonNil(slices.Clone(a.Events.Consumes))
	a.Capabilities = nonNil(slices.Clone(a.Capabilities))
	return a
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
