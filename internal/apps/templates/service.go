package templates

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Bounds of InstallIn (interface.md section 8).
const (
	MinInstall = 1
	MaxInstall = 40
	MaxIDLen   = 80
)

// CatalogEntry is a template as GET /v1/process-templates shows it
// (interface.md 2.6), with installed for the caller's workspace.
type CatalogEntry struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	Function           string   `json:"function"`
	Segment            string   `json:"segment"`
	Description        string   `json:"description"`
	Chain              []string `json:"chain"`
	ChainLabels        []string `json:"chain_labels"`
	Requires           []string `json:"requires"`
	Status             string   `json:"status"`
	Installed          bool     `json:"installed"`
	Effort             *string  `json:"effort"`
	HoursSavedPerMonth *int     `json:"hours_saved_per_month"`
	Risk               *string  `json:"risk"`
}

// InstallIn asks for templates to be installed (interface.md 2.6).
type InstallIn struct {
	TemplateIDs []string `json:"template_ids" jsonschema:"required,minItems=1,maxItems=40"`
}

// Skipped is a template an installation left out, and why.
type Skipped struct {
	TemplateID string `json:"template_id"`
	Reason     string `json:"reason"`
}

// InstallOut is what an installation did (interface.md 2.6).
type InstallOut struct {
	Installed []*process.Definition `json:"installed"`
	Skipped   []Skipped             `json:"skipped"`
}

// GapFinder says which capabilities no provider fills for a tenant (the
// capability registry).
type GapFinder interface {
	Gaps(ctx context.Context, tenant string, needed []string) ([]registry.Gap, error)
}

// Config configures New.
type Config struct {
	// Store is where installations are kept. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Processes creates the installed processes. Required.
	Processes *process.Service
	// Gaps finds the capabilities a template requires that nothing fills.
	// Required.
	Gaps GapFinder
	// Catalog is the template catalog. Defaults to the embedded one (Load).
	Catalog *Catalog
}

// Service is the template catalog of every workspace and the installations
// of each. It is safe for concurrent use.
type Service struct {
	st      store.Store
	clock   clock.Clock
	log     *slog.Logger
	procs   *process.Service
	gaps    GapFinder
	catalog *Catalog
}

// installation records that a tenant installed a template as a process.
type installation struct {
	TemplateID  string    `json:"template_id"`
	ProcessID   string    `json:"process_id"`
	InstalledAt time.Time `json:"installed_at"`
	InstalledBy string    `json:"installed_by"`
}

var installations = &store.Collection[installation]{
	Name:     "tpl-install",
	ID:       func(i *installation) string { return i.TemplateID },
	NotFound: "installation not found",
}

// New returns the template service: it loads the catalog (unless given)
// and follows the processes it installs, so archiving one makes its
// template installable again.
func New(cfg Config) (*Service, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Store == nil || cfg.Processes == nil || cfg.Gaps == nil {
		return nil, errors.New("templates: Config needs Store, Processes and Gaps")
	}
	if cfg.Catalog == nil {
		c, err := Load()
		if err != nil {
			return nil, err
		}
		cfg.Catalog = c
	}
	s := &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, procs: cfg.Processes, gaps: cfg.Gaps, catalog: cfg.Catalog}
	s.procs.OnChange(s.processChanged)
	return s, nil
}

// Catalog returns the template catalog.
func (s *Service) Catalog() *Catalog { return s.catalog }

// processChanged forgets the installation of a template whose process is
// archived.
func (s *Service) processChanged(tx store.Txn, tenant string, _, d *process.Definition) error {
	if d == nil || !d.Archived || d.TemplateID == nil {
		return nil
	}
	in, err := installations.Get(tx, tenant, *d.TemplateID)
	switch {
	case errors.Is(err, errs.NotFound):
		return nil
	case err != nil:
		return err
	case in.ProcessID != d.ID:
		return nil
	}
	return installations.Delete(tx, tenant, in.TemplateID)
}

func (s *Service) entry(t Template, installed bool) CatalogEntry {
	return CatalogEntry{ID: t.ID, Name: t.Name, Function: t.Function, Segment: t.Segment, Description: t.Description,
		Chain: t.Chain(), ChainLabels: t.ChainLabels(), Requires: append([]string{}, t.Requires...), Status: t.Status,
		Installed: installed, Effort: t.Effort, HoursSavedPerMonth: t.HoursSavedPerMonth, Risk: t.Risk}
}

