package crm

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// EventSink receives the app's events. The run engine implements it: Emit
// writes the event to its outbox inside tx, the transaction that makes
// the change, so the event exists exactly when the change does; Kick,
// called after that transaction commits, tells the dispatcher to look.
type EventSink interface {
	Emit(tx store.Txn, tenant, name string, data any) error
	Kick()
}

// Config configures New.
type Config struct {
	// Store is where the CRM's records live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Events receives crm.* events. Defaults to none (events are dropped),
	// for tests and tools.
	Events EventSink
	// OwnerExists checks an owner_id: nil when the tenant has that person,
	// an error marked errs.NotFound when it has not. Defaults to accepting
	// every owner id.
	OwnerExists func(ctx context.Context, tenant, userID string) error
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
	if c.OwnerExists == nil {
		c.OwnerExists = func(context.Context, string, string) error { return nil }
	}
	return c
}

type noEvents struct{}

func (noEvents) Emit(store.Txn, string, string, any) error { return nil }
func (noEvents) Kick()                                     {}

// Service is the CRM app. It is safe for concurrent use.
type Service struct {
	st     store.Store
	clock  clock.Clock
	log    *slog.Logger
	events EventSink
	owner  func(ctx context.Context, tenant, userID string) error
	ids    ids.Generator // makes the ids of the records it writes
}

// New returns the CRM app over cfg.Store. It panics when cfg.Store is nil:
// that is a wiring mistake, not a runtime condition.
func New(cfg Config) *Service {
	if cfg.Store == nil {
		panic("crm.New: Config.Store is required")
	}
	cfg = cfg.withDefaults()
	return &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, events: cfg.Events, owner: cfg.OwnerExists}
}

func (s *Service) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// update runs fn in a transaction and, once it committed, tells the event
// dispatcher to look.
func (s *Service) update(ctx context.Context, fn func(tx store.Txn) error) error {
	if err := s.st.Update(ctx, fn); err != nil {
		return err
	}
	s.events.Kick()
	return nil
}

// ---- Collections and their indexes -----------------------------------------

// Id prefixes.
const (
	prefixCompany  = "cmp"
	prefixContact  = "con"
	prefixDeal     = "del"
	prefixActivity = "act"
	prefixPipeline = "pip"
	prefixStage    = "stg"
)

func entry(parts ...any) [][]any { return [][]any{parts} }

func optEntry(v *string, more ...any) [][]any {
	if v == nil {
		return nil
	}
	return [][]any{append([]any{*v}, more...)}
}

// searchEntries turns texts into index entries of their normalized forms,
// without repeats.
func searchEntries(texts ...string) [][]any {
	var out [][]any
	seen := map[string]bool{}
	for _, t := range texts {
		n := normalize(t)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, []any{n})
	}
	return out
}

var companies = &store.Collection[Company]{
	Name: "crm-company", ID: func(c *Company) string { return c.ID }, NotFound: "company not found",
	Indexes: []store.Index[Company]{
		{Name: "o", Values: func(c *Company) [][]any { return optEntry(c.OwnerID) }},
		{Name: "q", Values: func(c *Company) [][]any { return searchEntries(companyTexts(c)...) }},
	},
}

func companyTexts(c *Company) []string {
	out := []string{c.Name}
	if c.Domain != nil {
		out = append(out, *c.Domain)
	}
	return out
}

var contacts = &store.Collection[Contact]{
	Name: "crm-contact", ID: func(c *Contact) string { return c.ID }, NotFound: "contact not found",
	Indexes: []store.Index[Contact]{
		{Name: "c", Values: func(c *Contact) [][]any { return optEntry(c.CompanyID) }},
		{Name: "o", Values: func(c *Contact) [][]any { return optEntry(c.OwnerID) }},
		{Name: "l", Values: func(c *Contact) [][]any { return entry(c.Lifecycle) }},
		{Name: "q", Values: func(c *Contact) [][]any { return searchEntries(contactTexts(c)...) }},
	},
}

func contactTexts(c *Contact) []string {
	out := []string{c.FirstName}
	if c.LastName != nil {
		out = append(out, c.FirstName+" "+*c.LastName, *c.LastName)
	}
	if c.Email != nil {
		out = append(out, *c.Email)
	}
	return out
}

