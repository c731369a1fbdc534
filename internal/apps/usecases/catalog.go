// Package usecases is the use-case catalog and the workspace's register:
// what AI can do in a business, tagged by industry, department, the chain
// of steps, protected data, regulations and systems, with a guide and,
// where one exists, the process template that does it; and, per workspace,
// which use cases it has taken up, with status, owner and risk rating.
//
// The catalog and its tag taxonomy are JSON files embedded in the binary
// (data/), loaded and checked when the workspace opens. Every entry is
// shown to a caller with its fit for the workspace's industries, whether it
// concerns the caller's departments, how ready the workspace is to run it
// (its template's capabilities resolve with the workspace's bindings), its
// risk (the catalog tier or the workspace's stricter rating) and the
// workspace's adoption. Adoption changes are audited with before and after
// and emit usecases.adoption.changed in the same transaction.
package usecases

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/cockroachdb/errors"
)

//go:embed data/*.json
var dataFS embed.FS

// Risk tiers, loosest first.
var RiskTiers = []string{"low", "medium", "high"}

// EveryIndustry is the industry tag of entries for every business.
const EveryIndustry = "industry:all"

// Tag is one tag of the taxonomy.
type Tag struct {
	Tag   string `json:"tag"`
	Label string `json:"label"`
}

// Taxonomy is the tag vocabularies (GET /v1/use-cases/taxonomy).
type Taxonomy struct {
	Industries    []Tag `json:"industries"`
	Departments   []Tag `json:"departments"`
	Sizes         []Tag `json:"sizes"`
	Systems       []Tag `json:"systems"`
	Regulations   []Tag `json:"regulations"`
	ProtectedData []Tag `json:"protected_data"`
	// EveryIndustry is the industry tag of entries for every business.
	EveryIndustry string `json:"every_industry"`
	// RiskTiers are the risk tiers, loosest first.
	RiskTiers []string `json:"risk_tiers"`
	// AdoptionStatuses are the statuses of an adoption, in progression
	// order, then the alternatives.
	AdoptionStatuses []string `json:"adoption_statuses"`
	// Scopes are the values of GET /v1/use-cases?scope=.
	Scopes []string `json:"scopes"`
}

// Entry is one use case of the catalog as it is stored.
type Entry struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Summary       string   `json:"summary"`
	Industries    []string `json:"industries"`
	Departments   []string `json:"departments"`
	Chain         []string `json:"chain"`
	ProtectedData []string `json:"protected_data"`
	Regulations   []string `json:"regulations"`
	Systems       []string `json:"systems"`
	Risk          string   `json:"risk"`
	Guide         string   `json:"guide"`
	TemplateID    *string  `json:"template_id"`
}

// Catalog is the loaded, checked catalog and taxonomy. It is immutable.
type Catalog struct {
	tax   Taxonomy
	list  []Entry
	byID  map[string]int
	known map[string]bool // every tag of the taxonomy
}

// Load reads and checks the embedded catalog.
func Load() (*Catalog, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(dataFS, "data", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		b, err := dataFS.ReadFile(p)
		files[path.Base(p)] = b
		return err
	})
	if err != nil {
		return nil, errors.Wrap(err, "read the embedded use cases")
	}
	return Parse(files)
}