// List returns every template with installed for tenant, by function then
// id. function, when not empty, keeps that function's templates (one of
// Functions: another is errs.Invalid).
func (s *Service) List(ctx context.Context, tenant, function string) ([]CatalogEntry, error) {
	if function != "" && !slices.Contains(Functions, function) {
		return nil, errs.Invalidf([]any{"query", "function"}, "enum", "must be one of: %s", strings.Join(Functions, ", "))
	}
	out := []CatalogEntry{}
	err := s.st.View(ctx, func(r store.Reader) error {
		installed := map[string]bool{}
		list, _, err := installations.List(r, tenant, store.Page{Limit: len(s.catalog.list) + 1})
		if err != nil {
			return err
		}
		for _, in := range list {
			installed[in.TemplateID] = true
		}
		for _, t := range s.catalog.list {
			if function == "" || t.Function == function {
				out = append(out, s.entry(t, installed[t.ID]))
			}
		}
		return nil
	})
	return out, err
}

// Get returns template id with installed for tenant.
func (s *Service) Get(ctx context.Context, tenant, id string) (*CatalogEntry, error) {
	t, ok := s.catalog.Get(id)
	if !ok {
		return nil, errs.NotFoundf("process template not found")
	}
	var e CatalogEntry
	err := s.st.View(ctx, func(r store.Reader) error {
		installed, err := installations.Exists(r, tenant, id)
		e = s.entry(t, installed)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// Check reports every violation of in: the bounds of the list, and each id
// a template of the catalog, located at in's field names (template_ids,
// template_ids.{i}); the HTTP API puts them under "body".
func (s *Service) Check(in InstallIn) error {
	var vs []errs.Violation
	loc := []any{"template_ids"}
	switch n := len(in.TemplateIDs); {
	case in.TemplateIDs == nil:
		vs = append(vs, errs.Violation{Loc: loc, Msg: "is required", Type: "missing"})
	case n < MinInstall:
		vs = append(vs, errs.Violation{Loc: loc, Msg: "must have at least 1 item", Type: "too_short"})
	case n > MaxInstall:
		vs = append(vs, errs.Violation{Loc: loc, Msg: "must have at most 40 items", Type: "too_long"})
	}
	for i, id := range in.TemplateIDs {
		iloc := []any{"template_ids", i}
		switch {
		case id == "":
			vs = append(vs, errs.Violation{Loc: iloc, Msg: "must have at least 1 character", Type: "string_too_short"})
		case len(id) > MaxIDLen:
			vs = append(vs, errs.Violation{Loc: iloc, Msg: "must have at most 80 characters", Type: "string_too_long"})
		default:
			if _, ok := s.catalog.Get(id); !ok {
				vs = append(vs, errs.Violation{Loc: iloc, Msg: "is not a template of the catalog", Type: "value_error"})
			}
		}
	}
	return errs.Validation(vs...)
}

// Install installs the templates in.TemplateIDs as processes of tenant, all
// in one transaction, audited as actor. A template that is coming, already
// installed, listed twice, or requires a capability no provider fills in
// tenant is skipped with its reason; an unknown id is a 422 and installs
// nothing. Installing again installs nothing new.
func (s *Service) Install(ctx context.Context, tenant, actor string, in InstallIn) (*InstallOut, error) {
	if err := s.Check(in); err != nil {
		return nil, err
	}
	// What no provider fills, asked once for every template's requires.
	var needed []string
	for _, id := range in.TemplateIDs {
		t, _ := s.catalog.Get(id)
		needed = append(needed, t.Requires...)
	}
	gaps, err := s.gaps.Gaps(ctx, tenant, needed)
	if err != nil {
		return nil, err
	}
	gap := map[string]bool{}
	for _, g := range gaps {
		gap[g.Capability] = true
	}
	var out *InstallOut
	err = s.st.Update(ctx, func(tx store.Txn) error {
		out = &InstallOut{Installed: []*process.Definition{}, Skipped: []Skipped{}}
		now := s.clock.Now().UTC()
		seen := map[string]bool{}
		for _, id := range in.TemplateIDs {
			t, _ := s.catalog.Get(id)
			skip := func(reason string) { out.Skipped = append(out.Skipped, Skipped{TemplateID: id, Reason: reason}) }
			if seen[id] {
				skip("listed more than once")
				continue
			}
			seen[id] = true
			if t.Status == StatusComing {
				skip("coming: the template is not available yet")
				continue
			}
			prev, err := installations.Get(tx, tenant, id)
			switch {
			case err == nil:
				skip("already installed as process " + prev.ProcessID)
				continue
			case !errors.Is(err, errs.NotFound):
				return err
			}
			var missing []string
			for _, c := range t.Requires {
				if gap[c] {
					missing = append(missing, c)
				}
			}
			if len(missing) > 0 {
				skip("requires " + strings.Join(missing, ", ") + " which no provider fills")
				continue
			}
			d, err := s.procs.CreateTx(tx, tenant, actor, t.ProcessIn())
			if err != nil {
				return errors.Wrapf(err, "install template %s", id)
			}
			if err := installations.Put(tx, tenant, &installation{TemplateID: id, ProcessID: d.ID, InstalledAt: now, InstalledBy: actor}); err != nil {
				return err
			}
			out.Installed = append(out.Installed, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
