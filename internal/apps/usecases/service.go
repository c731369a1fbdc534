package usecases

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Fits of an entry for a workspace.
const (
	FitIndustry      = "industry"
	FitEveryBusiness = "every_business"
	FitCommon        = "common"
	FitOther         = "other"
)

// CommonIndustries is how many industries an entry is tagged with to be
// common.
const CommonIndustries = 3

// Scopes of GET /v1/use-cases.
const (
	ScopeApplicable = "applicable"
	ScopeMine       = "mine"
	ScopeAll        = "all"
)

// EventAdoptionChanged is emitted with every adoption change.
const EventAdoptionChanged = "usecases.adoption.changed"

// EventSink receives the app's events inside the transaction of the change
// (the run engine's outbox); Kick is called after it commits.
type EventSink interface {
	Emit(tx store.Txn, tenant, name string, data any) error
	Kick()
}

// People is what the app reads and writes of the access app: the
// workspace record (its profile) and the members (their departments).
type People interface {
	Workspace(ctx context.Context, tenant string) (*access.Workspace, error)
	SetProfile(ctx context.Context, tenant, actor string, profile json.RawMessage) (*access.Workspace, error)
	Member(ctx context.Context, tenant, userID string) (*access.Member, error)
	SetDepartments(ctx context.Context, tenant, actor, userID string, departments []string) (*access.Member, error)
}

// Resolver resolves a capability to the provider a tenant's call goes to
// (the capability registry); an error means the call cannot be made now.
type Resolver interface {
	Resolve(ctx context.Context, tenant, capabilityID string) (capability.Provider, error)
}

// TemplateInfo is what readiness needs of a process template.
type TemplateInfo struct {
	// Requires are the capabilities the template's steps call.
	Requires []string
	// Available is false for a template that is coming.
	Available bool
}

// Config configures New.
type Config struct {
	// Store is where adoptions live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// People is the access app. Required.
	People People
	// Resolver resolves capabilities for readiness. Required.
	Resolver Resolver
	// Template looks a process template up by id. Required: every
	// template an entry names must exist (checked by New).
	Template func(id string) (TemplateInfo, bool)
	// Events receives usecases.adoption.changed. Defaults to none.
	Events EventSink
	// Catalog is the catalog. Defaults to the embedded one (Load).
	Catalog *Catalog
}

// Service is the use-case catalog and every workspace's register. It is
// safe for concurrent use.
type Service struct {
	st       store.Store
	clock    clock.Clock
	log      *slog.Logger
	people   People
	resolver Resolver
	template func(string) (TemplateInfo, bool)
	events   EventSink
	catalog  *Catalog
	ids      ids.Generator // makes the ids of the audit entries it writes
}

type noEvents struct{}

func (noEvents) Emit(store.Txn, string, string, any) error { return nil }
func (noEvents) Kick()                                     {}

// New returns the use-case app. It loads the catalog unless given and
// checks that every template an entry names exists.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.People == nil || cfg.Resolver == nil || cfg.Template == nil {
		return nil, errors.New("usecases: Config needs Store, People, Resolver and Template")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Events == nil {
		cfg.Events = noEvents{}
	}
	if cfg.Catalog == nil {
		c, err := Load()
		if err != nil {
			return nil, err
		}
		cfg.Catalog = c
	}
	var missing []string
	for _, e := range cfg.Catalog.list {
		if e.TemplateID != nil {
			if _, ok := cfg.Template(*e.TemplateID); !ok {
				missing = append(missing, e.ID+" names template "+*e.TemplateID)
			}
		}
	}
	if len(missing) > 0 {
		return nil, errors.Newf("use cases name templates that do not exist: %s", strings.Join(missing, "; "))
	}
	return &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, people: cfg.People, resolver: cfg.Resolver,
		template: cfg.Template, events: cfg.Events, catalog: cfg.Catalog}, nil
}

// Catalog returns the catalog.
func (s *Service) Catalog() *Catalog { return s.catalog }

