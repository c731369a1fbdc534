// Package filter implements the trigger filter language of api.md section 3:
// which events, by the fields of their data, start a process.
//
// A filter is a JSON object mapping a dotted field path of the event's data to
// a condition. All entries must hold; an empty filter (or none) matches every
// event.
//
//	{
//	  "status": "paid",                      // equality
//	  "amount_cents": {"gte": 10000},        // comparison
//	  "customer.country": {"in": ["DE", "AT"]},
//	  "tags": {"contains": "urgent"},
//	  "cancelled_at": {"exists": false},
//	  "due_date": {"gte": "2025-01-01", "lt": "2026-01-01"}
//	}
//
// # Conditions
//
// A value that is not an object means equality. An object is an operator
// object: each key is one of the operators below and every operator in it must
// hold, so {"gte": 1, "lt": 10} is a range. To compare a field with an object
// for equality, write {"eq": {...}}; a plain object is never equality (an
// object key that is not an operator is a parse error, which catches typos
// such as {"gt3": 1}).
//
//	eq        the value equals the operand
//	ne        the value is missing or differs from the operand
//	gt gte    the value is greater than (or equal to) the operand
//	lt lte    the value is less than (or equal to) the operand
//	in        the value equals one of the operand list's elements
//	contains  a string value contains the operand string; a list value has an
//	          element equal to the operand
//	exists    true: the path has a value (null counts); false: it has none
//
// # Semantics
//
//   - Paths walk the data with refs.Lookup: segments name object keys, or
//     indexes of lists ("lines.0.sku"). A path through a value that is not an
//     object or list, or past the end of a list, is missing. A data key that
//     itself contains a dot cannot be addressed.
//   - Every operator but ne and exists fails when the path is missing.
//   - Values compare by the rules of package jsonvalue. Numbers compare
//     numerically, exactly, whatever their Go type (json.Number, float64,
//     int, uint8 ...): 5, 5.0 and 5e0 are equal, and a float stands for its
//     shortest decimal text (a float64 0.1 in the data equals the filter's
//     0.1).
//   - gt, gte, lt and lte compare two numbers numerically or two strings
//     lexically by bytes (so RFC 3339 dates and times in the same format
//     order correctly); any other pair, such as a number and a string, does
//     not hold. Their operands must be numbers or strings.
//   - Equality never converts types: the number 5 does not equal the string
//     "5", and null equals only null. Objects and lists compare deeply with
//     the same rules.
package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/internal/refs"
	"github.com/cockroachdb/errors"
)

// Filter is a parsed trigger filter. The zero value and a nil *Filter match
// everything. A Filter is immutable once parsed and safe for concurrent use.
type Filter struct {
	entries []entry
	// null records that the filter was parsed from nothing or from null, so
	// MarshalJSON writes it back as null.
	null bool
}

// entry is the condition on one path.
type entry struct {
	path string
	// shorthand is true when the condition was written as a plain value
	// (equality); value is that value.
	shorthand bool
	value     any
	// ops is the operator object, sorted by operator name.
	ops []operation
}

type operation struct {
	op  string
	arg any
}

// operators lists the operator names in the order error messages give them.
var operators = []string{"eq", "ne", "gt", "gte", "lt", "lte", "in", "contains", "exists"}

// Parse parses a filter. An empty raw or JSON null is the empty filter, which
// matches everything. Errors are errs.Validation errors carrying every
// violation at once: malformed JSON (json_invalid) or a filter that is not an
// object (type_error) at loc, and for each bad entry a value_error at loc
// followed by the entry's key (an empty path segment, an empty operator object,
// an unknown operator, in without a list, exists without a boolean, gt, gte, lt
// or lte without a number or string).
func Parse(raw json.RawMessage, loc ...any) (*Filter, error) {
	at := func(extra ...any) []any { return append(slices.Clone(loc), extra...) }
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return &Filter{null: true}, nil
	}
	doc, err := decode(trimmed)
	if err != nil {
		return nil, errs.Validation(errs.Violation{Loc: at(), Msg: "is not valid JSON: " + err.Error(), Type: "json_invalid"})
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errs.Validation(errs.Violation{Loc: at(), Msg: "must be an object", Type: "type_error"})
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	f := &Filter{entries: make([]entry, 0, len(keys))}
	var vs []errs.Violation
	bad := func(key, format string, args ...any) {
		vs = append(vs, errs.Violation{Loc: at(key), Msg: fmt.Sprintf(format, args...), Type: "value_error"})
	}
	for _, key := range keys {
		if key == "" || slices.Contains(strings.Split(key, "."), "") {
			bad(key, "is not a field path: use dot-separated names such as customer.country")
			continue
		}
		cond, isOps := obj[key].(map[string]any)
		if !isOps {
			f.entries = append(f.entries, entry{path: key, shorthand: true, value: obj[key]})
			continue
		}
		if len(cond) == 0 {
			bad(key, "operator object must not be empty (use {\"eq\": {}} to match an empty object)")
			continue
		}
		e := entry{path: key}
		valid := true
		for _, op := range sortedKeys(cond) {
			arg := cond[op]
			var problem string
			switch op {
			case "eq", "ne", "contains":
			case "gt", "gte", "lt", "lte":
				if !jsonvalue.IsNumber(arg) {
					if _, ok := arg.(string); !ok {
						problem = fmt.Sprintf("operator %s needs a number or a string", op)
					}
				}
			case "in":
				if _, ok := arg.([]any); !ok {
					problem = "operator in needs a list"
				}
			case "exists":
				if _, ok := arg.(bool); !ok {
					problem = "operator exists needs true or false"
				}
			default:
				problem = fmt.Sprintf("unknown operator %q (use one of: %s)", op, strings.Join(operators, ", "))
			}
			if problem != "" {
				bad(key, "%s", problem)
				valid = false
				continue
			}
			e.ops = append(e.ops, operation{op: op, arg: arg})
		}
		if valid {
			f.entries = append(f.entries, e)
		}
	}
	if len(vs) > 0 {
		return nil, errs.Validation(vs...)
	}
	return f, nil
}

