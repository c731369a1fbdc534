package decisions

import (
	"bytes"
	"encoding/json"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/bas-platform/bas/store"
)

// Default thresholds (interface.md 2.8).
const (
	DefaultAuto    = 0.9
	DefaultSuggest = 0.6
)

// Modes of an evaluation.
const (
	ModeAuto    = "auto"
	ModeSuggest = "suggest"
	ModeManual  = "manual"
)

// Bounds of a Decision that interface.md leaves open (documented in the API
// reference).
const (
	MaxNameLen        = 80
	MaxDescriptionLen = 2000
	MaxSchemaBytes    = 64 << 10
)

// namePattern keeps names safe in a URL path segment.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Decision is a named decision the workspace lets AI make (interface.md 2.8;
// no extra properties): what it is given (input_schema), what it answers
// (output_schema), and how confident it must be to act alone (thresholds).
type Decision struct {
	// Name identifies the decision in paths ("invoice-route").
	Name string `json:"name" jsonschema:"required,minLength=1,maxLength=80,pattern=^[A-Za-z0-9][A-Za-z0-9_.-]*$"`
	// Description says what is decided.
	Description string `json:"description" jsonschema:"required,maxLength=2000"`
	// InputSchema is the JSON Schema every input must satisfy. Defaults to
	// {} (any object), also when given as null. Its top-level "required"
	// list names the fields the built-in provider falls back to matching on.
	InputSchema json.RawMessage `json:"input_schema,omitempty" jsonschema:"type=object,nullable"`
	// OutputSchema is the JSON Schema of an output. Defaults to {}, also
	// when given as null.
	OutputSchema json.RawMessage `json:"output_schema,omitempty" jsonschema:"type=object,nullable"`
	// Thresholds turn a confidence into a mode; null is the defaults.
	Thresholds *Thresholds `json:"thresholds,omitempty" jsonschema:"nullable"`
}

// NoExtraProperties marks Decision as strict: unknown fields are refused.
func (Decision) NoExtraProperties() {}

// Thresholds turn an evaluation's confidence into its mode: auto at or above
// Auto, suggest at or above Suggest, manual below.
type Thresholds struct {
	// Auto defaults to 0.9.
	Auto *float64 `json:"auto,omitempty" jsonschema:"minimum=0,maximum=1"`
	// Suggest defaults to 0.6; it may not exceed Auto.
	Suggest *float64 `json:"suggest,omitempty" jsonschema:"minimum=0,maximum=1"`
}

// Mode returns the mode of confidence c.
func (t Thresholds) Mode(c float64) string {
	switch {
	case t.Auto != nil && c >= *t.Auto:
		return ModeAuto
	case t.Suggest != nil && c >= *t.Suggest:
		return ModeSuggest
	default:
		return ModeManual
	}
}

// Validate reports every violation of d, located at its field names
// (["name"]); the HTTP API puts them under "body".
func (d Decision) Validate() []errs.Violation {
	var vs []errs.Violation
	add := func(typ, msg string, loc ...any) {
		vs = append(vs, errs.Violation{Loc: loc, Msg: msg, Type: typ})
	}
	switch n := utf8.RuneCountInString(d.Name); {
	case n == 0:
		add("string_too_short", "must be at least 1 character", "name")
	case n > MaxNameLen:
		add("string_too_long", "must be at most 80 characters", "name")
	case !namePattern.MatchString(d.Name):
		add("string_pattern_mismatch", "must start with a letter or digit and hold only letters, digits, '_', '.' and '-'", "name")
	}
	if utf8.RuneCountInString(d.Description) > MaxDescriptionLen {
		add("string_too_long", "must be at most 2000 characters", "description")
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"input_schema", d.InputSchema}, {"output_schema", d.OutputSchema}} {
		if absent(f.raw) {
			continue
		}
		if len(f.raw) > MaxSchemaBytes {
			add("too_long", "must be at most 64 KiB of JSON", f.name)
			continue
		}
		if !isObject(f.raw) {
			add("type_error", "must be an object", f.name)
			continue
		}
		if _, err := schema.Compile(f.raw); err != nil {
			add("value_error", "is not a valid JSON Schema: "+publicSchemaError(err), f.name)
		}
	}
	if t := d.Thresholds; t != nil {
		for _, f := range []struct {
			name string
			v    *float64
		}{{"auto", t.Auto}, {"suggest", t.Suggest}} {
			switch {
			case f.v == nil:
			case *f.v < 0:
				add("greater_than_equal", "must be at least 0", "thresholds", f.name)
			case *f.v > 1:
				add("less_than_equal", "must be at most 1", "thresholds", f.name)
			}
		}
		auto, suggest := d.thresholds()
		if suggest > auto && inUnit(auto) && inUnit(suggest) {
			add("value_error", "must not exceed thresholds.auto", "thresholds", "suggest")
		}
	}
	return vs
}

func inUnit(f float64) bool { return f >= 0 && f <= 1 }

// thresholds returns d's thresholds with defaults applied.
func (d Decision) thresholds() (auto, suggest float64) {
	auto, suggest = DefaultAuto, DefaultSuggest
	if d.Thresholds != nil {
		if d.Thresholds.Auto != nil {
			auto = *d.Thresholds.Auto
		}
		if d.Thresholds.Suggest != nil {
			suggest = *d.Thresholds.Suggest
		}
	}
	return auto, suggest
}

// withDefaults returns d with its defaults applied: empty schemas become {}
// and both thresholds are set.
func (d Decision) withDefaults() Decision {
	if absent(d.InputSchema) {
		d.InputSchema = json.RawMessage(`{}`)
	}
	if absent(d.OutputSchema) {
		d.OutputSchema = json.RawMessage(`{}`)
	}
	auto, suggest := d.thresholds()
	d.Thresholds = &Thresholds{Auto: &auto, Suggest: &suggest}
	return d
}

// absent reports whether a schema field was left out: empty, or JSON null
// (a Decision decodes null into the raw text "null").
func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

func publicSchemaError(err error) string {
	if msg := errs.PublicMessage(err); msg != "" {
		return msg
	}
	return err.Error()
}

// Record is a stored decision: the Decision with its defaults applied, its
// id and who made it when.
type Record struct {
	Decision
	// ID is unique across recreations of the same name ("dec_..."); a
	// decision deleted and made again starts with no cases.
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
}

var records = &store.Collection[Record]{
	Name:     "decision",
	ID:       func(r *Record) string { return r.Name },
	NotFound: "decision not found",
}
