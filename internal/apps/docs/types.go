package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
)

// The workflow choices.
const (
	OnErrorReview   = "review"
	OnErrorReject   = "reject"
	OnWarningReview = "review"
	OnWarningAccept = "accept"
)

// Bounds of document type records.
const (
	MaxTypeNameLen = 160
	// MaxDraftNameLen bounds the name of a type made from a template
	// (interface.md DraftIn); such a type keeps the name it was given.
	MaxDraftNameLen   = 200
	MaxLabelLen       = 120
	MaxDescriptionLen = 2000
	MaxFields         = 100
	MaxOptions        = 100
	MaxOptionLen      = 200
	MaxAliases        = 20
	MaxPatternLen     = 1000
	MaxQueueLen       = 80
	MaxReviewSLADays  = 365
	DefaultSLADays    = 2
)

var reFieldKey = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// DocField is one field of a document type (interface.md DocField).
type DocField struct {
	// Key names the value in extracted ("invoice_number"); lowercase
	// letters, digits and '_', starting with a letter, at most 40.
	Key string `json:"key" jsonschema:"required,minLength=1,maxLength=40"`
	// Label is the field's name; the label method looks for it when the
	// rule names no label of its own. 1 to 120 characters.
	Label string `json:"label" jsonschema:"required,minLength=1,maxLength=120"`
	// Type is text, number, money, date, email or enum. Defaults to text.
	Type string `json:"type,omitempty" jsonschema:"enum=text,enum=number,enum=money,enum=date,enum=email,enum=enum"`
	// Required fields missing from a document are errors.
	Required bool `json:"required"`
	// Options are the values of an enum field.
	Options []string `json:"options" jsonschema:"nullable,maxItems=100"`
	// Extract is how the value is found: {"method": "label", "label",
	// "aliases"} or {"method": "regex", "pattern", "group"}. Null means the
	// label method with Label.
	Extract *extract.Rule `json:"extract" jsonschema:"nullable"`
	// Repeat (an extension) takes every match instead of the first: the
	// value is a list (the amounts of an invoice's lines).
	Repeat bool `json:"repeat,omitempty"`
}

func (f DocField) fieldType() string {
	if f.Type == "" {
		return extract.TypeText
	}
	return f.Type
}

func (f DocField) toExtract() extract.Field {
	return extract.Field{Key: f.Key, Label: f.Label, Type: f.fieldType(), Options: f.Options, Extract: f.Extract, Repeat: f.Repeat}
}

// searched says what extraction looked for, as evidence of a missing value.
func (f DocField) searched() []string {
	r := f.Extract
	if r != nil && r.Method == extract.MethodRegex {
		return []string{"pattern " + r.Pattern}
	}
	label := f.Label
	if r != nil && strings.TrimSpace(r.Label) != "" {
		label = r.Label
	}
	out := []string{"label " + label}
	if r != nil {
		for _, a := range r.Aliases {
			out = append(out, "label "+a)
		}
	}
	return out
}

// Workflow is how documents of a type move after validation.
type Workflow struct {
	// AutoApprove approves a clean document without a person.
	AutoApprove bool `json:"auto_approve"`
	// OnError is review (a person decides) or reject (rejected at once).
	OnError string `json:"on_error"`
	// OnWarning is review or accept (warnings alone count as clean).
	OnWarning string `json:"on_warning"`
	// ReviewSLADays is how long a person has to decide, from when the
	// document enters review.
	ReviewSLADays int `json:"review_sla_days"`
	// Queue (an extension) is the review queue of the type's documents
	// when the upload names none.
	Queue *string `json:"queue"`
}

// DefaultWorkflow is the workflow of a type that names none.
func DefaultWorkflow() Workflow {
	return Workflow{OnError: OnErrorReview, OnWarning: OnWarningReview, ReviewSLADays: DefaultSLADays}
}

// WorkflowIn sets workflow keys; a key left out keeps its default (on
// create) or its current value (on PATCH).
type WorkflowIn struct {
	AutoApprove   *bool   `json:"auto_approve,omitempty"`
	OnError       *string `json:"on_error,omitempty" jsonschema:"enum=review,enum=reject"`
	OnWarning     *string `json:"on_warning,omitempty" jsonschema:"enum=review,enum=accept"`
	ReviewSLADays *int    `json:"review_sla_days,omitempty" jsonschema:"minimum=0,maximum=365"`
	Queue         *string `json:"queue,omitempty" jsonschema:"nullable,maxLength=80"`
}