// IDPattern is what a use-case id looks like: short lowercase with
// underscores.
var IDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{1,59}$`)

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Parse reads a catalog from files: "taxonomy.json" (the vocabularies but
// systems, which are the integrations catalog's) and any other file a JSON
// list of entries. The error lists every problem found.
func Parse(files map[string][]byte) (*Catalog, error) {
	c := &Catalog{byID: map[string]int{}, known: map[string]bool{}}
	var problems []string
	raw, ok := files["taxonomy.json"]
	if !ok {
		return nil, errors.New("the use-case catalog has no taxonomy.json")
	}
	if err := decodeStrict(raw, &c.tax); err != nil {
		return nil, errors.Wrap(err, "taxonomy.json")
	}
	for _, in := range registry.KnownIntegrations() {
		c.tax.Systems = append(c.tax.Systems, Tag{Tag: "system:" + in.ID, Label: in.App})
	}
	c.tax.EveryIndustry = EveryIndustry
	c.tax.RiskTiers = slices.Clone(RiskTiers)
	c.tax.AdoptionStatuses = slices.Clone(Statuses)
	c.tax.Scopes = []string{ScopeApplicable, ScopeMine, ScopeAll}
	for _, v := range []struct {
		prefix string
		tags   []Tag
	}{{"industry:", c.tax.Industries}, {"department:", c.tax.Departments}, {"size:", c.tax.Sizes},
		{"system:", c.tax.Systems}, {"regulation:", c.tax.Regulations}, {"data:", c.tax.ProtectedData}} {
		for _, t := range v.tags {
			switch {
			case !strings.HasPrefix(t.Tag, v.prefix) || len(t.Tag) == len(v.prefix):
				problems = append(problems, fmt.Sprintf("taxonomy.json: tag %q should start with %q", t.Tag, v.prefix))
			case c.known[t.Tag]:
				problems = append(problems, fmt.Sprintf("taxonomy.json: tag %q twice", t.Tag))
			case strings.TrimSpace(t.Label) == "":
				problems = append(problems, fmt.Sprintf("taxonomy.json: tag %q has no label", t.Tag))
			}
			c.known[t.Tag] = true
		}
	}
	if c.known[EveryIndustry] {
		problems = append(problems, "taxonomy.json: "+EveryIndustry+" is not a selectable industry")
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if n != "taxonomy.json" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		var list []Entry
		if err := decodeStrict(files[name], &list); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, e := range list {
			for _, p := range c.check(e) {
				problems = append(problems, fmt.Sprintf("%s: use case %q: %s", name, e.ID, p))
			}
			if _, dup := c.byID[e.ID]; dup {
				problems = append(problems, fmt.Sprintf("%s: use-case id %q is used twice", name, e.ID))
				continue
			}
			c.byID[e.ID] = len(c.list)
			c.list = append(c.list, e)
		}
	}
	if len(problems) > 0 {
		return nil, errors.Newf("the use-case catalog has %d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	slices.SortFunc(c.list, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	for i, e := range c.list {
		c.byID[e.ID] = i
	}
	return c, nil
}

// check returns every problem of e.
func (c *Catalog) check(e Entry) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if !IDPattern.MatchString(e.ID) {
		add("id must match %s", IDPattern)
	}
	if strings.TrimSpace(e.Name) == "" || strings.TrimSpace(e.Summary) == "" || strings.TrimSpace(e.Guide) == "" {
		add("name, summary and guide must not be empty")
	}
	if !slices.Contains(RiskTiers, e.Risk) {
		add("risk %q is none of %s", e.Risk, strings.Join(RiskTiers, ", "))
	}
	tags := func(field, prefix string, list []string, required bool) {
		if required && len(list) == 0 {
			add("%s is empty", field)
		}
		for _, t := range list {
			if field == "industries" && t == EveryIndustry {
				if len(list) > 1 {
					add("industries: %s stands alone", EveryIndustry)
				}
				continue
			}
			if !strings.HasPrefix(t, prefix) || !c.known[t] {
				add("%s: %q is not a tag of the taxonomy", field, t)
			}
		}
	}
	tags("industries", "industry:", e.Industries, true)
	tags("departments", "department:", e.Departments, true)
	tags("protected_data", "data:", e.ProtectedData, false)
	tags("regulations", "regulation:", e.Regulations, false)
	tags("systems", "system:", e.Systems, false)
	if len(e.Chain) == 0 {
		add("chain is empty")
	}
	for _, s := range e.Chain {
		if _, ok := process.LookupStepType(s); !ok {
			add("chain: %q is not a step type", s)
		}
	}
	if e.TemplateID != nil && *e.TemplateID == "" {
		add("template_id is empty; leave it null")
	}
	return out
}

// Taxonomy returns the tag vocabularies.
func (c *Catalog) Taxonomy() Taxonomy { return c.tax }

// Entries returns every entry, by id (copies: changing one changes
// nothing of the catalog).
func (c *Catalog) Entries() []Entry {
	out := make([]Entry, len(c.list))
	for i, e := range c.list {
		out[i] = e.clone()
	}
	return out
}

// Get returns (a copy of) the entry id.
func (c *Catalog) Get(id string) (Entry, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Entry{}, false
	}
	return c.list[i].clone(), true
}

func (e Entry) clone() Entry {
	for _, l := range []*[]string{&e.Industries, &e.Departments, &e.Chain, &e.ProtectedData, &e.Regulations, &e.Systems} {
		*l = append([]string{}, *l...)
	}
	if e.TemplateID != nil {
		id := *e.TemplateID
		e.TemplateID = &id
	}
	return e
}

// Known reports whether tag is a tag of the taxonomy with prefix.
func (c *Catalog) Known(prefix, tag string) bool {
	return strings.HasPrefix(tag, prefix) && c.known[tag]
}
