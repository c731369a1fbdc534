package process

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/cockroachdb/errors"
)

// The checks a validate rule can make.
const (
	CheckRequired   = "required"
	CheckType       = "type"
	CheckMin        = "min"
	CheckMax        = "max"
	CheckMinLength  = "min_length"
	CheckMaxLength  = "max_length"
	CheckEquals     = "equals"
	CheckNotEquals  = "not_equals"
	CheckMatches    = "matches"
	CheckIn         = "in"
	CheckNotIn      = "not_in"
	CheckSumEquals  = "sum_equals"
	CheckBefore     = "before"
	CheckAfter      = "after"
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// checks lists every check a validate rule can make.
func checks() []string {
	return []string{CheckRequired, CheckType, CheckMin, CheckMax, CheckMinLength, CheckMaxLength,
		CheckEquals, CheckNotEquals, CheckMatches, CheckIn, CheckNotIn, CheckSumEquals, CheckBefore, CheckAfter}
}

// ValueTypes lists the types a "type" check can require.
func ValueTypes() []string {
	return []string{"string", "number", "integer", "boolean", "object", "array", "date", "email"}
}

// ValidateConfig configures a validate step: check Record against Rules.
// Every issue cites its evidence.
type ValidateConfig struct {
	// Record is the object to check: usually a reference such as
	// "${steps.intake.fields}", or an object written in place.
	Record any `json:"record" jsonschema:"required"`
	// Rules are checked in order.
	Rules []ValidateRule `json:"rules" jsonschema:"required,minItems=1,maxItems=200"`
	// StopOnError stops at the first issue of severity error.
	StopOnError bool `json:"stop_on_error,omitempty"`
}

// ValidateRule is one check of a validate step.
//
// Every check but required passes when the field is missing or null (pair it
// with a required rule to demand the field). Numbers compare exactly
// whatever their JSON form; strings exactly; no check converts a string to
// a number.
//
//	required    the field has a value that is not null, "" or an empty list
//	type        the value is of type Value: string, number, integer, boolean,
//	            object, array, date (YYYY-MM-DD or RFC 3339) or email
//	min, max    the number is at least (at most) Value (or ValueField's value)
//	min_length, max_length
//	            the string (in characters) or list has at least (at most)
//	            Value items
//	equals, not_equals
//	            the value equals (differs from) Value (or ValueField's value);
//	            numbers equal within ToleranceCents
//	matches     the string matches the regular expression Value (RE2)
//	in, not_in  the value is (is not) one of the list Value
//	sum_equals  the sum of the Fields equals the field within ToleranceCents
//	            (a missing addend counts as 0)
//	before, after
//	            the date or time is before (after) Value (or ValueField's
//	            value); dates are YYYY-MM-DD or RFC 3339
type ValidateRule struct {
	// ID names the rule in issues and feedback. Defaults to
	// "<check>:<field>" ("required:invoice_number"); ids are unique within
	// a step.
	ID string `json:"id,omitempty" jsonschema:"maxLength=80"`
	// Field is the dotted path of the checked value in the record.
	Field string `json:"field" jsonschema:"required,minLength=1,maxLength=300"`
	// Check is what the rule checks (see ValidateRule).
	Check string `json:"check" jsonschema:"required,enum=required,enum=type,enum=min,enum=max,enum=min_length,enum=max_length,enum=equals,enum=not_equals,enum=matches,enum=in,enum=not_in,enum=sum_equals,enum=before,enum=after"`
	// Value is the operand of the check.
	Value any `json:"value,omitempty"`
	// ValueField, instead of Value, names another field of the record whose
	// value is the operand (min, max, equals, not_equals, before, after).
	ValueField string `json:"value_field,omitempty" jsonschema:"maxLength=300"`
	// Fields are the addends of sum_equals.
	Fields []string `json:"fields,omitempty" jsonschema:"maxItems=50"`
	// ToleranceCents is how far apart two numbers may be and still be
	// equal (equals, not_equals, sum_equals). Defaults to 0.
	ToleranceCents int64 `json:"tolerance_cents,omitempty" jsonschema:"minimum=0"`
	// Severity is error or warning. Defaults to error.
	Severity string `json:"severity,omitempty" jsonschema:"enum=error,enum=warning"`
	// Message replaces the generated message of the rule's issues.
	Message string `json:"message,omitempty" jsonschema:"maxLength=500"`
}

// RuleID returns the rule's id: ID, or "<check>:<field>".
func (r ValidateRule) RuleID() string {
	if r.ID != "" {
		return r.ID
	}
	return r.Check + ":" + r.Field
}

func (r ValidateRule) severity() string {
	if r.Severity == "" {
		return SeverityError
	}
	return r.Severity
}

// The statuses of a validate step's output.
const (
	ValidationPassed   = "passed"
	ValidationWarnings = "warnings"
	ValidationErrors   = "errors"
)

// ValidateOutput is a validate step's output.
type ValidateOutput struct {
	// Status is passed (no issue), warnings (only warnings) or errors.
	Status string `json:"status"`
	// Issues are the failed rules, in rule order.
	Issues []Issue `json:"issues"`
}

// Issue is one failed rule: its RuleID, the rule's Field (never null: a
// rule checks a path), its Severity, the Message and the Evidence (the
// issue record every check that reports findings writes).
type Issue = capability.Issue

// Evidence is what an issue is based on: the value found at the field and,
// for comparisons, the values it was compared with (Field, Present, Found,
// Expected and Values of the record every check that cites evidence
// writes).
type Evidence = capability.Evidence

// Validate checks record against cfg's rules. It is pure and deterministic.
// A rule whose operand is unusable (a pattern that does not compile, a
// non-list operand of in) is reported as an issue of that rule rather than
// failing the step; definition-time validation catches such rules first.
func Validate(cfg ValidateConfig, record map[string]any) ValidateOutput {
	out := ValidateOutput{Status: ValidationPassed, Issues: []Issue{}}
	for _, r := range cfg.Rules {
		issue, failed := checkRule(r, record)
		if !failed {
			continue
		}
		issue.RuleID = r.RuleID()
		issue.Field = capability.IssueField(r.Field)
		issue.Severity = r.severity()
		issue.Evidence.Field = r.Field
		if r.Message != "" {
			issue.Message = r.Message
		}
		out.Issues = append(out.Issues, issue)
		if issue.Severity == SeverityError {
			out.Status = ValidationErrors
			if cfg.StopOnError {
				break
			}
		} else if out.Status == ValidationPassed {
			out.Status = ValidationWarnings
		}
	}
	return out
}

// checkRule evaluates one rule; failed reports an issue.
func checkRule(r ValidateRule, record map[string]any) (issue Issue, failed bool) {
	v, present := lookup(record, r.Field)
	ev := Evidence{Present: present, Found: v}
	fail := func(format string, args ...any) (Issue, bool) {
		return Issue{Message: fmt.Sprintf(format, args...), Evidence: ev}, true
	}
	if r.Check == CheckRequired {
		if !present || empty(v) {
			return fail("%s is required", r.Field)
		}
		return Issue{}, false
	}
	if r.Check == CheckSumEquals {
		return checkSum(r, record, ev)
	}
	if !present || v == nil {
		return Issue{}, false
	}
	// The operand: Value, or the value of ValueField.
	operand := r.Value
	if r.ValueField != "" {
		w, ok := lookup(record, r.ValueField)
		ev.Values = map[string]any{r.ValueField: w}
		if !ok || w == nil {
			return fail("%s cannot be compared: %s has no value", r.Field, r.ValueField)
		}
		operand = w
	}
	ev.Expected = operand
	name := operandName(r, operand)
	switch r.Check {
	case CheckType:
		typ, _ := operand.(string)
		if !hasType(v, typ) {
			return fail("%s must be %s, found %s", r.Field, article(typ), describe(v))
		}
	case CheckMin, CheckMax:
		c, ok := jsonvalue.CompareNumbers(v, operand)
		if !ok {
			return fail("%s must be a number to compare with %s, found %s", r.Field, name, describe(v))
		}
		if r.Check == CheckMin && c < 0 {
			return fail("%s must be at least %s, found %s", r.Field, name, text(v))
		}
		if r.Check == CheckMax && c > 0 {
			return fail("%s must be at most %s, found %s", r.Field, name, text(v))
		}
	case CheckMinLength, CheckMaxLength:
		n, ok := length(v)
		if !ok {
			return fail("%s must be a string or a list, found %s", r.Field, describe(v))
		}
		limit, ok := jsonvalue.AsRat(operand)
		if !ok {
			return fail("%s cannot be checked: the length limit %s is not a number", r.Field, text(operand))
		}
		c := new(big.Rat).SetInt64(int64(n)).Cmp(limit)
		if r.Check == CheckMinLength && c < 0 {
			return fail("%s must have at least %s characters or items, found %d", r.Field, text(operand), n)
		}
		if r.Check == CheckMaxLength && c > 0 {
			return fail("%s must have at most %s characters or items, found %d", r.Field, text(operand), n)
		}
	case CheckEquals, CheckNotEquals:
		eq := equalWithin(v, operand, r.ToleranceCents)
		if r.Check == CheckEquals && !eq {
			return fail("%s must equal %s, found %s", r.Field, name, text(v))
		}
		if r.Check == CheckNotEquals && eq {
			return fail("%s must not equal %s, found %s", r.Field, name, text(v))
		}
	case CheckMatches:
		pattern, _ := operand.(string)
		re, err := regexp.Compile(pattern)
		if err != nil {
			return fail("%s cannot be checked: the pattern does not compile", r.Field)
		}
		s, ok := v.(string)
		if !ok {
			return fail("%s must be a string matching %s, found %s", r.Field, pattern, describe(v))
		}
		if !re.MatchString(s) {
			return fail("%s must match %s, found %q", r.Field, pattern, s)
		}
	case CheckIn, CheckNotIn:
		list, ok := jsonvalue.AsList(operand)
		if !ok {
			return fail("%s cannot be checked: the operand is not a list", r.Field)
		}
		found := false
		for _, o := range list {
			if jsonvalue.Equal(v, o) {
				found = true
				break
			}
		}
		if r.Check == CheckIn && !found {
			return fail("%s must be one of %s, found %s", r.Field, text(operand), text(v))
		}
		if r.Check == CheckNotIn && found {
			return fail("%s must not be one of %s, found %s", r.Field, text(operand), text(v))
		}
	case CheckBefore, CheckAfter:
		t, ok := parseTime(v)
		if !ok {
			return fail("%s must be a date (YYYY-MM-DD or RFC 3339), found %s", r.Field, describe(v))
		}
		u, ok := parseTime(operand)
		if !ok {
			return fail("%s cannot be compared: %s is not a date", r.Field, name)
		}
		if r.Check == CheckBefore && !t.Before(u) {
			return fail("%s must be before %s, found %s", r.Field, name, text(v))
		}
		if r.Check == CheckAfter && !t.After(u) {
			return fail("%s must be after %s, found %s", r.Field, name, text(v))
		}
	default:
		return fail("%s cannot be checked: unknown check %q", r.Field, r.Check)
	}
	return Issue{}, false
}

// checkSum evaluates sum_equals: the Fields add up to the field.
func checkSum(r ValidateRule, record map[string]any, ev Evidence) (Issue, bool) {
	fail := func(format string, args ...any) (Issue, bool) {
		return Issue{Message: fmt.Sprintf(format, args...), Evidence: ev}, true
	}
	if !ev.Present || ev.Found == nil {
		return Issue{}, false
	}
	ev.Values = map[string]any{}
	sum := new(big.Rat)
	var bad []string
	for _, f := range r.Fields {
		w, ok := lookup(record, f)
		if !ok || w == nil {
			ev.Values[f] = nil
			continue
		}
		ev.Values[f] = w
		n, ok := jsonvalue.AsRat(w)
		if !ok {
			bad = append(bad, f)
			continue
		}
		sum.Add(sum, n)
	}
	ev.Values["sum"] = ratValue(sum)
	ev.Expected = ratValue(sum)
	total, ok := jsonvalue.AsRat(ev.Found)
	if !ok {
		return fail("%s must be a number, found %s", r.Field, describe(ev.Found))
	}
	if len(bad) > 0 {
		return fail("%s cannot be summed: %s not a number", r.Field, strings.Join(bad, ", ")+pluralIs(len(bad)))
	}
	if !withinCents(total, sum, r.ToleranceCents) {
		return fail("%s must equal the sum of %s (%s), found %s", r.Field, strings.Join(r.Fields, " + "),
			text(ratValue(sum)), text(ev.Found))
	}
	return Issue{}, false
}

func pluralIs(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// operandName names the operand in messages: the other field's path and
// value, or the value.
func operandName(r ValidateRule, operand any) string {
	if r.ValueField != "" {
		return fmt.Sprintf("%s (%s)", r.ValueField, text(operand))
	}
	return text(operand)
}

// empty reports whether a present value counts as missing for required.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(v) == ""
	}
	if l, ok := jsonvalue.AsList(v); ok {
		return len(l) == 0
	}
	return false
}