var deals = &store.Collection[Deal]{
	Name: "crm-deal", ID: func(d *Deal) string { return d.ID }, NotFound: "deal not found",
	Indexes: []store.Index[Deal]{
		{Name: "p", Values: func(d *Deal) [][]any { return entry(d.PipelineID) }},
		{Name: "s", Values: func(d *Deal) [][]any { return entry(d.StageID) }},
		{Name: "c", Values: func(d *Deal) [][]any { return optEntry(d.CompanyID) }},
		{Name: "k", Values: func(d *Deal) [][]any { return optEntry(d.ContactID) }},
		{Name: "o", Values: func(d *Deal) [][]any { return optEntry(d.OwnerID) }},
		{Name: "op", Values: func(d *Deal) [][]any { return optEntry(d.OwnerID, d.PipelineID) }},
		{Name: "os", Values: func(d *Deal) [][]any { return optEntry(d.OwnerID, d.StageID) }},
		{Name: "st", Values: func(d *Deal) [][]any { return entry(d.Status) }},
		{Name: "ost", Values: func(d *Deal) [][]any { return optEntry(d.OwnerID, d.Status) }},
		{Name: "q", Values: func(d *Deal) [][]any { return searchEntries(d.Title) }},
	},
}

func dealTexts(d *Deal) []string { return []string{d.Title} }

// Activities are listed newest first by occurred_at: every index ends
// with it.
var activities = &store.Collection[Activity]{
	Name: "crm-activity", ID: func(a *Activity) string { return a.ID }, NotFound: "activity not found",
	Indexes: []store.Index[Activity]{
		{Name: "t", Values: func(a *Activity) [][]any { return entry(a.OccurredAt) }},
		{Name: "d", Values: func(a *Activity) [][]any { return optEntry(a.DealID, a.OccurredAt) }},
		{Name: "k", Values: func(a *Activity) [][]any { return optEntry(a.ContactID, a.OccurredAt) }},
		{Name: "c", Values: func(a *Activity) [][]any { return optEntry(a.CompanyID, a.OccurredAt) }},
	},
}

var pipelines = &store.Collection[Pipeline]{
	Name: "crm-pipeline", ID: func(p *Pipeline) string { return p.ID }, NotFound: "pipeline not found",
	Indexes: []store.Index[Pipeline]{
		// "stage" names the pipeline of each stage id.
		{Name: "stage", Unique: true, Values: func(p *Pipeline) [][]any {
			out := make([][]any, len(p.Stages))
			for i, s := range p.Stages {
				out[i] = []any{s.ID}
			}
			return out
		}},
		// "default" names the tenant's default pipeline.
		{Name: "default", Unique: true, Values: func(p *Pipeline) [][]any {
			if !p.IsDefault {
				return nil
			}
			return entry("default")
		}},
	},
}

// ---- Search -----------------------------------------------------------------

// maxIndexedText bounds the normalized text kept in a search index entry.
const maxIndexedText = 64

// normalize lowercases s, keeps letters, digits and the characters of
// e-mail addresses and domains, and turns every run of anything else
// into one space, for prefix search.
func normalize(s string) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		if n >= maxIndexedText {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("@.-_+", r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
				n++
			}
			space = false
			b.WriteRune(r)
			n++
			continue
		}
		space = true
	}
	return b.String()
}

// listPage lists a page of tenant's records of c chosen by index (see
// choose): all of them, a prefix search on q, or those under values.
func listPage[T any](ctx context.Context, s *Service, c *store.Collection[T], tenant, index string, values []any, q string,
	p store.Page, texts func(*T) []string) ([]*T, string, error) {
	var out []*T
	var next string
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		switch index {
		case "":
			out, next, err = c.List(r, tenant, p)
		case "q":
			out, next, err = searchPage(r, c, tenant, q, p, texts)
		default:
			out, next, err = c.ListBy(r, tenant, index, values, p)
		}
		return err
	})
	return out, next, err
}