// decode decodes one JSON value keeping numbers exact, and rejects trailing
// data.
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return v, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Roots are the first segments of the paths f's entries look at, each
// once, in the order of the entries: Match reads nothing of data but the
// values under these keys. A nil or empty filter has none.
func (f *Filter) Roots() []string {
	if f == nil {
		return nil
	}
	var roots []string
	for _, e := range f.entries {
		root, _, _ := strings.Cut(e.path, ".")
		if !slices.Contains(roots, root) {
			roots = append(roots, root)
		}
	}
	return roots
}

// Match reports whether data satisfies every entry of f. A nil or empty
// filter matches everything, including nil data.
func (f *Filter) Match(data map[string]any) bool {
	if f == nil {
		return true
	}
	for _, e := range f.entries {
		v, ok := refs.Lookup(data, e.path)
		if e.shorthand {
			if !ok || !jsonvalue.Equal(v, e.value) {
				return false
			}
			continue
		}
		for _, o := range e.ops {
			if !holds(o, v, ok) {
				return false
			}
		}
	}
	return true
}

// holds evaluates one operator on the value v found (ok) at an entry's path.
func holds(o operation, v any, ok bool) bool {
	switch o.op {
	case "exists":
		return ok == o.arg.(bool)
	case "ne":
		return !ok || !jsonvalue.Equal(v, o.arg)
	}
	if !ok {
		return false
	}
	switch o.op {
	case "eq":
		return jsonvalue.Equal(v, o.arg)
	case "gt", "gte", "lt", "lte":
		c, comparable := jsonvalue.Compare(v, o.arg)
		if !comparable {
			return false
		}
		switch o.op {
		case "gt":
			return c > 0
		case "gte":
			return c >= 0
		case "lt":
			return c < 0
		default:
			return c <= 0
		}
	case "in":
		for _, candidate := range o.arg.([]any) {
			if jsonvalue.Equal(v, candidate) {
				return true
			}
		}
		return false
	case "contains":
		if s, isString := v.(string); isString {
			sub, ok := o.arg.(string)
			return ok && strings.Contains(s, sub)
		}
		list, isList := jsonvalue.AsList(v)
		if !isList {
			return false
		}
		for _, elem := range list {
			if jsonvalue.Equal(elem, o.arg) {
				return true
			}
		}
		return false
	}
	return false
}

// MarshalJSON writes the filter back in the form it was parsed from: entries
// in key order, plain values for equality written as plain values, operator
// objects as objects. A filter parsed from nothing or null, and a nil
// *Filter, is written as null; the zero Filter as {}.
func (f *Filter) MarshalJSON() ([]byte, error) {
	if f == nil || f.null {
		return []byte("null"), nil
	}
	obj := make(map[string]any, len(f.entries))
	for _, e := range f.entries {
		if e.shorthand {
			obj[e.path] = e.value
			continue
		}
		ops := make(map[string]any, len(e.ops))
		for _, o := range e.ops {
			ops[o.op] = o.arg
		}
		obj[e.path] = ops
	}
	return json.Marshal(obj)
}

// UnmarshalJSON parses data with Parse (violations carry no location prefix),
// so a Filter can be a field of a stored record.
func (f *Filter) UnmarshalJSON(data []byte) error {
	parsed, err := Parse(data)
	if err != nil {
		return err
	}
	*f = *parsed
	return nil
}

// Empty reports whether f has no entries and so matches everything.
func (f *Filter) Empty() bool {
	return f == nil || len(f.entries) == 0
}
