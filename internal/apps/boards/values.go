package boards

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
)

// settingKeys are the settings each column type takes.
var settingKeys = map[string][]string{
	TypeText:     {"max_length"},
	TypeNumber:   {"min", "max", "unit", "decimals"},
	TypeDate:     {"sla_hours"},
	TypePerson:   {},
	TypeStatus:   {"labels"},
	TypeDropdown: {"options", "multiple"},
	TypeCheckbox: {},
	TypeLink:     {},
}

// checkSettings reports every violation of a column's settings for its
// type, located at loc.
func checkSettings(typ string, s map[string]any, loc ...any) []errs.Violation {
	var vs []errs.Violation
	at := func(parts ...any) []any { return append(slices.Clone(loc), parts...) }
	add := func(typ, msg string, parts ...any) {
		vs = append(vs, errs.Violation{Loc: at(parts...), Msg: msg, Type: typ})
	}
	allowed := settingKeys[typ]
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				add("extra_forbidden", fmt.Sprintf("a %s column takes no settings", typ), k)
			} else {
				add("extra_forbidden", fmt.Sprintf("a %s column takes only %s", typ, strings.Join(allowed, ", ")), k)
			}
		}
	}
	num := func(k string) (float64, bool) {
		v, ok := s[k]
		if !ok || v == nil {
			return 0, false
		}
		f, isNum := toFloat(v)
		if !isNum {
			add("type_error", "must be a number", k)
			return 0, false
		}
		return f, true
	}
	switch typ {
	case TypeText:
		if f, ok := num("max_length"); ok && (f != math.Trunc(f) || f < 1 || f > MaxTextValueLen) {
			add("value_error", fmt.Sprintf("must be a whole number from 1 to %d", MaxTextValueLen), "max_length")
		}
	case TypeNumber:
		lo, hasLo := num("min")
		hi, hasHi := num("max")
		if hasLo && hasHi && lo > hi {
			add("value_error", "must not be above max", "min")
		}
		if d, ok := num("decimals"); ok && (d != math.Trunc(d) || d < 0 || d > 10) {
			add("value_error", "must be a whole number from 0 to 10", "decimals")
		}
		if u, ok := s["unit"]; ok && u != nil {
			if us, isStr := u.(string); !isStr {
				add("type_error", "must be a string", "unit")
			} else if utf8.RuneCountInString(us) > 20 {
				add("string_too_long", "must be at most 20 characters", "unit")
			}
		}
	case TypeDate:
		if h, ok := num("sla_hours"); ok && (h <= 0 || h > MaxSLAHours) {
			add("value_error", fmt.Sprintf("must be above 0 and at most %d", MaxSLAHours), "sla_hours")
		}
	case TypeStatus:
		labels, ok := s["labels"].([]any)
		if !ok {
			add("missing", "a status column needs labels: a list of {name, color}", "labels")
			break
		}
		if len(labels) == 0 || len(labels) > MaxOptions {
			add("too_long", fmt.Sprintf("must have 1 to %d labels", MaxOptions), "labels")
		}
		seen := map[string]bool{}
		for i, l := range labels {
			m, ok := l.(map[string]any)
			if !ok {
				add("type_error", "must be an object {name, color}", "labels", i)
				continue
			}
			for k := range m {
				if k != "name" && k != "color" {
					add("extra_forbidden", "a label takes only name and color", "labels", i, k)
				}
			}
			name, _ := m["name"].(string)
			if n := utf8.RuneCountInString(strings.TrimSpace(name)); n == 0 || n > MaxOptionLen {
				add("value_error", fmt.Sprintf("must be 1 to %d characters", MaxOptionLen), "labels", i, "name")
			} else if seen[name] {
				add("value_error", fmt.Sprintf("the label %q is given twice", name), "labels", i, "name")
			}
			seen[name] = true
			if c, ok := m["color"].(string); !ok || !reColor.MatchString(c) {
				add("string_pattern_mismatch", "must be a color #RRGGBB", "labels", i, "color")
			}
		}
	case TypeDropdown:
		opts, ok := s["options"].([]any)
		if !ok {
			add("missing", "a dropdown column needs options: a list of strings", "options")
		} else {
			if len(opts) == 0 || len(opts) > MaxOptions {
				add("too_long", fmt.Sprintf("must have 1 to %d options", MaxOptions), "options")
			}
			seen := map[string]bool{}
			for i, o := range opts {
				os, isStr := o.(string)
				if n := utf8.RuneCountInString(strings.TrimSpace(os)); !isStr || n == 0 || n > MaxOptionLen {
					add("value_error", fmt.Sprintf("must be a string of 1 to %d characters", MaxOptionLen), "options", i)
				} else if seen[os] {
					add("value_error", fmt.Sprintf("the option %q is given twice", os), "options", i)
				}
				seen[os] = true
			}
		}
		if m, ok := s["multiple"]; ok && m != nil {
			if _, isBool := m.(bool); !isBool {
				add("type_error", "must be true or false", "multiple")
			}
		}
	}
	return vs
}