// searchPage lists one page of tenant's records of c whose "q" index
// entry starts with the normalized q, in alphabetical order of the text
// matched. A record with several entries matching is listed once, at the
// first of them (texts says what its entries are).
func searchPage[T any](r store.Reader, c *store.Collection[T], tenant, q string, p store.Page, texts func(*T) []string) ([]*T, string, error) {
	nq := normalize(q)
	base := store.Key(tenant, "i", c.Name, "q")
	// A key of the string nq without its terminator: the prefix of every
	// entry whose text starts with nq.
	prefix := store.AppendKey(base, nq)
	prefix = prefix[:len(prefix)-2]
	limit := p.Limit
	if limit <= 0 {
		limit = defaultCountPerPage
	}
	opts := store.ScanOptions{Prefix: prefix, KeysOnly: true}
	if p.Cursor != "" {
		suffix, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		opts.After = append(append([]byte(nil), prefix...), suffix...)
	}
	var out []*T
	var last []byte
	more := false
	err := r.Scan(opts, func(key, _ []byte) error {
		parts, err := store.DecodeKey(key[len(base):])
		if err != nil || len(parts) != 2 {
			return errors.Newf("crm: a malformed search entry of %s", c.Name)
		}
		text, _ := parts[0].(string)
		id, _ := parts[1].(string)
		v, err := c.Get(r, tenant, id)
		if err != nil {
			return errors.Wrapf(err, "search index of %s names a missing record", c.Name)
		}
		if firstMatch(texts(v), nq) != text {
			return nil // listed at another entry
		}
		if len(out) == limit {
			more = true
			return store.ErrStop
		}
		out = append(out, v)
		last = append(last[:0], key...)
		return nil
	})
	if err != nil || !more {
		return out, "", err
	}
	return out, encodeCursor(last[len(prefix):]), nil
}

// firstMatch returns the smallest normalized text starting with nq.
func firstMatch(texts []string, nq string) string {
	best := ""
	for _, t := range texts {
		n := normalize(t)
		if strings.HasPrefix(n, nq) && (best == "" || n < best) {
			best = n
		}
	}
	return best
}

// ---- Stage counters ---------------------------------------------------------

// A stage's counters are one key: per currency, the number of the stage's
// deals and the sum of their amounts, changed in the transaction that
// changes a deal. A stage is empty exactly when its key is absent, and a
// transaction that reads the key (deleting the stage) conflicts with one
// that puts a deal in it.
func statKey(tenant, stageID string) []byte { return store.Key(tenant, "crm", "stat", stageID) }

// stats maps a currency to [count, total cents].
type stats map[string][2]int64

func readStats(r store.Reader, tenant, stageID string) (stats, error) {
	raw, err := r.Get(statKey(tenant, stageID))
	if errors.Is(err, store.ErrNotFound) {
		return stats{}, nil
	}
	if err != nil {
		return nil, err
	}
	st := stats{}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, errors.Wrap(err, "decode stage counters")
	}
	return st, nil
}

// addStat adds one deal (or removes it, with sign -1) to the counters of
// its stage.
func addStat(tx store.Txn, tenant string, d *Deal, sign int64) error {
	st, err := readStats(tx, tenant, d.StageID)
	if err != nil {
		return err
	}
	v := st[d.Currency]
	v[0] += sign
	v[1] = satAdd(v[1], sign*d.AmountCents)
	if v[0] <= 0 {
		delete(st, d.Currency)
	} else {
		st[d.Currency] = v
	}
	if len(st) == 0 {
		return tx.Delete(statKey(tenant, d.StageID))
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return errors.Wrap(err, "encode stage counters")
	}
	return tx.Set(statKey(tenant, d.StageID), raw)
}

// satAdd adds without overflowing: a total saturates at the largest int64.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// weighted returns total times probability percent, rounded down, without
// overflowing.
func weighted(total int64, probability int) int64 {
	p := int64(probability)
	return total/100*p + total%100*p/100
}

