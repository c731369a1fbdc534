package automation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// Field is one field of a Patch: absent (the zero value), null (clear it)
// or a value.
type Field[T any] struct {
	set  bool
	null bool
	v    T
}

// Set returns a Field holding v.
func Set[T any](v T) Field[T] { return Field[T]{set: true, v: v} }

// Null returns a Field that clears its setting.
func Null[T any]() Field[T] { return Field[T]{set: true, null: true} }

// Present reports whether the field was given (a value or null).
func (f Field[T]) Present() bool { return f.set }

// IsNull reports whether the field was given as null.
func (f Field[T]) IsNull() bool { return f.set && f.null }

// Value returns the field's value and whether it holds one (present and not
// null).
func (f Field[T]) Value() (T, bool) { return f.v, f.set && !f.null }

// Bounds of AutomationPatch (interface.md 2.9 and 8).
const (
	MaxPercent             = 100
	MaxSamplePercent       = 50
	MaxDailyLimit          = 1_000_000
	MinExceptionPercent    = 1
	MinExceptionDays       = 1
	MaxExceptionDays       = 90
	MaxReasonLen           = 500
	MaxBreakGlassReasonLen = 2000
	MinAgreement           = 0.5
	MinRampDecisions       = 5
	MinRollbackDecisions   = 3
	MaxDecisionsWindow     = 1000
)

// Patch is AutomationPatch (interface.md 2.9): every field optional and
// nullable. A PATCH changes only the fields present; null clears a field (a
// process then inherits the workspace's value, the workspace falls back to
// the default). The clear_* flags clear the daily limit and the exception;
// null is the same as false for them.
type Patch struct {
	AutoRamp             Field[bool]
	Paused               Field[bool]
	PausedReason         Field[string]
	Percent              Field[int]
	MaxPercent           Field[int]
	SamplePercent        Field[int]
	DailyLimit           Field[int]
	ClearDailyLimit      Field[bool]
	ExceptionPercent     Field[int]
	ExceptionDays        Field[int]
	ExceptionReason      Field[string]
	ClearException       Field[bool]
	RampMinAgreement     Field[float64]
	RampMinDecisions     Field[int]
	RollbackAgreement    Field[float64]
	RollbackMinDecisions Field[int]
	RampMinWhatIf        Field[float64]
	// BreakGlassReason applies a widening change at once when four-eyes is
	// on; the change is audited with it.
	BreakGlassReason Field[string]
}

// fieldKind is the JSON type of a patch field.
type fieldKind int

const (
	kindBool fieldKind = iota
	kindInt
	kindNumber
	kindString
)

// patchField describes one field of Patch: its JSON name, type, bounds and
// accessor (exactly one of b, i, f, s is set).
type patchField struct {
	name     string
	kind     fieldKind
	min, max float64 // numbers: inclusive bounds; strings: max length
	b        func(*Patch) *Field[bool]
	i        func(*Patch) *Field[int]
	f        func(*Patch) *Field[float64]
	s        func(*Patch) *Field[string]
}

// patchFields lists Patch's fields in interface.md's order.
var patchFields = []patchField{
	{name: "auto_ramp", kind: kindBool, b: func(p *Patch) *Field[bool] { return &p.AutoRamp }},
	{name: "paused", kind: kindBool, b: func(p *Patch) *Field[bool] { return &p.Paused }},
	{name: "paused_reason", kind: kindString, max: MaxReasonLen, s: func(p *Patch) *Field[string] { return &p.PausedReason }},
	{name: "percent", kind: kindInt, max: MaxPercent, i: func(p *Patch) *Field[int] { return &p.Percent }},
	{name: "max_percent", kind: kindInt, max: MaxPercent, i: func(p *Patch) *Field[int] { return &p.MaxPercent }},
	{name: "sample_percent", kind: kindInt, max: MaxSamplePercent, i: func(p *Patch) *Field[int] { return &p.SamplePercent }},
	{name: "daily_limit", kind: kindInt, max: MaxDailyLimit, i: func(p *Patch) *Field[int] { return &p.DailyLimit }},
	{name: "clear_daily_limit", kind: kindBool, b: func(p *Patch) *Field[bool] { return &p.ClearDailyLimit }},
	{name: "exception_percent", kind: kindInt, min: MinExceptionPercent, max: MaxPercent, i: func(p *Patch) *Field[int] { return &p.ExceptionPercent }},
	{name: "exception_days", kind: kindInt, min: MinExceptionDays, max: MaxExceptionDays, i: func(p *Patch) *Field[int] { return &p.ExceptionDays }},
	{name: "exception_reason", kind: kindString, max: MaxReasonLen, s: func(p *Patch) *Field[string] { return &p.ExceptionReason }},
	{name: "clear_exception", kind: kindBool, b: func(p *Patch) *Field[bool] { return &p.ClearException }},
	{name: "ramp_min_agreement", kind: kindNumber, min: MinAgreement, max: 1, f: func(p *Patch) *Field[float64] { return &p.RampMinAgreement }},
	{name: "ramp_min_decisions", kind: kindInt, min: MinRampDecisions, max: MaxDecisionsWindow, i: func(p *Patch) *Field[int] { return &p.RampMinDecisions }},
	{name: "rollback_agreement", kind: kindNumber, min: MinAgreement, max: 1, f: func(p *Patch) *Field[float64] { return &p.RollbackAgreement }},
	{name: "rollback_min_decisions", kind: kindInt, min: MinRollbackDecisions, max: MaxDecisionsWindow, i: func(p *Patch) *Field[int] { return &p.RollbackMinDecisions }},
	{name: "ramp_min_what_if", kind: kindNumber, min: 0, max: 1, f: func(p *Patch) *Field[float64] { return &p.RampMinWhatIf }},
	{name: "break_glass_reason", kind: kindString, max: MaxBreakGlassReasonLen, s: func(p *Patch) *Field[string] { return &p.BreakGlassReason }},
}

