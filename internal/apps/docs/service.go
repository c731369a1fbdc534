package docs

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// DefaultMaxUploadBytes is the default of Config.MaxUploadBytes (25 MiB).
const DefaultMaxUploadBytes = 25 << 20

// EventSink receives the app's events. The run engine implements it: Emit
// writes the event to its outbox inside tx, the transaction that makes
// the change, so the event exists exactly when the change does; Kick,
// called after that transaction commits, tells the dispatcher to look.
type EventSink interface {
	Emit(tx store.Txn, tenant, name string, data any) error
	Kick()
}

// Config configures NewService.
type Config struct {
	// Store is where types, documents and files live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Events receives docs.document.* events. Defaults to none (events are
	// dropped), for tests and tools.
	Events EventSink
	// MaxUploadBytes bounds one file. Defaults to 25 MiB.
	MaxUploadBytes int64
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Events == nil {
		c.Events = noEvents{}
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = DefaultMaxUploadBytes
	}
	return c
}

type noEvents struct{}

func (noEvents) Emit(store.Txn, string, string, any) error { return nil }
func (noEvents) Kick()                                     {}

// Service is the documents app. It is safe for concurrent use.
type Service struct {
	st     store.Store
	clock  clock.Clock
	log    *slog.Logger
	events EventSink
	max    int64

	// Compiled extractors by type, so an upload does not compile the
	// type's patterns again (the bulk of the work for a one-page file).
	xmu sync.Mutex
	xs  map[string]cachedExtractor

	ids ids.Generator // makes the ids of the records and audit entries it writes
}

type cachedExtractor struct {
	updated time.Time
	x       *extract.Extractor
}

// maxCachedExtractors bounds the extractor cache; beyond it the cache is
// emptied and refilled by use.
const maxCachedExtractors = 1024

// extractor returns the compiled extractor of t's fields.
func (s *Service) extractor(tenant string, t *DocType) (*extract.Extractor, error) {
	key := tenant + "\x00" + t.ID
	s.xmu.Lock()
	c, ok := s.xs[key]
	s.xmu.Unlock()
	if ok && c.updated.Equal(t.UpdatedAt) {
		return c.x, nil
	}
	x, err := extract.New(extractFields(t))
	if err != nil {
		return nil, errors.Wrapf(err, "document type %s has unusable fields", t.ID)
	}
	s.xmu.Lock()
	if len(s.xs) >= maxCachedExtractors {
		s.xs = map[string]cachedExtractor{}
	}
	s.xs[key] = cachedExtractor{updated: t.UpdatedAt, x: x}
	s.xmu.Unlock()
	return x, nil
}

// NewService returns the documents app over cfg.Store. It panics when
// cfg.Store is nil: that is a wiring mistake, not a runtime condition.
func NewService(cfg Config) *Service {
	if cfg.Store == nil {
		panic("docs.NewService: Config.Store is required")
	}
	cfg = cfg.withDefaults()
	return &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, events: cfg.Events, max: cfg.MaxUploadBytes,
		xs: map[string]cachedExtractor{}}
}

// MaxUploadBytes returns the largest file the service accepts.
func (s *Service) MaxUploadBytes() int64 { return s.max }

var types = &store.Collection[DocType]{
	Name:     "doctype",
	ID:       func(t *DocType) string { return t.ID },
	NotFound: "document type not found",
	Indexes: []store.Index[DocType]{
		{Name: "name", Unique: true, Values: func(t *DocType) [][]any {
			return [][]any{{strings.ToLower(strings.TrimSpace(t.Name))}}
		}},
	},
}

// The document list indexes: one per combination of the filters status,
// type and queue, so every filtered list is one index walk.
var docs = &store.Collection[record]{
	Name:     "doc",
	ID:       func(r *record) string { return r.ID },
	NotFound: "document not found",
	Indexes: []store.Index[record]{
		{Name: "s", Values: func(r *record) [][]any { return [][]any{{r.Status}} }},
		{Name: "t", Values: func(r *record) [][]any { return [][]any{{r.TypeID}} }},
		{Name: "st", Values: func(r *record) [][]any { return [][]any{{r.Status, r.TypeID}} }},
		{Name: "q", Values: func(r *record) [][]any { return queued(r, func(q string) []any { return []any{q} }) }},
		{Name: "sq", Values: func(r *record) [][]any { return queued(r, func(q string) []any { return []any{r.Status, q} }) }},
		{Name: "tq", Values: func(r *record) [][]any { return queued(r, func(q string) []any { return []any{r.TypeID, q} }) }},
		{Name: "stq", Values: func(r *record) [][]any {
			return queued(r, func(q string) []any { return []any{r.Status, r.TypeID, q} })
		}},
	},
}