// Readiness says how far a workspace is from running a use case.
type Readiness struct {
	// Runs: its template can run now with the workspace's bindings (every
	// capability it calls resolves to a provider).
	Runs bool `json:"runs"`
	// Template: a template installs it in one call.
	Template bool `json:"template"`
	// Guide: the guide says what the workspace would do.
	Guide bool `json:"guide"`
}

// EntryOut is a catalog entry as a caller sees it.
type EntryOut struct {
	Entry
	// RiskTier is the catalog's tier; Risk (in Entry) is the tier or the
	// workspace's stricter rating.
	RiskTier  string    `json:"risk_tier"`
	Fit       string    `json:"fit"`
	ForMe     bool      `json:"for_me"`
	Readiness Readiness `json:"readiness"`
	// Adoption is present when the workspace has taken the use case up.
	Adoption *Adoption `json:"adoption,omitempty"`
}

// Viewer is who asks: the tenant and the caller's departments.
type Viewer struct {
	Tenant      string
	Departments []string
}

// Viewer returns the viewer for a principal: its departments are the
// person's (an API key's are its creator's).
func (s *Service) Viewer(ctx context.Context, p *access.Principal) (Viewer, error) {
	v := Viewer{Tenant: p.Tenant}
	if p.UserID == "" {
		return v, nil
	}
	m, err := s.people.Member(ctx, p.Tenant, p.UserID)
	switch {
	case errors.Is(err, errs.NotFound):
		return v, nil
	case err != nil:
		return v, err
	}
	v.Departments = m.Departments
	return v, nil
}

// view is what shaping entries for one request needs, read once.
type view struct {
	v         Viewer
	profile   Profile
	adoptions map[string]*Adoption
	runs      map[string]bool // capability -> resolves
}

func (s *Service) newView(ctx context.Context, v Viewer) (*view, error) {
	w := &view{v: v, adoptions: map[string]*Adoption{}, runs: map[string]bool{}}
	p, err := s.Profile(ctx, v.Tenant)
	if err != nil {
		return nil, err
	}
	w.profile = *p
	err = s.st.View(ctx, func(r store.Reader) error {
		// At most one adoption per catalog entry.
		list, _, err := adoptions.List(r, v.Tenant, store.Page{Limit: len(s.catalog.list) + 1, Forward: true})
		for _, a := range list {
			w.adoptions[a.UseCaseID] = a
		}
		return err
	})
	return w, err
}

func (s *Service) out(ctx context.Context, w *view, e Entry) EntryOut {
	o := EntryOut{Entry: e.clone(), RiskTier: e.Risk, Fit: fit(e, w.profile.Industries)}
	for _, d := range e.Departments {
		if slices.Contains(w.v.Departments, d) {
			o.ForMe = true
		}
	}
	o.Readiness.Guide = e.Guide != ""
	if e.TemplateID != nil {
		if t, ok := s.template(*e.TemplateID); ok && t.Available {
			o.Readiness.Template = true
			o.Readiness.Runs = true
			for _, c := range t.Requires {
				ok, seen := w.runs[c]
				if !seen {
					_, err := s.resolver.Resolve(ctx, w.v.Tenant, c)
					ok = err == nil
					w.runs[c] = ok
				}
				if !ok {
					o.Readiness.Runs = false
				}
			}
		}
	}
	if a := w.adoptions[e.ID]; a != nil {
		o.Adoption = a
		if a.Risk != nil {
			o.Risk = *a.Risk
		}
	}
	return o
}

// fit says how an entry fits a workspace's industries.
func fit(e Entry, industries []string) string {
	for _, i := range e.Industries {
		if slices.Contains(industries, i) {
			return FitIndustry
		}
	}
	if slices.Contains(e.Industries, EveryIndustry) {
		return FitEveryBusiness
	}
	if len(e.Industries) >= CommonIndustries {
		return FitCommon
	}
	return FitOther
}