// ParsePatch decodes an AutomationPatch body and reports every violation at
// once: malformed JSON (json_invalid), a field of the wrong JSON type
// (type_error), a bound (greater_than_equal, less_than_equal,
// string_too_long) and the rules between fields (see Validate). They are
// located at the patch's field names (["percent"]), one of the body as a
// whole at an empty location; the HTTP API puts them under "body". Unknown
// fields are ignored; an empty body is an empty patch.
func ParsePatch(raw []byte) (Patch, error) {
	var p Patch
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return p, errs.Validation(errs.Violation{Loc: []any{}, Msg: "is not valid JSON", Type: "json_invalid"})
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return p, errs.Validation(errs.Violation{Loc: []any{}, Msg: "must be an object", Type: "type_error"})
	}
	var vs []errs.Violation
	extra := make([]string, 0, len(fields))
	for k := range fields {
		if !slices.ContainsFunc(patchFields, func(pf patchField) bool { return pf.name == k }) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		vs = append(vs, errs.Violation{Loc: []any{k}, Msg: "is not a setting a patch takes", Type: "extra_forbidden"})
	}
	for _, pf := range patchFields {
		v, ok := fields[pf.name]
		if !ok {
			continue
		}
		if viol := pf.decode(&p, v); viol != nil {
			vs = append(vs, *viol)
		}
	}
	if len(vs) > 0 {
		// Report the rules between fields only for fields that decoded.
		vs = append(vs, p.Validate()...)
		return p, errs.Validation(dedupe(vs)...)
	}
	return p, errs.Validation(p.Validate()...)
}

// dedupe drops violations at a location already reported.
func dedupe(vs []errs.Violation) []errs.Violation {
	seen := map[string]bool{}
	out := vs[:0]
	for _, v := range vs {
		k := fmt.Sprint(v.Loc)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, v)
	}
	return out
}

// decode sets pf in p from raw, or returns a type violation.
func (pf patchField) decode(p *Patch, raw json.RawMessage) *errs.Violation {
	loc := []any{pf.name}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		switch pf.kind {
		case kindBool:
			*pf.b(p) = Null[bool]()
		case kindInt:
			*pf.i(p) = Null[int]()
		case kindNumber:
			*pf.f(p) = Null[float64]()
		case kindString:
			*pf.s(p) = Null[string]()
		}
		return nil
	}
	switch pf.kind {
	case kindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return &errs.Violation{Loc: loc, Msg: "must be a boolean", Type: "type_error"}
		}
		*pf.b(p) = Set(b)
	case kindInt:
		f, err := number(raw)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e15 {
			return &errs.Violation{Loc: loc, Msg: "must be an integer", Type: "type_error"}
		}
		*pf.i(p) = Set(int(f))
	case kindNumber:
		f, err := number(raw)
		if err != nil {
			return &errs.Violation{Loc: loc, Msg: "must be a number", Type: "type_error"}
		}
		*pf.f(p) = Set(f)
	case kindString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return &errs.Violation{Loc: loc, Msg: "must be a string", Type: "type_error"}
		}
		*pf.s(p) = Set(s)
	}
	return nil
}

var errNotNumber = errors.New("not a number")

// number decodes a JSON number (and only a number) as float64.
func number(raw json.RawMessage) (float64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, err
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, errNotNumber
	}
	return num.Float64()
}