// equalWithin compares two values; two numbers are equal when they are at
// most tolerance apart.
func equalWithin(a, b any, tolerance int64) bool {
	ar, aok := jsonvalue.AsRat(a)
	br, bok := jsonvalue.AsRat(b)
	if aok && bok {
		return withinCents(ar, br, tolerance)
	}
	return jsonvalue.Equal(a, b)
}

// withinCents reports |a-b| <= tolerance.
func withinCents(a, b *big.Rat, tolerance int64) bool {
	d := new(big.Rat).Sub(a, b)
	d.Abs(d)
	return d.Cmp(new(big.Rat).SetInt64(tolerance)) <= 0
}

// length is a string's length in characters or a list's length.
func length(v any) (int, bool) {
	if s, ok := v.(string); ok {
		return utf8.RuneCountInString(s), true
	}
	if l, ok := jsonvalue.AsList(v); ok {
		return len(l), true
	}
	return 0, false
}

// hasType reports whether v is of the named type.
func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		return jsonvalue.IsNumber(v)
	case "integer":
		r, ok := jsonvalue.AsRat(v)
		return ok && r.IsInt()
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := jsonvalue.AsObject(v)
		return ok
	case "array":
		_, ok := jsonvalue.AsList(v)
		return ok
	case "date":
		_, ok := parseTime(v)
		return ok
	case "email":
		s, ok := v.(string)
		if !ok {
			return false
		}
		addr, err := extract.ParseEmail(s)
		return err == nil && addr == strings.TrimSpace(s)
	}
	return false
}