// Query narrows List.
type Query struct {
	// Scope is applicable (the default: fit industry, every_business or
	// common), mine (for the caller's departments, or Department) or all.
	Scope string
	// Department, a department:<name> tag, keeps the entries of that
	// department (in any scope; with mine it replaces the caller's).
	Department string
}

// Check reports every violation of q, located under "query".
func (s *Service) Check(q Query) error {
	var vs []errs.Violation
	if q.Scope != "" && !slices.Contains([]string{ScopeApplicable, ScopeMine, ScopeAll}, q.Scope) {
		vs = append(vs, errs.Violation{Loc: []any{"query", "scope"}, Msg: "must be one of: applicable, mine, all", Type: "enum"})
	}
	if q.Department != "" && !s.catalog.Known("department:", q.Department) {
		vs = append(vs, errs.Violation{Loc: []any{"query", "department"},
			Msg: "must be a department tag of the taxonomy (department:<name>; see GET /v1/use-cases/taxonomy)", Type: "value_error"})
	}
	return errs.Validation(vs...)
}

// List returns the catalog entries q selects for v, by id.
func (s *Service) List(ctx context.Context, v Viewer, q Query) ([]EntryOut, error) {
	if err := s.Check(q); err != nil {
		return nil, err
	}
	w, err := s.newView(ctx, v)
	if err != nil {
		return nil, err
	}
	out := []EntryOut{}
	for _, e := range s.catalog.list {
		if q.Department != "" && !slices.Contains(e.Departments, q.Department) {
			continue
		}
		o := s.out(ctx, w, e)
		switch q.Scope {
		case ScopeAll:
		case ScopeMine:
			if q.Department == "" && !o.ForMe {
				continue
			}
		default:
			if o.Fit == FitOther {
				continue
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// Get returns one entry for v; an unknown id is errs.NotFound.
func (s *Service) Get(ctx context.Context, v Viewer, id string) (*EntryOut, error) {
	e, ok := s.catalog.Get(id)
	if !ok {
		return nil, errs.NotFoundf("use case not found")
	}
	w, err := s.newView(ctx, v)
	if err != nil {
		return nil, err
	}
	o := s.out(ctx, w, e)
	return &o, nil
}

// Counts are the register's counts.
type Counts struct {
	// Active counts the piloting and live use cases.
	Active int `json:"active"`
	// Total counts every adopted use case.
	Total int `json:"total"`
	// ByStatus counts each status.
	ByStatus map[string]int `json:"by_status"`
}

// Register is the workspace's register of adopted use cases.
type Register struct {
	UseCases []EntryOut `json:"use_cases"`
	Counts   Counts     `json:"counts"`
}

// Register returns v's adopted use cases, most recently changed first,
// those with status when it is not empty, and the counts by status.
func (s *Service) Register(ctx context.Context, v Viewer, status string) (*Register, error) {
	if status != "" && !slices.Contains(Statuses, status) {
		return nil, errs.Invalidf([]any{"query", "status"}, "enum", "must be one of: %s", strings.Join(Statuses, ", "))
	}
	w, err := s.newView(ctx, v)
	if err != nil {
		return nil, err
	}
	reg := &Register{UseCases: []EntryOut{}, Counts: Counts{ByStatus: map[string]int{}}}
	err = s.st.View(ctx, func(r store.Reader) error {
		for _, st := range Statuses {
			n, err := adoptions.CountBy(r, v.Tenant, "status", st)
			if err != nil {
				return err
			}
			reg.Counts.ByStatus[st] = n
			reg.Counts.Total += n
			if Active(st) {
				reg.Counts.Active += n
			}
		}
		page := store.Page{Limit: len(s.catalog.list) + 1}
		var (
			list []*Adoption
			err  error
		)
		if status != "" {
			list, _, err = adoptions.ListBy(r, v.Tenant, "status", []any{status}, page)
		} else {
			list, _, err = adoptions.ListBy(r, v.Tenant, "updated", nil, page)
		}
		for _, a := range list {
			if e, ok := s.catalog.Get(a.UseCaseID); ok {
				reg.UseCases = append(reg.UseCases, s.out(ctx, w, e))
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// SetAdoption applies in to tenant's adoption of use case id as actor:
// the first change adopts it (status interested unless given). An owner
// who is no member, a department not in the taxonomy, or a rating looser
// than the catalog tier (rule 6) is a 422 and changes nothing. A change is
// audited with before and after and emits usecases.adoption.changed in the
// same transaction; a change that changes nothing writes nothing.
func (s *Service) SetAdoption(ctx context.Context, tenant, actor, id string, in AdoptionIn) (*Adoption, error) {
	e, ok := s.catalog.Get(id)
	if !ok {
		return nil, errs.NotFoundf("use case not found")
	}
	vs := in.Check()
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	if in.Risk != nil && !atLeast(*in.Risk, e.Risk) {
		vs = append(vs, errs.Violation{Loc: []any{"risk"}, Type: "value_error",
			Msg: "must not be looser than the catalog's risk tier " + e.Risk + " (a rating may only make it stricter)"})
	}
	for i, d := range in.Departments {
		if !s.catalog.Known("department:", d) {
			vs = append(vs, errs.Violation{Loc: []any{"departments", i}, Type: "value_error",
				Msg: "must be a department tag of the taxonomy (department:<name>)"})
		}
	}
	if in.OwnerUserID != nil {
		_, err := s.people.Member(ctx, tenant, *in.OwnerUserID)
		switch {
		case errors.Is(err, errs.NotFound):
			vs = append(vs, errs.Violation{Loc: []any{"owner_user_id"}, Type: "value_error", Msg: "is not a member of the workspace"})
		case err != nil:
			return nil, err
		}
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	var (
		out     *Adoption
		changed bool
	)
	err := s.st.Update(ctx, func(tx store.Txn) error {
		changed = false
		cur, err := adoptions.Get(tx, tenant, id)
		var before *Adoption
		switch {
		case errors.Is(err, errs.NotFound):
			cur = &Adoption{UseCaseID: id, Status: StatusInterested, Departments: []string{}, CreatedAt: now}
		case err != nil:
			return err
		default:
			b := *cur
			b.Departments = slices.Clone(cur.Departments)
			before = &b
		}
		next := *cur
		next.Departments = slices.Clone(cur.Departments)
		if in.Status != nil {
			next.Status = *in.Status
		}
		if in.OwnerUserID != nil {
			next.OwnerUserID = in.OwnerUserID
		}
		if in.ClearOwner {
			next.OwnerUserID = nil
		}
		if in.Risk != nil {
			next.Risk = in.Risk
		}
		if in.ClearRisk {
			next.Risk = nil
		}
		if in.Departments != nil {
			next.Departments = []string{}
			for _, d := range in.Departments {
				if !slices.Contains(next.Departments, d) {
					next.Departments = append(next.Departments, d)
				}
			}
		}
		if in.Notes != nil {
			next.Notes = in.Notes
		}
		if before != nil && sameAdoption(before, &next) {
			out = before
			return nil
		}
		next.UpdatedAt, next.UpdatedBy = now, actor
		if err := adoptions.Put(tx, tenant, &next); err != nil {
			return err
		}
		action := "usecase.adoption.update"
		var prevStatus any
		if before == nil {
			action = "usecase.adoption.create"
		} else {
			prevStatus = before.Status
		}
		if err := audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: action, Entity: "use_case_adoption",
			EntityID: id, Before: audit.Marshal(nilIfNone(before)), After: audit.Marshal(&next)}); err != nil {
			return err
		}
		if err := s.events.Emit(tx, tenant, EventAdoptionChanged, map[string]any{
			"use_case_id": id, "status": next.Status, "previous_status": prevStatus, "owner_user_id": next.OwnerUserID,
			"risk": next.Risk, "changed_by": actor,
		}); err != nil {
			return err
		}
		out, changed = &next, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if changed {
		s.events.Kick()
	}
	return out, nil
}

func nilIfNone(a *Adoption) any {
	if a == nil {
		return nil
	}
	return a
}

func sameAdoption(a, b *Adoption) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Profile returns the workspace's profile (empty lists until set).
func (s *Service) Profile(ctx context.Context, tenant string) (*Profile, error) {
	ws, err := s.people.Workspace(ctx, tenant)
	if err != nil {
		return nil, err
	}
	p := &Profile{}
	if len(ws.Profile) > 0 {
		_ = json.Unmarshal(ws.Profile, p)
	}
	for _, l := range []*[]string{&p.Industries, &p.Systems, &p.Regulations} {
		if *l == nil {
			*l = []string{}
		}
	}
	return p, nil
}

// SetProfile replaces the workspace's profile as actor (audited by the
// access app). Every tag is checked against the taxonomy: industries
// (industry:*), size (size:*), systems (system:*, the integrations
// catalog), regulations (regulation:*). Repeats are dropped.
func (s *Service) SetProfile(ctx context.Context, tenant, actor string, in ProfileIn) (*Profile, error) {
	var vs []errs.Violation
	p := &Profile{Industries: []string{}, Systems: []string{}, Regulations: []string{}}
	for _, f := range []struct {
		name, prefix string
		in           []string
		out          *[]string
	}{{"industries", "industry:", in.Industries, &p.Industries}, {"systems", "system:", in.Systems, &p.Systems},
		{"regulations", "regulation:", in.Regulations, &p.Regulations}} {
		for i, t := range f.in {
			if !s.catalog.Known(f.prefix, t) {
				vs = append(vs, errs.Violation{Loc: []any{f.name, i}, Type: "value_error",
					Msg: "must be a tag of the taxonomy (" + f.prefix + "<name>; see GET /v1/use-cases/taxonomy)"})
				continue
			}
			if !slices.Contains(*f.out, t) {
				*f.out = append(*f.out, t)
			}
		}
	}
	if in.Size != nil {
		if !s.catalog.Known("size:", *in.Size) {
			vs = append(vs, errs.Violation{Loc: []any{"size"}, Type: "value_error",
				Msg: "must be a size tag of the taxonomy (size:<range>)"})
		}
		p.Size = in.Size
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, errors.Wrap(err, "encode the profile")
	}
	if _, err := s.people.SetProfile(ctx, tenant, actor, raw); err != nil {
		return nil, err
	}
	return p, nil
}

// MemberDepartments is a person's departments.
type MemberDepartments struct {
	UserID      string   `json:"user_id"`
	Departments []string `json:"departments"`
}

// SetDepartments replaces the departments of member userID of p's tenant:
// anyone may set their own, others' need usecases.manage. An unknown
// member is errs.NotFound (checked first), a department not in the
// taxonomy a 422.
func (s *Service) SetDepartments(ctx context.Context, p *access.Principal, userID string, in DepartmentsIn) (*MemberDepartments, error) {
	if _, err := s.people.Member(ctx, p.Tenant, userID); err != nil {
		return nil, err
	}
	if userID != p.UserID && !p.Can(access.PermUsecasesManage) {
		return nil, errs.Forbiddenf("missing permission %s", access.PermUsecasesManage)
	}
	var vs []errs.Violation
	if len(in.Departments) > MaxDepartments {
		vs = append(vs, errs.Violation{Loc: []any{"departments"}, Type: "too_long", Msg: "must have at most 14 items"})
	}
	for i, d := range in.Departments {
		if !s.catalog.Known("department:", d) {
			vs = append(vs, errs.Violation{Loc: []any{"departments", i}, Type: "value_error",
				Msg: "must be a department tag of the taxonomy (department:<name>)"})
		}
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	m, err := s.people.SetDepartments(ctx, p.Tenant, p.Actor(), userID, in.Departments)
	if err != nil {
		return nil, err
	}
	return &MemberDepartments{UserID: m.UserID, Departments: m.Departments}, nil
}
