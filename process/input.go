package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/schema"
)

// Bounds of a process's fields.
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 4000
	MaxFunctionLen    = 80
)

// ProcessIn is the input that creates a process (api.md section 3).
type ProcessIn struct {
	// Name is 1..200 characters.
	Name string `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	// Description is at most 4000 characters.
	Description string `json:"description,omitempty" jsonschema:"maxLength=4000"`
	// Function is the business function the process serves (finance,
	// sales, operations ...), at most 80 characters.
	Function string `json:"function,omitempty" jsonschema:"maxLength=80"`
	// Trigger starts the process's runs.
	Trigger Trigger `json:"trigger" jsonschema:"required"`
	// Steps are 1..50 steps with unique keys.
	Steps []Step `json:"steps" jsonschema:"required,minItems=1,maxItems=50"`
	// Enabled lets triggers start runs. Defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
	// Search declares up to MaxSearchFields fields runs are searched and
	// filtered by: each maps a name to a path of the run's data
	// (subject.label, trigger.data.supplier, steps.extract.amount_cents ...).
	Search map[string]string `json:"search,omitempty"`
	// TemplateID records the catalog template the process was installed
	// from; it is set by Go callers (template installation), never by the
	// API body.
	TemplateID string `json:"-"`
}

// Check reports every violation of in beyond the JSON types, located at
// in's field names (["steps", 0, "type"]): the bounds of name, description and function, the trigger
// (CheckTrigger) and the steps (CheckSteps).
func (in ProcessIn) Check() []errs.Violation { return in.check(builtin()) }

// check is Check with the step types of r.
func (in ProcessIn) check(r *StepRegistry) []errs.Violation {
	var v violations
	checkName(&v, in.Name, []any{"name"})
	checkLen(&v, in.Description, MaxDescriptionLen, []any{"description"})
	checkLen(&v, in.Function, MaxFunctionLen, []any{"function"})
	v.addAll(CheckTrigger(in.Trigger, "trigger"))
	v.addAll(r.CheckSteps(in.Steps, "steps"))
	checkSearch(&v, in.Search)
	checkSearchSteps(&v, in.Search, in.Steps)
	return v.vs
}

// MaxSearchFields bounds a process's declared search fields.
const MaxSearchFields = 10

// searchName is the form of a search field's name.
var searchName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// checkSearch checks declared search fields: at most MaxSearchFields, each
// named like a step key, with a path of 1..200 characters under subject,
// trigger or steps.
func checkSearch(v *violations, search map[string]string) {
	if len(search) > MaxSearchFields {
		v.add([]any{"search"}, "too_long", "may declare at most %d fields", MaxSearchFields)
	}
	names := make([]string, 0, len(search))
	for name := range search {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		path := search[name]
		loc := []any{"search", name}
		if !searchName.MatchString(name) {
			v.add(loc, "value_error", "a search field's name is 1..40 lower-case letters, digits and _, starting with a letter")
		}
		root, _, _ := strings.Cut(path, ".")
		switch {
		case len(path) == 0 || len(path) > 200:
			v.add(loc, "value_error", "a path is 1..200 characters")
		case root != "subject" && root != "trigger" && root != "steps":
			v.add(loc, "value_error", "a path starts with subject, trigger or steps")
		}
	}
}

// checkSearchSteps reports every declared search field whose path names,
// under steps, a step that steps do not have: it would never have a value.
func checkSearchSteps(v *violations, search map[string]string, steps []Step) {
	keys := make(map[string]int, len(steps))
	for i, s := range steps {
		keys[s.Key] = i
	}
	for _, name := range slices.Sorted(maps.Keys(search)) {
		// Any step may fill a search field, later ones too: the index
		// follows the run as its steps complete.
		if msg := stepRefProblem(search[name], -1, keys); msg != "" {
			v.add([]any{"search", name}, "value_error", "%s", msg)
		}
	}
}

func checkName(v *violations, name string, loc []any) {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		v.add(loc, "string_too_short", "must have at least 1 character")
	case n > MaxNameLen:
		v.add(loc, "string_too_long", "must have at most %d characters", MaxNameLen)
	}
}

func checkLen(v *violations, s string, max int, loc []any) {
	if utf8.RuneCountInString(s) > max {
		v.add(loc, "string_too_long", "must have at most %d characters", max)
	}
}

// ProcessPatch changes a process (PATCH semantics): nil fields are left as
// they are. Description and Function are cleared by an empty string (JSON
// null). A change to Steps, Trigger or Search makes a new version; the
// others do not.
type ProcessPatch struct {
	Name        *string  `json:"name,omitempty" jsonschema:"minLength=1,maxLength=200"`
	Description *string  `json:"description,omitempty" jsonschema:"maxLength=4000"`
	Function    *string  `json:"function,omitempty" jsonschema:"maxLength=80"`
	Trigger     *Trigger `json:"trigger,omitempty"`
	// Steps, when not nil, replace every step.
	Steps   []Step `json:"steps,omitempty" jsonschema:"minItems=1,maxItems=50"`
	Enabled *bool  `json:"enabled,omitempty"`
	// Search, when not nil, replaces the declared search fields ({} clears
	// them); a change makes a new version.
	Search map[string]string `json:"search,omitempty"`
}

// MarshalJSON writes p with search left out only when nil: {} (clear
// them) stays {}, so a queued patch (four-eyes) applies as it was sent.
func (p ProcessPatch) MarshalJSON() ([]byte, error) {
	type plain ProcessPatch
	w := struct {
		plain
		Search *map[string]string `json:"search,omitempty"`
	}{plain: plain(p)}
	if p.Search != nil {
		w.Search = &p.Search
	}
	return json.Marshal(w)
}

// Check reports every violation of the fields present in p, located at p's
// field names (["trigger", "cron"]).
func (p ProcessPatch) Check() []errs.Violation { return p.check(builtin()) }

// check is Check with the step types of r.
func (p ProcessPatch) check(r *StepRegistry) []errs.Violation {
	var v violations
	if p.Name != nil {
		checkName(&v, *p.Name, []any{"name"})
	}
	if p.Description != nil {
		checkLen(&v, *p.Description, MaxDescriptionLen, []any{"description"})
	}
	if p.Function != nil {
		checkLen(&v, *p.Function, MaxFunctionLen, []any{"function"})
	}
	if p.Trigger != nil {
		v.addAll(CheckTrigger(*p.Trigger, "trigger"))
	}
	if p.Steps != nil {
		v.addAll(r.CheckSteps(p.Steps, "steps"))
	}
	checkSearch(&v, p.Search)
	if p.Steps != nil {
		// Without steps, the process's own are known only to Update.
		checkSearchSteps(&v, p.Search, p.Steps)
	}
	return v.vs
}

// Empty reports whether p changes nothing.
func (p ProcessPatch) Empty() bool {
	return p.Name == nil && p.Description == nil && p.Function == nil && p.Trigger == nil &&
		p.Steps == nil && p.Enabled == nil && p.Search == nil
}

// inputSchemas are the compiled schemas of the input records, made once.
// They are open (schema.Open): process input records ignore unknown fields
// (api.md section 1). Step configs keep their own strict schemas (CheckStep).
var inputSchemas = sync.OnceValue(func() struct{ in, patch *schema.Validator } {
	in, err := schema.Compile(schema.Open(schema.Reflect(&ProcessIn{})))
	if err != nil {
		panic(fmt.Sprintf("process: compile the ProcessIn schema: %v", err))
	}
	patch, err := schema.Compile(schema.Open(schema.Reflect(&ProcessPatch{})))
	if err != nil {
		panic(fmt.Sprintf("process: compile the ProcessPatch schema: %v", err))
	}
	return struct{ in, patch *schema.Validator }{in, patch}
})

// DecodeIn reads a ProcessIn from a JSON body and reports every violation
// at once, located at the field names (see the package's doc): malformed JSON, wrong JSON types and bounds (the record's schema),
// and everything Check finds. Unknown fields are ignored.
func DecodeIn(raw []byte) (ProcessIn, error) {
	var in ProcessIn
	doc, err := decodeBody(raw)
	if err != nil {
		return in, err
	}
	// null description or function mean none.
	for _, k := range []string{"description", "function"} {
		if v, ok := doc[k]; ok && v == nil {
			delete(doc, k)
		}
	}
	vs := inputSchemas().in.Validate(doc)
	lenientDecode(doc, &in)
	return in, errs.Validation(merge(vs, in.Check())...)
}

// DecodePatch reads a ProcessPatch from a JSON body and reports every
// violation of the fields present at once. null clears description and
// function; null for any other field is a type_error. A field a patch does
// not take is an extra_forbidden: a patch never drops a field silently.
func DecodePatch(raw []byte) (ProcessPatch, error) {
	var p ProcessPatch
	doc, err := decodeBody(raw)
	if err != nil {
		return p, err
	}
	var v violations
	patchable := []string{"name", "description", "function", "trigger", "steps", "enabled", "search"}
	extra := make([]string, 0, len(doc))
	for k := range doc {
		if !slices.Contains(patchable, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		v.add([]any{k}, "extra_forbidden", "is not a field a process patch takes")
		delete(doc, k)
	}
	empty := ""
	cleared := map[string]bool{}
	for _, k := range patchable {
		val, ok := doc[k]
		if !ok || val != nil {
			continue
		}
		delete(doc, k)
		switch k {
		case "description", "function":
			cleared[k] = true
		default:
			v.add([]any{k}, "type_error", "may not be null")
		}
	}
	vs := inputSchemas().patch.Validate(doc)
	lenientDecode(doc, &p)
	if cleared["description"] {
		p.Description = &empty
	}
	if cleared["function"] {
		p.Function = &empty
	}
	if _, ok := doc["steps"]; ok && p.Steps == nil {
		p.Steps = []Step{}
	}
	v.addAll(merge(vs, p.Check()))
	return p, errs.Validation(v.vs...)
}

// decodeBody decodes a JSON body that must be an object, numbers exact.
func decodeBody(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var doc any
	if err := decodeJSON(raw, &doc); err != nil {
		return nil, errs.Validation(errs.Violation{Loc: []any{}, Msg: "is not valid JSON", Type: "json_invalid"})
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, errs.Validation(errs.Violation{Loc: []any{}, Msg: "must be an object", Type: "type_error"})
	}
	return m, nil
}

// lenientDecode decodes doc into v as far as the JSON types allow: a value of
// the wrong type is left at its zero value (the schema has reported it).
func lenientDecode(doc map[string]any, v any) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return
	}
	_ = json.Unmarshal(raw, v)
}

// merge returns first followed by the violations of second at locations
// first does not already report, so one problem is reported once.
func merge(first, second []errs.Violation) []errs.Violation {
	out := slices.Clone(first)
	seen := map[string]bool{}
	for _, x := range first {
		seen[locKey(x.Loc)] = true
	}
	for _, x := range second {
		if !seen[locKey(x.Loc)] {
			out = append(out, x)
		}
	}
	return out
}

func locKey(loc []any) string {
	b, _ := json.Marshal(loc)
	return string(b)
}

// validateIn validates an input built in Go: the schema of its JSON form and
// Check, with the step types of r.
func validateIn(in ProcessIn, r *StepRegistry) error {
	return validateBuilt(in, inputSchemas().in, func() []errs.Violation { return in.check(r) })
}

// validatePatch validates a patch built in Go: the schema of its JSON form
// and Check, with the step types of r.
func validatePatch(p ProcessPatch, r *StepRegistry) error {
	return validateBuilt(p, inputSchemas().patch, func() []errs.Violation { return p.check(r) })
}

// validateBuilt validates v, a record built in Go, against sch in its JSON
// form and with check.
func validateBuilt(v any, sch *schema.Validator, check func() []errs.Violation) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return errs.Validation(errs.Violation{Loc: []any{}, Msg: err.Error(), Type: "value_error"})
	}
	var doc any
	if err := decodeJSON(raw, &doc); err != nil {
		return errs.Validation(errs.Violation{Loc: []any{}, Msg: err.Error(), Type: "value_error"})
	}
	return errs.Validation(merge(sch.Validate(doc), check())...)
}