func queued(r *record, entry func(q string) []any) [][]any {
	if r.Queue == nil || *r.Queue == "" {
		return nil
	}
	return [][]any{entry(*r.Queue)}
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// ---- Document types ------------------------------------------------------

// CreateType creates a document type. Names are unique in a tenant
// (case-insensitive): a second type with the same name is a conflict.
func (s *Service) CreateType(ctx context.Context, tenant string, in DocTypeIn) (*DocType, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	now := s.now()
	desc := in.Description
	t := &DocType{
		ID: s.ids.New("dtp", now), Name: strings.TrimSpace(in.Name), Description: desc,
		Fields: normalizeFields(in.Fields), Workflow: in.Workflow.apply(DefaultWorkflow()),
		CreatedAt: now, UpdatedAt: now,
	}
	t.derive()
	if err := s.st.Update(ctx, func(tx store.Txn) error { return putType(tx, tenant, t) }); err != nil {
		return nil, err
	}
	return t, nil
}

func putType(tx store.Txn, tenant string, t *DocType) error {
	err := types.Put(tx, tenant, t)
	if errors.Is(err, errs.Conflict) {
		return errs.Conflictf("a document type named %q already exists", t.Name)
	}
	return err
}

// derive fills the fields computed from the type's fields.
func (t *DocType) derive() {
	if t.Fields == nil {
		t.Fields = []DocField{}
	}
	t.Rules = Rules(t.Fields)
	t.RuleCount = len(t.Rules)
}

// GetType returns one document type.
func (s *Service) GetType(ctx context.Context, tenant, id string) (*DocType, error) {
	var t *DocType
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		t, err = types.Get(r, tenant, id)
		return err
	})
	return t, err
}

// ListTypes returns a page of document types, newest first.
func (s *Service) ListTypes(ctx context.Context, tenant string, p store.Page) ([]*DocType, string, error) {
	var out []*DocType
	var next string
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		out, next, err = types.List(r, tenant, p)
		return err
	})
	return out, next, err
}

// UpdateType applies a patch. Documents keep their validation until they
// are validated again (a correction, a new version, document.validate).
func (s *Service) UpdateType(ctx context.Context, tenant, id string, p DocTypePatch) (*DocType, error) {
	var out *DocType
	err := s.st.Update(ctx, func(tx store.Txn) error {
		t, err := types.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := errs.Validation(p.Validate()...); err != nil {
			return err
		}
		if p.Name != nil {
			t.Name = strings.TrimSpace(*p.Name)
		}
		if p.Description != nil || p.clears("description") {
			t.Description = p.Description
		}
		t.reshape(p.Fields, p.Workflow, p.Clear)
		t.UpdatedAt = s.now()
		t.derive()
		out = t
		return putType(tx, tenant, t)
	})
	return out, err
}

// DeleteType deletes a document type that no document uses; one that
// documents use is a conflict.
func (s *Service) DeleteType(ctx context.Context, tenant, id string) error {
	return s.st.Update(ctx, func(tx store.Txn) error {
		if _, err := types.Get(tx, tenant, id); err != nil {
			return err
		}
		used := false
		if err := docs.IDsBy(tx, tenant, "t", []any{id}, func(string) error {
			used = true
			return store.ErrStop
		}); err != nil {
			return err
		}
		if used {
			return errs.Conflictf("document type has documents; it cannot be deleted")
		}
		return types.Delete(tx, tenant, id)
	})
}

// CreateFromTemplate makes a document type from a template. Without a
// name the template's is used, suffixed " (2)", " (3)" ... when taken; a
// name given that is taken is a conflict. An unknown template is a 422.
func (s *Service) CreateFromTemplate(ctx context.Context, tenant string, in DraftIn) (*DocType, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	tpl, ok := Template(in.TemplateID)
	if !ok {
		return nil, errs.Invalidf([]any{"template_id"}, "value_error", "no document type template %q; see GET /v1/docs/type-templates", in.TemplateID)
	}
	now := s.now()
	t := &DocType{
		ID: s.ids.New("dtp", now), Name: tpl.Name, Description: ptr(tpl.Description),
		Fields: normalizeFields(tpl.Fields), Workflow: tpl.Workflow, TemplateID: ptr(tpl.ID),
		CreatedAt: now, UpdatedAt: now,
	}
	named := in.Name != nil && strings.TrimSpace(*in.Name) != ""
	if named {
		t.Name = strings.TrimSpace(*in.Name)
	}
	t.derive()
	err := s.st.Update(ctx, func(tx store.Txn) error {
		if named {
			return putType(tx, tenant, t)
		}
		for n := 1; ; n++ {
			name := tpl.Name
			if n > 1 {
				name = tpl.Name + " (" + itoa(n) + ")"
			}
			_, err := types.Lookup(tx, tenant, "name", strings.ToLower(name))
			if errors.Is(err, errs.NotFound) {
				t.Name = name
				return putType(tx, tenant, t)
			}
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}