func (w *WorkflowIn) apply(to Workflow) Workflow {
	if w == nil {
		return to
	}
	if w.AutoApprove != nil {
		to.AutoApprove = *w.AutoApprove
	}
	if w.OnError != nil {
		to.OnError = *w.OnError
	}
	if w.OnWarning != nil {
		to.OnWarning = *w.OnWarning
	}
	if w.ReviewSLADays != nil {
		to.ReviewSLADays = *w.ReviewSLADays
	}
	if w.Queue != nil {
		q := strings.TrimSpace(*w.Queue)
		to.Queue = &q
		if q == "" {
			to.Queue = nil
		}
	}
	return to
}

func (w *WorkflowIn) validate(loc ...any) []errs.Violation {
	if w == nil {
		return nil
	}
	var vs []errs.Violation
	at := func(k string) []any { return append(slices.Clone(loc), k) }
	if w.OnError != nil && *w.OnError != OnErrorReview && *w.OnError != OnErrorReject {
		vs = append(vs, errs.Violation{Loc: at("on_error"), Msg: "must be one of review, reject", Type: "enum"})
	}
	if w.OnWarning != nil && *w.OnWarning != OnWarningReview && *w.OnWarning != OnWarningAccept {
		vs = append(vs, errs.Violation{Loc: at("on_warning"), Msg: "must be one of review, accept", Type: "enum"})
	}
	if w.ReviewSLADays != nil {
		if *w.ReviewSLADays < 0 {
			vs = append(vs, errs.Violation{Loc: at("review_sla_days"), Msg: "must be at least 0", Type: "greater_than_equal"})
		} else if *w.ReviewSLADays > MaxReviewSLADays {
			vs = append(vs, errs.Violation{Loc: at("review_sla_days"), Msg: fmt.Sprintf("must be at most %d", MaxReviewSLADays), Type: "less_than_equal"})
		}
	}
	if w.Queue != nil && utf8.RuneCountInString(*w.Queue) > MaxQueueLen {
		vs = append(vs, errs.Violation{Loc: at("queue"), Msg: fmt.Sprintf("must be at most %d characters", MaxQueueLen), Type: "string_too_long"})
	}
	return vs
}

// DocType is a document type (interface.md DocTypeOut).
type DocType struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description *string    `json:"description"`
	Fields      []DocField `json:"fields"`
	Workflow    Workflow   `json:"workflow"`
	// RuleCount is the number of validation rules the fields imply (see
	// Rules).
	RuleCount int `json:"rule_count"`
	// Rules (an extension) lists those rules.
	Rules []RuleInfo `json:"rules"`
	// TemplateID is the template the type was made from, if any.
	TemplateID *string   `json:"template_id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func (t *DocType) field(key string) (DocField, bool) {
	for _, f := range t.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return DocField{}, false
}

// DocTypeIn creates a document type.
type DocTypeIn struct {
	Name        string      `json:"name" jsonschema:"required,minLength=1,maxLength=160"`
	Description *string     `json:"description,omitempty" jsonschema:"nullable,maxLength=2000"`
	Fields      []DocField  `json:"fields,omitempty" jsonschema:"maxItems=100"`
	Workflow    *WorkflowIn `json:"workflow,omitempty" jsonschema:"nullable"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in DocTypeIn) Validate() []errs.Violation {
	vs := validateName(in.Name, true, "name")
	vs = append(vs, validateDescription(in.Description, "description")...)
	vs = append(vs, validateFields(in.Fields, "fields")...)
	return append(vs, in.Workflow.validate("workflow")...)
}

// DocTypePatch changes a document type; only the keys present apply.
// In JSON a key given as null clears it: description to null, fields to
// none, workflow to the defaults. A null name is ignored.
type DocTypePatch struct {
	Name        *string     `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=160"`
	Description *string     `json:"description,omitempty" jsonschema:"nullable,maxLength=2000"`
	Fields      *[]DocField `json:"fields,omitempty" jsonschema:"nullable,maxItems=100"`
	Workflow    *WorkflowIn `json:"workflow,omitempty" jsonschema:"nullable"`
	// Clear names the keys set to null: "description", "fields",
	// "workflow". UnmarshalJSON fills it.
	Clear []string `json:"-"`
}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *DocTypePatch) UnmarshalJSON(b []byte) error {
	type plain DocTypePatch
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err error
	if v.Clear, err = nullKeys(b, "description", "fields", "workflow"); err != nil {
		return err
	}
	*p = DocTypePatch(v)
	return nil
}

