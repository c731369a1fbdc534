// Package refs resolves the references a step config makes to the run's data
// (api.md section 3), and walks dotted paths through decoded JSON values.
//
// # References
//
// Inside any config, a string that is exactly "${path}" is replaced by the
// value at that path of the run's data, keeping its JSON type:
//
//	{"amount": "${trigger.data.amount_cents}"}  ->  {"amount": 12500}
//
// Inside a longer string a reference is interpolated as text:
//
//	"Invoice ${steps.extract.fields.number} is due"  ->  "Invoice INV-7 is due"
//
// Interpolated numbers are written in plain decimal notation, never with an
// exponent (json.Number keeps its digits; float64 is formatted with
// strconv.FormatFloat(f, 'f', -1, 64)); booleans as true or false; null as
// null; strings as they are; objects and lists as compact JSON.
//
// "$${" is an escape: it always produces a literal "${" and starts no
// reference. A "$" not followed by "{" is plain text.
//
// A reference to a path with no value is an error naming the reference and the
// path. It is a runtime failure of the step, not a validation error of a
// request, so the error is not marked errs.Invalid. Check reports malformed
// references (an empty path, a missing "}") at definition time.
//
// # Paths
//
// A path is a dot-separated list of segments. A segment names a key of an
// object, or, when the value is a list, an index in it ("items.0.sku"). Lookup
// is the one path walker of bas: trigger filters and the run engine use it too.
package refs

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// Resolve returns a copy of config with every reference replaced by its value
// in data. config is a decoded JSON value (map[string]any, []any, string,
// numbers, bool, nil); maps and lists are copied, so neither config nor data is
// changed and the result shares no map or list with them. A reference to a
// missing path, or a malformed reference, is an error.
func Resolve(config any, data map[string]any) (any, error) {
	return resolve(config, data)
}

func resolve(v any, data map[string]any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := resolve(e, data)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := resolve(e, data)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case string:
		return resolveString(v, data)
	default:
		return v, nil
	}
}

// part is one piece of a parsed string: literal text, or a reference when ref
// is true.
type part struct {
	text string
	ref  bool
}

// parse splits s into literal text and references. It returns an error for a
// reference without its closing brace or with an empty path.
func parse(s string) ([]part, error) {
	var parts []part
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, part{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, errors.Newf("reference %s: missing closing brace", s[i:])
			}
			path := s[i+2 : i+2+end]
			if err := checkPath(path); err != nil {
				return nil, errors.Wrapf(err, "reference ${%s}", path)
			}
			flush()
			parts = append(parts, part{text: path, ref: true})
			i += 2 + end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return parts, nil
}

// checkPath rejects an empty path and empty segments ("a..b", ".a", "a.").
func checkPath(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	if slices.Contains(strings.Split(path, "."), "") {
		return errors.Newf("empty segment in path %q", path)
	}
	return nil
}

func resolveString(s string, data map[string]any) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	parts, err := parse(s)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].ref {
		v, err := value(parts[0].text, data)
		if err != nil {
			return nil, err
		}
		return deepCopy(v), nil
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.ref {
			b.WriteString(p.text)
			continue
		}
		v, err := value(p.text, data)
		if err != nil {
			return nil, err
		}
		t, err := Text(v)
		if err != nil {
			return nil, errors.Wrapf(err, "reference ${%s}", p.text)
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

func value(path string, data map[string]any) (any, error) {
	v, ok := Lookup(data, path)
	if !ok {
		return nil, errors.Newf("reference ${%s}: no value at %q", path, path)
	}
	return v, nil
}

// Text renders v as it appears when interpolated into a longer string:
// strings as they are, numbers in plain decimal notation, booleans as true or
// false, null as null, objects and lists as compact JSON.
func Text(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(v), nil
	case json.Number:
		return plainDecimal(string(v)), nil
	case float64:
		return formatFloat(v, 64)
	case float32:
		return formatFloat(float64(v), 32)
	case int:
		return strconv.Itoa(v), nil
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr:
		return fmt.Sprint(v), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", errors.Wrap(err, "render value as JSON")
		}
		return string(b), nil
	}
}

func formatFloat(f float64, bits int) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", errors.Newf("value %v is not a JSON number", f)
	}
	return strconv.FormatFloat(f, 'f', -1, bits), nil
}