// parseTime reads a date (YYYY-MM-DD, as UTC midnight) or an RFC 3339 time.
func parseTime(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// describe names v's JSON type and value for messages.
func describe(v any) string {
	switch {
	case v == nil:
		return "null"
	case jsonvalue.IsNumber(v):
		return "the number " + text(v)
	}
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	}
	if _, ok := jsonvalue.AsObject(v); ok {
		return "an object"
	}
	if _, ok := jsonvalue.AsList(v); ok {
		return "a list"
	}
	return text(v)
}

func article(typ string) string {
	switch typ {
	case "object", "array", "integer", "email":
		return "an " + typ
	case "":
		return "a known type"
	}
	return "a " + typ
}

// validateStep is the validate step type (Validate).
func validateStep() StepType {
	return Define(StepDef[ValidateConfig]{
		Type: StepValidate, Label: "Validate",
		Description: "Checks a record against rules; every exception cites its evidence.",
		Check:       checkValidate,
		Eval: func(cfg *ValidateConfig, _ map[string]any) (any, error) {
			record, ok := cfg.Record.(map[string]any)
			if !ok {
				return nil, errors.New("record must be an object")
			}
			return Validate(*cfg, record), nil
		},
	})
}

func checkValidate(cfg *ValidateConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	checkSource(&v, cfg.Record, at(loc, "record"), "an object", true)
	ids := map[string]int{}
	for i, r := range cfg.Rules {
		rloc := at(loc, "rules", i)
		checkPath(&v, r.Field, at(rloc, "field"), true)
		if r.ValueField != "" {
			checkPath(&v, r.ValueField, at(rloc, "value_field"), false)
		}
		id := r.RuleID()
		if first, dup := ids[id]; dup {
			v.add(at(rloc, "id"), "value_error", "rule id %s duplicates rule %d's: give one of them an id", id, first)
		} else {
			ids[id] = i
		}
		checkRuleOperand(&v, r, rloc)
	}
	return v.vs
}

