// Package templates is the process template catalog: ready-made processes
// across finance, sales, operations, HR, procurement, customer service and
// compliance that a workspace installs in one call.
//
// The templates are JSON files embedded in the binary (data/*.json, one file
// per function), loaded and checked when the workspace opens: ids unique,
// every step valid against its step type's schema (the process package's
// checks), every execute step's arguments named by its capability's schema,
// and every capability a step calls listed in the template's requires, a
// standard capability that a built-in app fills.
package templates

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
	"sync"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/cockroachdb/errors"
)

//go:embed data/*.json
var dataFS embed.FS

// Template statuses (interface.md section 3).
const (
	StatusAvailable = "available"
	StatusComing    = "coming"
)

// Functions are the business functions templates serve, in the order the
// catalog lists them.
var Functions = []string{"finance", "sales", "operations", "hr", "procurement", "customer_service", "compliance"}

// Template is one entry of the catalog as it is stored: what the catalog
// shows and the process it becomes.
type Template struct {
	ID                 string          `json:"id"`
	Name               string          `json:"name"`
	Function           string          `json:"function"`
	Segment            string          `json:"segment"`
	Description        string          `json:"description"`
	Status             string          `json:"status"`
	Effort             *string         `json:"effort"`
	HoursSavedPerMonth *int            `json:"hours_saved_per_month"`
	Risk               *string         `json:"risk"`
	Requires           []string        `json:"requires"`
	Trigger            process.Trigger `json:"trigger"`
	Steps              []process.Step  `json:"steps"`
}

// Chain returns the step types in order.
func (t Template) Chain() []string {
	out := make([]string, len(t.Steps))
	for i, s := range t.Steps {
		out[i] = s.Type
	}
	return out
}

// ChainLabels returns the steps' names in order.
func (t Template) ChainLabels() []string {
	out := make([]string, len(t.Steps))
	for i, s := range t.Steps {
		out[i] = s.Name
	}
	return out
}

// ProcessIn returns the input that installs t as a process.
func (t Template) ProcessIn() process.ProcessIn {
	steps := make([]process.Step, len(t.Steps))
	copy(steps, t.Steps)
	return process.ProcessIn{Name: t.Name, Description: t.Description, Function: t.Function,
		Trigger: t.Trigger, Steps: steps, TemplateID: t.ID}
}

// Catalog is the loaded, checked template catalog. It is immutable.
type Catalog struct {
	list []Template
	byID map[string]int
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
		return nil, errors.Wrap(err, "read the embedded templates")
	}
	return Parse(files)
}

// Parse reads a catalog from files (name to JSON list of templates) and
// checks it; the error lists every problem found.
func Parse(files map[string][]byte) (*Catalog, error) {
	c := &Catalog{byID: map[string]int{}}
	var problems []string
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		var list []Template
		dec := json.NewDecoder(bytes.NewReader(files[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&list); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, t := range list {
			for _, p := range check(t) {
				problems = append(problems, fmt.Sprintf("%s: template %q: %s", name, t.ID, p))
			}
			if _, dup := c.byID[t.ID]; dup {
				problems = append(problems, fmt.Sprintf("%s: template id %q is used twice", name, t.ID))
				continue
			}
			c.byID[t.ID] = len(c.list)
			c.list = append(c.list, t)
		}
	}
	if len(problems) > 0 {
		return nil, errors.Newf("the template catalog has %d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	slices.SortStableFunc(c.list, func(a, b Template) int {
		if d := slices.Index(Functions, a.Function) - slices.Index(Functions, b.Function); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	for i, t := range c.list {
		c.byID[t.ID] = i
	}
	return c, nil
}

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{2,79}$`)

// builtinCaps returns the standard capabilities a built-in app fills, with
// their argument schemas (made once, never modified).
var builtinCaps = sync.OnceValue(func() map[string]argsSchema {
	out := map[string]argsSchema{}
	for _, c := range registry.Standard() {
		if registry.External(c.ID) {
			continue
		}
		var s argsSchema
		_ = json.Unmarshal(c.Args, &s)
		out[c.ID] = s
	}
	return out
})

// argsSchema is the part of a capability's argument schema the catalog
// check reads.
type argsSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// check returns every problem of t.
func check(t Template) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if !idPattern.MatchString(t.ID) {
		add("id must match %s", idPattern)
	}
	if strings.TrimSpace(t.Segment) == "" {
		add("segment is empty")
	}
	if !slices.Contains(Functions, t.Function) {
		add("function %q is none of %s", t.Function, strings.Join(Functions, ", "))
	}
	if t.Status != StatusAvailable && t.Status != StatusComing {
		add("status %q is neither available nor coming", t.Status)
	}
	if t.Risk != nil && !slices.Contains([]string{"low", "medium", "high"}, *t.Risk) {
		add("risk %q is none of low, medium, high", *t.Risk)
	}
	if t.HoursSavedPerMonth != nil && *t.HoursSavedPerMonth < 0 {
		add("hours_saved_per_month is negative")
	}
	if strings.TrimSpace(t.Description) == "" {
		add("description is empty")
	}
	for _, v := range t.ProcessIn().Check() {
		add("%v: %s", v.Loc, v.Msg)
	}
	for i, s := range t.Steps {
		if strings.TrimSpace(s.Name) == "" {
			add("step %d has no name (its chain label)", i)
		}
		if st, ok := process.LookupStepType(s.Type); ok {
			for _, c := range st.Needs(s) {
				if !slices.Contains(t.Requires, c) {
					add("step %s calls %s, which requires does not list", s.Key, c)
				}
			}
		}
		if s.Type == process.StepExecute {
			out = append(out, checkArgs(s)...)
		}
	}
	for _, c := range t.Requires {
		if _, ok := builtinCaps()[c]; !ok {
			add("requires %s, which is no standard capability a built-in app fills", c)
		}
	}
	return out
}

// checkArgs checks an execute step's arguments against its capability's
// schema: every argument is one the capability takes, and every required
// one is given.
func checkArgs(s process.Step) []string {
	sch, ok := builtinCaps()[s.Capability]
	if !ok {
		return nil // reported with requires
	}
	cfg, err := process.Decode[process.ExecuteConfig](s.Config)
	if err != nil {
		return []string{fmt.Sprintf("step %s: %v", s.Key, err)}
	}
	var out []string
	for k := range cfg.Args {
		if _, ok := sch.Properties[k]; !ok {
			out = append(out, fmt.Sprintf("step %s: %s takes no argument %q", s.Key, s.Capability, k))
		}
	}
	for _, k := range sch.Required {
		if _, ok := cfg.Args[k]; !ok {
			out = append(out, fmt.Sprintf("step %s: %s needs the argument %q", s.Key, s.Capability, k))
		}
	}
	sort.Strings(out)
	return out
}

// Templates returns every template, by function then id.
func (c *Catalog) Templates() []Template { return slices.Clone(c.list) }

// Get returns the template id.
func (c *Catalog) Get(id string) (Template, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Template{}, false
	}
	return c.list[i], true
}