// nullKeys returns which of keys the JSON object b sets to null.
func nullKeys(b []byte, keys ...string) ([]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		if r, ok := raw[k]; ok && bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			out = append(out, k)
		}
	}
	return out, nil
}

// reshape applies to t the fields and workflow of a patch (or of a
// what-if's candidate): fields replace t's when given, and are none when
// clear names "fields"; the workflow's keys apply over t's, or over the
// default workflow when clear names "workflow".
func (t *DocType) reshape(fields *[]DocField, wf *WorkflowIn, clear []string) {
	if fields != nil {
		t.Fields = normalizeFields(*fields)
	} else if slices.Contains(clear, "fields") {
		t.Fields = nil
	}
	if slices.Contains(clear, "workflow") {
		t.Workflow = DefaultWorkflow()
	}
	t.Workflow = wf.apply(t.Workflow)
}

// NoExtraProperties makes a field the patch does not take a 422.
func (DocTypePatch) NoExtraProperties() {}

func (p DocTypePatch) clears(k string) bool { return slices.Contains(p.Clear, k) }

// Validate reports every violation of p, located at its field names; the
// HTTP API puts them under "body".
func (p DocTypePatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Name != nil {
		vs = append(vs, validateName(*p.Name, true, "name")...)
	}
	vs = append(vs, validateDescription(p.Description, "description")...)
	if p.Fields != nil {
		vs = append(vs, validateFields(*p.Fields, "fields")...)
	}
	return append(vs, p.Workflow.validate("workflow")...)
}