// Validate reports every violation of p's bounds and of the rules between
// its fields, located at its field names (the HTTP API puts them under
// "body"):
//   - every bound of interface.md 2.9;
//   - exception_percent, exception_days and a non-empty exception_reason
//     come together (the missing ones are "missing");
//   - clear_exception true cannot come with exception fields, nor
//     clear_daily_limit true with a daily_limit (value_error);
//   - percent may not exceed max_percent when both are given (the service
//     also checks against the stored max_percent).
func (p Patch) Validate() []errs.Violation {
	var vs []errs.Violation
	add := func(field, typ, msg string) {
		vs = append(vs, errs.Violation{Loc: []any{field}, Msg: msg, Type: typ})
	}
	for _, pf := range patchFields {
		switch pf.kind {
		case kindInt:
			if v, ok := pf.i(&p).Value(); ok {
				checkRange(add, pf, float64(v))
			}
		case kindNumber:
			if v, ok := pf.f(&p).Value(); ok {
				checkRange(add, pf, v)
			}
		case kindString:
			if v, ok := pf.s(&p).Value(); ok && utf8.RuneCountInString(v) > int(pf.max) {
				add(pf.name, "string_too_long", fmt.Sprintf("must be at most %d characters", int(pf.max)))
			}
		}
	}
	_, hasPct := p.ExceptionPercent.Value()
	_, hasDays := p.ExceptionDays.Value()
	reason, hasReason := p.ExceptionReason.Value()
	hasReason = hasReason && strings.TrimSpace(reason) != ""
	if hasPct || hasDays || hasReason {
		if !hasPct {
			add("exception_percent", "missing", "is required with exception_days and exception_reason")
		}
		if !hasDays {
			add("exception_days", "missing", "is required with exception_percent")
		}
		if !hasReason {
			add("exception_reason", "missing", "is required with exception_percent: say why")
		}
	}
	if clear, _ := p.ClearException.Value(); clear && (hasPct || hasDays) {
		add("clear_exception", "value_error", "cannot clear the exception and set one at once")
	}
	if clear, _ := p.ClearDailyLimit.Value(); clear {
		if _, ok := p.DailyLimit.Value(); ok {
			add("clear_daily_limit", "value_error", "cannot clear the daily limit and set one at once")
		}
	}
	pct, okPct := p.Percent.Value()
	maxPct, okMax := p.MaxPercent.Value()
	if okPct && okMax && pct > maxPct && pct <= MaxPercent && maxPct >= 0 {
		add("percent", "value_error", fmt.Sprintf("must not exceed max_percent (%d)", maxPct))
	}
	return dedupe(vs)
}

func checkRange(add func(field, typ, msg string), pf patchField, v float64) {
	switch {
	case v < pf.min:
		add(pf.name, "greater_than_equal", "must be at least "+formatBound(pf.min))
	case v > pf.max:
		add(pf.name, "less_than_equal", "must be at most "+formatBound(pf.max))
	}
}

func formatBound(f float64) string {
	if f == math.Trunc(f) && f < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// Empty reports whether p changes nothing (break_glass_reason alone changes
// nothing).
func (p Patch) Empty() bool {
	for _, pf := range patchFields {
		if pf.name == "break_glass_reason" {
			continue
		}
		if pf.present(&p) {
			return false
		}
	}
	return true
}

func (pf patchField) present(p *Patch) bool {
	switch pf.kind {
	case kindBool:
		return pf.b(p).Present()
	case kindInt:
		return pf.i(p).Present()
	case kindNumber:
		return pf.f(p).Present()
	default:
		return pf.s(p).Present()
	}
}

// MarshalJSON encodes the fields present (null for cleared ones), so a
// patch waiting for a second person round-trips through JSON.
func (p Patch) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for _, pf := range patchFields {
		var (
			v       any
			present bool
			null    bool
		)
		switch pf.kind {
		case kindBool:
			f := pf.b(&p)
			v, present, null = f.v, f.Present(), f.IsNull()
		case kindInt:
			f := pf.i(&p)
			v, present, null = f.v, f.Present(), f.IsNull()
		case kindNumber:
			f := pf.f(&p)
			v, present, null = f.v, f.Present(), f.IsNull()
		case kindString:
			f := pf.s(&p)
			v, present, null = f.v, f.Present(), f.IsNull()
		}
		if !present {
			continue
		}
		if null {
			v = nil
		}
		m[pf.name] = v
	}
	return json.Marshal(m)
}

// UnmarshalJSON is ParsePatch: it fails with the validation error.
func (p *Patch) UnmarshalJSON(b []byte) error {
	got, err := ParsePatch(b)
	if err != nil {
		return err
	}
	*p = got
	return nil
}