// stageTotals reads a stage's counters: per currency (in code order) and
// summed.
func stageTotals(r store.Reader, tenant string, st Stage) ([]CurrencyTotal, [2]int64, error) {
	var sum [2]int64
	m, err := readStats(r, tenant, st.ID)
	if err != nil {
		return nil, sum, err
	}
	out := make([]CurrencyTotal, 0, len(m))
	for cur, v := range m {
		out = append(out, CurrencyTotal{Currency: cur, Count: v[0], TotalCents: v[1], WeightedCents: weighted(v[1], st.Probability)})
		sum[0] += v[0]
		sum[1] = satAdd(sum[1], v[1])
	}
	slices.SortFunc(out, func(a, b CurrencyTotal) int { return strings.Compare(a.Currency, b.Currency) })
	return out, sum, nil
}

// ---- Events -----------------------------------------------------------------

// emit writes an event whose data is rec's fields, plus idKey naming its
// id and extra.
func (s *Service) emit(tx store.Txn, tenant, name string, rec any, idKey, id string, extra map[string]any) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return errors.Wrapf(err, "encode event %s", name)
	}
	data := map[string]any{}
	if err := json.Unmarshal(raw, &data); err != nil {
		return errors.Wrapf(err, "encode event %s", name)
	}
	data[idKey] = id
	for k, v := range extra {
		data[k] = v
	}
	return s.events.Emit(tx, tenant, name, data)
}

// ---- References -------------------------------------------------------------

// checkOwner reports an owner id the tenant has no person for as a 422 at
// loc.
func (s *Service) checkOwner(ctx context.Context, tenant string, id *string, loc ...any) error {
	if id == nil {
		return nil
	}
	err := s.owner(ctx, tenant, *id)
	if errors.Is(err, errs.NotFound) {
		return errs.Invalidf(loc, "value_error", "no member %s in this workspace", *id)
	}
	return err
}

// refs checks that the company and contact ids exist in tenant; a missing
// one is a violation at its field.
func refs(r store.Reader, tenant string, loc []any, companyID, contactID, dealID *string) error {
	var vs []errs.Violation
	check := func(id *string, field, what string, exists func() (bool, error)) error {
		if id == nil {
			return nil
		}
		ok, err := exists()
		if err != nil {
			return err
		}
		if !ok {
			l := append(append([]any(nil), loc...), field)
			vs = append(vs, errs.Violation{Loc: l, Msg: "no " + what + " " + *id, Type: "value_error"})
		}
		return nil
	}
	if err := check(companyID, "company_id", "company", func() (bool, error) { return companies.Exists(r, tenant, *companyID) }); err != nil {
		return err
	}
	if err := check(contactID, "contact_id", "contact", func() (bool, error) { return contacts.Exists(r, tenant, *contactID) }); err != nil {
		return err
	}
	if err := check(dealID, "deal_id", "deal", func() (bool, error) { return deals.Exists(r, tenant, *dealID) }); err != nil {
		return err
	}
	return errs.Validation(vs...)
}

// CompanyExists returns nil when tenant has the company id, and an error
// marked errs.NotFound when it has not (for other apps that refer to
// companies).
func (s *Service) CompanyExists(ctx context.Context, tenant, id string) error {
	return s.exists(ctx, func(r store.Reader) (bool, error) { return companies.Exists(r, tenant, id) }, "company not found")
}

// ContactExists is CompanyExists for contacts.
func (s *Service) ContactExists(ctx context.Context, tenant, id string) error {
	return s.exists(ctx, func(r store.Reader) (bool, error) { return contacts.Exists(r, tenant, id) }, "contact not found")
}

// DealExists is CompanyExists for deals.
func (s *Service) DealExists(ctx context.Context, tenant, id string) error {
	return s.exists(ctx, func(r store.Reader) (bool, error) { return deals.Exists(r, tenant, id) }, "deal not found")
}

func (s *Service) exists(ctx context.Context, fn func(store.Reader) (bool, error), missing string) error {
	var ok bool
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		ok, err = fn(r)
		return err
	})
	if err != nil {
		return err
	}
	if !ok {
		return errs.NotFoundf("%s", missing)
	}
	return nil
}

// view runs fn in a read-only transaction.
func (s *Service) view(ctx context.Context, fn func(r store.Reader) error) error {
	return s.st.View(ctx, fn)
}