// normalizeSettings returns the settings as their JSON decoding (so Go
// callers' ints and typed slices compare and encode as stored), never nil.
func normalizeSettings(s map[string]any) map[string]any {
	out := map[string]any{}
	if len(s) == 0 {
		return out
	}
	b, err := json.Marshal(s)
	if err == nil {
		_ = json.Unmarshal(b, &out)
	}
	return out
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// checkValue checks v against column c and returns the value to store
// (dates normalized to UTC) or the violation, located at loc.
func checkValue(c *Column, v any, loc []any) (any, *errs.Violation) {
	bad := func(typ, msg string) (any, *errs.Violation) {
		return nil, &errs.Violation{Loc: loc, Msg: msg, Type: typ}
	}
	s := c.Settings
	switch c.Type {
	case TypeText:
		str, ok := v.(string)
		if !ok {
			return bad("type_error", "must be a string (a text column)")
		}
		max := MaxTextValueLen
		if f, ok := toFloat(s["max_length"]); ok {
			max = int(f)
		}
		if utf8.RuneCountInString(str) > max {
			return bad("string_too_long", fmt.Sprintf("must be at most %d characters", max))
		}
		return str, nil
	case TypeNumber:
		f, ok := toFloat(v)
		if !ok {
			return bad("type_error", "must be a number (a number column)")
		}
		if lo, ok := toFloat(s["min"]); ok && f < lo {
			return bad("greater_than_equal", fmt.Sprintf("must be at least %v", lo))
		}
		if hi, ok := toFloat(s["max"]); ok && f > hi {
			return bad("less_than_equal", fmt.Sprintf("must be at most %v", hi))
		}
		return f, nil
	case TypeDate:
		str, ok := v.(string)
		if !ok {
			return bad("type_error", "must be a date YYYY-MM-DD or a date-time (a date column)")
		}
		if d, err := time.Parse(time.DateOnly, str); err == nil {
			return d.Format(time.DateOnly), nil
		}
		t, err := time.Parse(time.RFC3339, str)
		if err != nil {
			return bad("value_error", "must be a date YYYY-MM-DD or an RFC 3339 date-time")
		}
		return t.UTC().Format(time.RFC3339), nil
	case TypePerson:
		str, ok := v.(string)
		if !ok {
			return bad("type_error", "must be a string: a user id or e-mail address (a person column)")
		}
		if n := utf8.RuneCountInString(strings.TrimSpace(str)); n == 0 || n > MaxPersonLen {
			return bad("value_error", fmt.Sprintf("must be 1 to %d characters", MaxPersonLen))
		}
		return strings.TrimSpace(str), nil
	case TypeStatus:
		str, ok := v.(string)
		if !ok {
			return bad("type_error", "must be a string: one of the column's labels")
		}
		labels, _ := s["labels"].([]any)
		var names []string
		for _, l := range labels {
			if m, ok := l.(map[string]any); ok {
				n, _ := m["name"].(string)
				names = append(names, n)
			}
		}
		if !slices.Contains(names, str) {
			return bad("enum", "must be one of "+strings.Join(names, ", "))
		}
		return str, nil
	case TypeDropdown:
		var opts []string
		raw, _ := s["options"].([]any)
		for _, o := range raw {
			if os, ok := o.(string); ok {
				opts = append(opts, os)
			}
		}
		if multiple, _ := s["multiple"].(bool); multiple {
			list, ok := toStrings(v)
			if !ok {
				return bad("type_error", "must be a list of options (a dropdown column that takes several)")
			}
			seen := map[string]bool{}
			for _, o := range list {
				if !slices.Contains(opts, o) {
					return bad("enum", "each must be one of "+strings.Join(opts, ", "))
				}
				if seen[o] {
					return bad("value_error", fmt.Sprintf("the option %q is given twice", o))
				}
				seen[o] = true
			}
			return list, nil
		}
		str, ok := v.(string)
		if !ok {
			return bad("type_error", "must be a string: one of the column's options")
		}
		if !slices.Contains(opts, str) {
			return bad("enum", "must be one of "+strings.Join(opts, ", "))
		}
		return str, nil
	case TypeCheckbox:
		b, ok := v.(bool)
		if !ok {
			return bad("type_error", "must be true or false (a checkbox column)")
		}
		return b, nil
	case TypeLink:
		str, ok := v.(string)
		if !ok {
			return bad("type_error", "must be a string: an http or https URL (a link column)")
		}
		if len(str) > MaxLinkLen {
			return bad("string_too_long", fmt.Sprintf("must be at most %d characters", MaxLinkLen))
		}
		u, err := url.Parse(str)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("value_error", "must be an absolute http or https URL")
		}
		return str, nil
	}
	return bad("value_error", "the column has an unknown type")
}

func toStrings(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return slices.Clone(l), true
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