// DraftIn makes a document type from a template (interface.md DraftIn).
type DraftIn struct {
	TemplateID string  `json:"template_id" jsonschema:"required,minLength=1,maxLength=80"`
	Name       *string `json:"name,omitempty" jsonschema:"nullable,maxLength=200"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in DraftIn) Validate() []errs.Violation {
	var vs []errs.Violation
	switch n := utf8.RuneCountInString(in.TemplateID); {
	case strings.TrimSpace(in.TemplateID) == "":
		vs = append(vs, errs.Violation{Loc: []any{"template_id"}, Msg: "is required", Type: "missing"})
	case n > 80:
		vs = append(vs, errs.Violation{Loc: []any{"template_id"}, Msg: "must be at most 80 characters", Type: "string_too_long"})
	}
	if in.Name != nil && utf8.RuneCountInString(*in.Name) > MaxDraftNameLen {
		vs = append(vs, errs.Violation{Loc: []any{"name"},
			Msg: fmt.Sprintf("must be at most %d characters", MaxDraftNameLen), Type: "string_too_long"})
	}
	return vs
}

func validateName(name string, required bool, loc ...any) []errs.Violation {
	n := utf8.RuneCountInString(strings.TrimSpace(name))
	switch {
	case n == 0 && required:
		return []errs.Violation{{Loc: loc, Msg: "must be at least 1 character", Type: "string_too_short"}}
	case n > MaxTypeNameLen:
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at most %d characters", MaxTypeNameLen), Type: "string_too_long"}}
	}
	return nil
}

func validateDescription(d *string, loc ...any) []errs.Violation {
	if d != nil && utf8.RuneCountInString(*d) > MaxDescriptionLen {
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at most %d characters", MaxDescriptionLen), Type: "string_too_long"}}
	}
	return nil
}

// validateFields checks a type's fields: bounds, unique keys, and that
// every rule compiles (extract.Field.Check).
func validateFields(fields []DocField, loc ...any) []errs.Violation {
	var vs []errs.Violation
	at := func(parts ...any) []any { return append(slices.Clone(loc), parts...) }
	add := func(typ, msg string, parts ...any) {
		vs = append(vs, errs.Violation{Loc: at(parts...), Msg: msg, Type: typ})
	}
	if len(fields) > MaxFields {
		add("too_long", fmt.Sprintf("must have at most %d items", MaxFields))
		return vs
	}
	seen := map[string]bool{}
	for i, f := range fields {
		switch {
		case f.Key == "":
			add("missing", "is required", i, "key")
		case !reFieldKey.MatchString(f.Key):
			add("string_pattern_mismatch", "must be lowercase letters, digits and '_', starting with a letter, at most 40 characters", i, "key")
		case seen[f.Key]:
			add("value_error", fmt.Sprintf("the key %q is used by another field", f.Key), i, "key")
		}
		seen[f.Key] = true
		switch n := utf8.RuneCountInString(strings.TrimSpace(f.Label)); {
		case n == 0:
			add("string_too_short", "must be at least 1 character", i, "label")
		case n > MaxLabelLen:
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxLabelLen), i, "label")
		}
		if f.Type != "" && !slices.Contains(extract.Types(), f.Type) {
			add("enum", "must be one of "+strings.Join(extract.Types(), ", "), i, "type")
		}
		if f.Type == extract.TypeEnum && len(f.Options) == 0 {
			add("missing", "an enum field needs options", i, "options")
		}
		if len(f.Options) > MaxOptions {
			add("too_long", fmt.Sprintf("must have at most %d items", MaxOptions), i, "options")
		}
		for j, o := range f.Options {
			if n := utf8.RuneCountInString(strings.TrimSpace(o)); n == 0 || n > MaxOptionLen {
				add("value_error", fmt.Sprintf("an option must be 1 to %d characters", MaxOptionLen), i, "options", j)
			}
		}
		if r := f.Extract; r != nil {
			vs = append(vs, validateRule(r, at(i, "extract"))...)
		}
		for _, v := range f.toExtract().Check() {
			// Key, type, options and rule problems are reported above in
			// the API's terms; Check adds what only compiling finds.
			if len(v.Loc) >= 2 && v.Loc[0] == "extract" && (v.Loc[1] == "pattern" || v.Loc[1] == "group") {
				if r := f.Extract; r != nil && r.Pattern != "" && len(r.Pattern) <= MaxPatternLen {
					vs = append(vs, errs.Violation{Loc: append(at(i), v.Loc...), Msg: v.Msg, Type: v.Type})
				}
			}
		}
	}
	return vs
}

// validateRule checks the extract record's discriminated shape: label
// rules take label and aliases, regex rules pattern and group.
func validateRule(r *extract.Rule, loc []any) []errs.Violation {
	var vs []errs.Violation
	add := func(typ, msg string, parts ...any) {
		vs = append(vs, errs.Violation{Loc: append(slices.Clone(loc), parts...), Msg: msg, Type: typ})
	}
	switch r.Method {
	case extract.MethodLabel:
		if r.Pattern != "" {
			add("extra_forbidden", "a label rule takes no pattern", "pattern")
		}
		if r.Group != nil {
			add("extra_forbidden", "a label rule takes no group", "group")
		}
		if utf8.RuneCountInString(r.Label) > MaxLabelLen {
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxLabelLen), "label")
		}
		if len(r.Aliases) > MaxAliases {
			add("too_long", fmt.Sprintf("must have at most %d items", MaxAliases), "aliases")
		}
		for j, a := range r.Aliases {
			if n := utf8.RuneCountInString(strings.TrimSpace(a)); n == 0 || n > MaxLabelLen {
				add("value_error", fmt.Sprintf("an alias must be 1 to %d characters", MaxLabelLen), "aliases", j)
			} else if !hasWord(a) {
				add("value_error", "an alias needs a letter or digit", "aliases", j)
			}
		}
		if r.Label != "" && !hasWord(r.Label) {
			add("value_error", "a label needs a letter or digit", "label")
		}
	case extract.MethodRegex:
		if r.Label != "" {
			add("extra_forbidden", "a regex rule takes no label", "label")
		}
		if len(r.Aliases) > 0 {
			add("extra_forbidden", "a regex rule takes no aliases", "aliases")
		}
		switch {
		case r.Pattern == "":
			add("missing", "is required", "pattern")
		case len(r.Pattern) > MaxPatternLen:
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxPatternLen), "pattern")
		}
	case "":
		add("missing", "is required (label or regex)", "method")
	default:
		add("enum", "must be one of label, regex", "method")
	}
	return vs
}

func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

func normalizeFields(fields []DocField) []DocField {
	out := make([]DocField, len(fields))
	for i, f := range fields {
		f.Label = strings.TrimSpace(f.Label)
		if f.Type == "" {
			f.Type = extract.TypeText
		}
		if len(f.Options) == 0 {
			f.Options = nil
		}
		out[i] = f
	}
	return out
}