// plainDecimal rewrites a JSON number's text without an exponent, exactly:
// "1.5e3" -> "1500", "2E-3" -> "0.002". Text that is not a valid JSON number
// is returned unchanged.
func plainDecimal(s string) string {
	e := strings.IndexAny(s, "eE")
	if e < 0 {
		return s
	}
	mant, expText := s[:e], s[e+1:]
	exp, err := strconv.Atoi(expText)
	if err != nil || mant == "" {
		return s
	}
	sign := ""
	if mant[0] == '-' {
		sign, mant = "-", mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return s
	}
	// The decimal point sits after len(intPart) digits; move it by exp.
	point := len(intPart) + exp
	// Guard absurd exponents: such a number has no useful plain form.
	if point > 400 || point < -400 {
		return s
	}
	switch {
	case point <= 0:
		digits = strings.Repeat("0", 1-point) + digits
		point = 1
	case point > len(digits):
		digits += strings.Repeat("0", point-len(digits))
	}
	whole, fraction := strings.TrimLeft(digits[:point], "0"), strings.TrimRight(digits[point:], "0")
	if whole == "" {
		whole = "0"
	}
	if whole == "0" && fraction == "" {
		sign = ""
	}
	if fraction == "" {
		return sign + whole
	}
	return sign + whole + "." + fraction
}

// deepCopy copies maps and lists of a decoded JSON value so a resolved config
// shares nothing mutable with the run's data.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// Lookup returns the value at the dotted path of data and whether there is
// one. Each segment names a key of an object or, on a list, a decimal index
// ("items.0.sku"). A path through a value that is neither an object nor a list,
// an index out of range, an empty path or an empty segment has no value. A
// present JSON null is a value (nil, true).
//
// Objects are map[string]any or any other map with string keys; lists are
// []any or any other slice, so values built in Go walk like decoded JSON.
func Lookup(data map[string]any, path string) (any, bool) {
	if path == "" {
		return nil, false
	}
	var cur any = data
	for path != "" {
		seg, rest, more := strings.Cut(path, ".")
		if seg == "" || (more && rest == "") {
			return nil, false
		}
		next, ok := step(cur, seg)
		if !ok {
			return nil, false
		}
		cur, path = next, rest
	}
	return cur, true
}

// step takes one segment from cur.
func step(cur any, seg string) (any, bool) {
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[seg]
		return v, ok
	case []any:
		i, ok := index(seg, len(c))
		if !ok {
			return nil, false
		}
		return c[i], true
	case nil, string, bool, json.Number, float64, int, int64:
		return nil, false
	}
	rv := reflect.ValueOf(cur)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, false
		}
		e := rv.MapIndex(reflect.ValueOf(seg).Convert(rv.Type().Key()))
		if !e.IsValid() {
			return nil, false
		}
		return e.Interface(), true
	case reflect.Slice, reflect.Array:
		i, ok := index(seg, rv.Len())
		if !ok {
			return nil, false
		}
		return rv.Index(i).Interface(), true
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, false
		}
		return step(rv.Elem().Interface(), seg)
	default:
		return nil, false
	}
}

// index parses seg as a list index: decimal digits only, no sign, no leading
// zero (except "0" itself), below n.
func index(seg string, n int) (int, bool) {
	if seg == "" || len(seg) > 1 && seg[0] == '0' || strings.Trim(seg, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(seg)
	if err != nil || i >= n {
		return 0, false
	}
	return i, true
}

// Paths lists the paths referenced anywhere in config, sorted and without
// duplicates, so a process definition can be checked against the data its
// steps will have. Malformed references are left out (Check reports them).
func Paths(config any) []string {
	var out []string
	Each(config, func(path string, _ []any) { out = append(out, path) })
	slices.Sort(out)
	return slices.Compact(out)
}

// Each calls fn with the path of every well-formed reference in config and
// the location of the string holding it: loc followed by the string's
// location inside config, as Check reports it. Strings are visited in
// Check's order (map keys sorted); malformed references are left out.
func Each(config any, fn func(path string, at []any), loc ...any) {
	walkStrings(config, loc, func(s string, at []any) {
		if !strings.Contains(s, "${") {
			return
		}
		parts, err := parse(s)
		if err != nil {
			return
		}
		for _, p := range parts {
			if p.ref {
				fn(p.text, at)
			}
		}
	})
}

// Check reports every malformed reference in config (a "${" without its "}",
// an empty path or an empty path segment) as a value_error violation at loc
// followed by the location of the string inside config. It returns nil when
// every reference is well formed. It does not look paths up: whether a path
// has a value is known only when the step runs.
func Check(config any, loc ...any) error {
	var vs []errs.Violation
	walkStrings(config, loc, func(s string, at []any) {
		if !strings.Contains(s, "${") {
			return
		}
		if _, err := parse(s); err != nil {
			vs = append(vs, errs.Violation{Loc: at, Msg: err.Error(), Type: "value_error"})
		}
	})
	return errs.Validation(vs...)
}

// walkStrings calls fn with every string in v and its location, visiting map
// keys in sorted order so the calls are deterministic.
func walkStrings(v any, at []any, fn func(s string, at []any)) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walkStrings(v[k], append(slices.Clip(at), k), fn)
		}
	case []any:
		for i, e := range v {
			walkStrings(e, append(slices.Clip(at), i), fn)
		}
	case string:
		fn(v, at)
	}
}