// checkRuleOperand checks that a rule has the operand its check needs.
func checkRuleOperand(v *violations, r ValidateRule, loc []any) {
	vloc := at(loc, "value")
	ref := false
	if s, ok := r.Value.(string); ok && isReference(s) {
		ref = true
	}
	hasValue := r.Value != nil
	comparable := map[string]bool{CheckMin: true, CheckMax: true, CheckEquals: true, CheckNotEquals: true,
		CheckBefore: true, CheckAfter: true, CheckIn: true, CheckNotIn: true}
	if r.ValueField != "" && !comparable[r.Check] {
		v.add(at(loc, "value_field"), "value_error", "is not used by the %s check", r.Check)
	}
	if len(r.Fields) > 0 && r.Check != CheckSumEquals {
		v.add(at(loc, "fields"), "value_error", "is only used by the sum_equals check")
	}
	if comparable[r.Check] {
		switch {
		case hasValue && r.ValueField != "":
			v.add(vloc, "value_error", "give value or value_field, not both")
			return
		case !hasValue && r.ValueField == "":
			v.add(vloc, "missing", "the %s check needs a value (or a value_field)", r.Check)
			return
		case r.ValueField != "" || ref:
			return
		}
	}
	switch r.Check {
	case CheckType:
		s, ok := r.Value.(string)
		if !ok || !slices.Contains(ValueTypes(), s) {
			v.add(vloc, "enum", "must be one of %s", strings.Join(ValueTypes(), ", "))
		}
	case CheckMin, CheckMax:
		if !jsonvalue.IsNumber(r.Value) {
			v.add(vloc, "type_error", "must be a number")
		}
	case CheckMinLength, CheckMaxLength:
		n, ok := jsonvalue.AsRat(r.Value)
		if !ok || !n.IsInt() || n.Sign() < 0 {
			v.add(vloc, "type_error", "must be a whole number of at least 0")
		}
	case CheckMatches:
		s, ok := r.Value.(string)
		if !ok || s == "" {
			v.add(vloc, "missing", "the matches check needs a pattern")
			break
		}
		if _, err := regexp.Compile(s); err != nil {
			v.add(vloc, "value_error", "is not a valid RE2 pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	case CheckIn, CheckNotIn:
		if _, ok := r.Value.([]any); !ok {
			v.add(vloc, "type_error", "must be a list")
		}
	case CheckBefore, CheckAfter:
		if _, ok := parseTime(r.Value); !ok {
			v.add(vloc, "value_error", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
		}
	case CheckSumEquals:
		if len(r.Fields) == 0 {
			v.add(at(loc, "fields"), "missing", "the sum_equals check needs the fields to add up")
		}
		for j, f := range r.Fields {
			checkPath(v, f, at(loc, "fields", j), true)
		}
	}
}
