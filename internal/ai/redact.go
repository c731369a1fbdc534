package ai

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// The redaction patterns a connection may turn on (redact_patterns).
var redactPatterns = map[string]*regexp.Regexp{
	"email": regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`),
	"phone": regexp.MustCompile(`\+?\d[\d ()\-./]{7,}\d`),
	"iban":  regexp.MustCompile(`\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b`),
	"card":  regexp.MustCompile(`\b(?:\d[ \-]?){12,18}\d\b`),
}

// redactor masks what a connection says must not leave the workspace: the
// values of the named fields wherever they occur in structured data (and
// their text wherever it occurs in the prompt's text), and the matches of
// the named patterns. Masks keep the length in code points ('*' for every
// character), so evidence offsets found in redacted text hold in the
// original.
type redactor struct {
	fields   map[string]bool
	patterns []*regexp.Regexp
}

func newRedactor(c *connection) *redactor {
	r := &redactor{fields: map[string]bool{}}
	for _, f := range c.RedactFields {
		r.fields[strings.ToLower(f)] = true
	}
	for _, p := range c.RedactPatterns {
		if re, ok := redactPatterns[p]; ok {
			r.patterns = append(r.patterns, re)
		}
	}
	return r
}

// data returns a copy of v with the values under redacted keys masked, and
// the texts it masked (so they are masked in free text too).
func (r *redactor) data(v any, found *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if r.fields[strings.ToLower(k)] {
				out[k] = maskValue(e, found)
				continue
			}
			out[k] = r.data(e, found)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.data(e, found)
		}
		return out
	case string:
		return r.text(x, nil)
	default:
		return v
	}
}

func maskValue(v any, found *[]string) any {
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) != "" {
			*found = append(*found, x)
		}
		return mask(x)
	case nil:
		return nil
	default:
		return "[redacted]"
	}
}

// text masks the patterns' matches and every literal in lits.
func (r *redactor) text(s string, lits []string) string {
	for _, l := range lits {
		if len(l) >= 3 {
			s = strings.ReplaceAll(s, l, mask(l))
		}
	}
	for _, re := range r.patterns {
		s = re.ReplaceAllStringFunc(s, mask)
	}
	return s
}

// labelled masks, in free text, the value after a redacted field's label
// ("IBAN: DE89 ..."): the rest of the line after "<field>:".
func (r *redactor) labelled(s string) string {
	if len(r.fields) == 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, ln := range lines {
		k, rest, ok := strings.Cut(ln, ":")
		if !ok {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(k))
		if !r.fields[key] && !r.fields[strings.ReplaceAll(key, " ", "_")] {
			continue
		}
		body := strings.TrimRight(rest, "\r\n")
		lines[i] = k + ":" + mask(body) + rest[len(body):]
	}
	return strings.Join(lines, "")
}

// mask replaces every character but spaces with '*'.
func mask(s string) string {
	var b strings.Builder
	b.Grow(utf8.RuneCountInString(s))
	for _, c := range s {
		if c == ' ' || c == '\n' || c == '\t' {
			b.WriteRune(c)
		} else {
			b.WriteByte('*')
		}
	}
	return b.String()
}
