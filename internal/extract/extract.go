package extract

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// The extraction methods.
const (
	MethodLabel = "label"
	MethodRegex = "regex"
)

// The kinds of Problem.
const (
	// ProblemMissing: no candidate text was found for the field.
	ProblemMissing = "missing"
	// ProblemType: text was found but none of it parses as the field's type.
	ProblemType = "type"
	// ProblemOption: text was found for an enum field but it names no option.
	ProblemOption = "option"
	// ProblemRule: the field's rule is unusable (a bad pattern, an unknown
	// method or type); Extract reports it instead of failing every field.
	ProblemRule = "rule"
)

// Page is the text of one page of a document.
type Page struct {
	// Number is the page number, from 1.
	Number int `json:"number"`
	// Text is the page's text, lines separated by '\n'.
	Text string `json:"text"`
}

// Field is one value to find in a document.
type Field struct {
	// Key names the value in the result ("invoice_number").
	Key string `json:"key"`
	// Label is the field's human name; a field without a rule (or a label
	// rule without a label of its own) is found by it.
	Label string `json:"label"`
	// Type is text, number, money, date, email or enum. Defaults to text.
	Type string `json:"type"`
	// Options are the allowed values of an enum field.
	Options []string `json:"options,omitempty"`
	// Extract is how the value is found. Defaults to the label method with
	// Label.
	Extract *Rule `json:"extract,omitempty"`
	// Repeat takes every candidate that parses instead of the first (the
	// amounts of an invoice's lines): Value.Value is then a []any of the
	// parsed values and Value.Items their evidence.
	Repeat bool `json:"repeat,omitempty"`
}

// Rule says how a field's text is found.
type Rule struct {
	// Method is "label" or "regex".
	Method string `json:"method"`
	// Label is the label text for the label method. Defaults to the field's
	// label.
	Label string `json:"label,omitempty"`
	// Aliases are other labels tried after Label.
	Aliases []string `json:"aliases,omitempty"`
	// Pattern is the RE2 pattern of the regex method.
	Pattern string `json:"pattern,omitempty"`
	// Group is the capture group the regex method takes. Defaults to 1, or
	// to 0 (the whole match) when the pattern has no group.
	Group *int `json:"group,omitempty"`
}

// Value is an extracted value and the evidence of where it came from.
type Value struct {
	// Value is the parsed value: string (text, date, email, enum), float64
	// (number) or int64 cents (money).
	Value any `json:"value"`
	// Text is the text the value was parsed from.
	Text string `json:"text"`
	// Page is the page number the text is on.
	Page int `json:"page"`
	// Start and End are the code-point offsets of Text in the page text.
	Start int `json:"start"`
	End   int `json:"end"`
	// Items, for a Repeat field, is every value found, in order; the
	// fields above then describe the first.
	Items []Value `json:"items,omitempty"`
}

// Problem is a field that could not be extracted.
type Problem struct {
	// Field is the field's key.
	Field string `json:"field"`
	// Kind is missing, type, option or rule.
	Kind string `json:"kind"`
	// Message says what went wrong, for a person.
	Message string `json:"message"`
	// Text, Page, Start and End cite the text that was found, when some was
	// (kinds type and option); Page is 0 otherwise.
	Text  string `json:"text,omitempty"`
	Page  int    `json:"page,omitempty"`
	Start int    `json:"start,omitempty"`
	End   int    `json:"end,omitempty"`
}

// Check returns what is wrong with the field, with Loc relative to the
// field ("type", "extract", "pattern" ...). The caller prefixes its own
// location.
func (f Field) Check() []errs.Violation {
	var vs []errs.Violation
	v := func(typ, msg string, loc ...any) {
		vs = append(vs, errs.Violation{Loc: loc, Msg: msg, Type: typ})
	}
	if strings.TrimSpace(f.Key) == "" {
		v("missing", "a field needs a key", "key")
	}
	if f.Type != "" && !slices.Contains(Types(), f.Type) {
		v("enum", "must be one of "+strings.Join(Types(), ", "), "type")
	}
	if f.Type == TypeEnum && len(f.Options) == 0 {
		v("missing", "an enum field needs options", "options")
	}
	r := f.Extract
	if r == nil {
		if strings.TrimSpace(f.Label) == "" {
			v("missing", "a field without an extract rule needs a label", "label")
		}
		return vs
	}
	switch r.Method {
	case MethodLabel:
		if strings.TrimSpace(r.Label) == "" && strings.TrimSpace(f.Label) == "" {
			v("missing", "a label rule needs a label", "extract", "label")
		}
		for i, a := range r.Aliases {
			if len(labelTokens(a)) == 0 {
				v("value_error", "an alias needs a letter or digit", "extract", "aliases", i)
			}
		}
		if r.Label != "" && len(labelTokens(r.Label)) == 0 {
			v("value_error", "a label needs a letter or digit", "extract", "label")
		}
	case MethodRegex:
		if r.Pattern == "" {
			v("missing", "a regex rule needs a pattern", "extract", "pattern")
			break
		}
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			v("value_error", "is not a valid RE2 pattern: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "), "extract", "pattern")
			break
		}
		if r.Group != nil && (*r.Group < 0 || *r.Group > re.NumSubexp()) {
			v("value_error", fmt.Sprintf("the pattern has %d groups", re.NumSubexp()), "extract", "group")
		}
	case "":
		v("missing", "an extract rule needs a method (label or regex)", "extract", "method")
	default:
		v("enum", "must be one of label, regex", "extract", "method")
	}
	return vs
}

// Extractor extracts a fixed set of fields; it compiles their rules once
// and is safe for concurrent use.
type Extractor struct {
	fields []compiled
}

type compiled struct {
	f      Field
	labels []*labelMatcher // label method: the label then its aliases
	names  []string
	re     *regexp.Regexp // regex method
	group  int
}

// New compiles fields. Every problem of every field is reported together
// as an errs.Invalid error whose violations are located at
// ("fields", index, ...).
func New(fields []Field) (*Extractor, error) {
	var vs []errs.Violation
	for i, f := range fields {
		for _, v := range f.Check() {
			v.Loc = append([]any{"fields", i}, v.Loc...)
			vs = append(vs, v)
		}
	}
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	x := &Extractor{fields: make([]compiled, len(fields))}
	for i, f := range fields {
		c, err := compile(f)
		if err != nil {
			return nil, err
		}
		x.fields[i] = c
	}
	return x, nil
}

func compile(f Field) (compiled, error) {
	c := compiled{f: f}
	r := f.Extract
	if r == nil {
		r = &Rule{Method: MethodLabel}
	}
	switch r.Method {
	case MethodRegex:
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return c, errors.Wrapf(err, "field %s", f.Key)
		}
		c.re = re
		switch {
		case r.Group != nil:
			c.group = *r.Group
		case re.NumSubexp() == 0:
			c.group = 0
		default:
			c.group = 1
		}
	default:
		label := r.Label
		if strings.TrimSpace(label) == "" {
			label = f.Label
		}
		for _, name := range append([]string{label}, r.Aliases...) {
			m := newLabelMatcher(name)
			if m == nil {
				continue
			}
			c.labels = append(c.labels, m)
			c.names = append(c.names, strings.TrimSpace(name))
		}
		if len(c.labels) == 0 {
			return c, errors.Newf("field %s has no usable label", f.Key)
		}
	}
	return c, nil
}

// Extract finds every field in pages. Fields found and parsed are in the
// map under their keys; every other field has one Problem, in field order.
func (x *Extractor) Extract(pages []Page) (map[string]Value, []Problem) {
	out := make(map[string]Value, len(x.fields))
	var problems []Problem
	lowers := make([]string, len(pages))
	for i, p := range pages {
		lowers[i] = asciiLower(p.Text)
	}
	for i := range x.fields {
		v, p := x.fields[i].extract(pages, lowers)
		if p != nil {
			problems = append(problems, *p)
			continue
		}
		out[x.fields[i].f.Key] = v
	}
	return out, problems
}

// Extract compiles fields and extracts them from pages. A field whose rule
// does not compile gets a Problem of kind rule; the others are extracted.
func Extract(pages []Page, fields []Field) (map[string]Value, []Problem) {
	var ok []Field
	var problems []Problem
	for _, f := range fields {
		if vs := f.Check(); len(vs) > 0 {
			problems = append(problems, Problem{Field: f.Key, Kind: ProblemRule, Message: "the field's rule is unusable: " + vs[0].String()})
			continue
		}
		ok = append(ok, f)
	}
	x, err := New(ok)
	if err != nil {
		// Unreachable: every field passed Check.
		return map[string]Value{}, append(problems, Problem{Kind: ProblemRule, Message: err.Error()})
	}
	vals, more := x.Extract(pages)
	return vals, append(problems, more...)
}

// candidate is one place a field's text may be.
type candidate struct {
	page       int
	text       string
	start, end int // byte offsets in the page text
	pageText   string
}

func (c *compiled) extract(pages []Page, lowers []string) (Value, *Problem) {
	var (
		hit, first candidate
		hitVal     any
		firstErr   error
		found, ok  bool
	)
	var items []Value
	visit := func(cand candidate) bool {
		val, err := ParseValue(c.f.Type, c.f.Options, cand.text)
		if err == nil {
			if c.f.Repeat {
				s, e := runeOffsets(cand.pageText, cand.start, cand.end)
				items = append(items, Value{Value: val, Text: cand.text, Page: cand.page, Start: s, End: e})
				return false
			}
			hit, hitVal, ok = cand, val, true
			return true
		}
		if !found {
			first, firstErr = cand, err
		}
		found = true
		return false
	}
	if c.re != nil {
		c.regexCandidates(pages, visit)
	} else {
		c.labelCandidates(pages, lowers, visit)
	}
	if len(items) > 0 {
		v := items[0]
		vals := make([]any, len(items))
		for i, it := range items {
			vals[i] = it.Value
		}
		v.Value, v.Items = vals, items
		return v, nil
	}
	if ok {
		s, e := runeOffsets(hit.pageText, hit.start, hit.end)
		return Value{Value: hitVal, Text: hit.text, Page: hit.page, Start: s, End: e}, nil
	}
	if !found {
		return Value{}, &Problem{Field: c.f.Key, Kind: ProblemMissing, Message: c.missingMessage()}
	}
	kind := ProblemType
	msg := fmt.Sprintf("%q is not a valid %s", first.text, typeName(c.f.Type))
	if c.f.Type == TypeEnum {
		kind = ProblemOption
		msg = fmt.Sprintf("%q is not one of the options %s", first.text, strings.Join(c.f.Options, ", "))
	} else if errors.Is(firstErr, ErrParse) {
		msg = firstErr.Error()
	}
	s, e := runeOffsets(first.pageText, first.start, first.end)
	return Value{}, &Problem{Field: c.f.Key, Kind: kind, Message: msg, Text: first.text, Page: first.page, Start: s, End: e}
}

func typeName(t string) string {
	switch t {
	case TypeMoney:
		return "amount"
	case "":
		return TypeText
	}
	return t
}

func (c *compiled) missingMessage() string {
	if c.re != nil {
		return `no text matches the pattern "` + c.re.String() + `"`
	}
	q := make([]string, len(c.names))
	for i, n := range c.names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return fmt.Sprintf("label %s not found", q[0])
	}
	return fmt.Sprintf("none of the labels %s found", strings.Join(q, ", "))
}

func (c *compiled) regexCandidates(pages []Page, visit func(candidate) bool) {
	for _, p := range pages {
		for _, m := range c.re.FindAllStringSubmatchIndex(p.Text, -1) {
			s, e := m[2*c.group], m[2*c.group+1]
			if s < 0 {
				continue
			}
			s, e = trimSpan(p.Text, s, e)
			if s == e {
				continue
			}
			if visit(candidate{page: p.Number, text: p.Text[s:e], start: s, end: e, pageText: p.Text}) {
				return
			}
		}
	}
}

// trimSpan narrows [s,e) of text to exclude surrounding white space.
func trimSpan(text string, s, e int) (int, int) {
	for s < e {
		r, n := utf8.DecodeRuneInString(text[s:e])
		if !isSpace(r) {
			break
		}
		s += n
	}
	for e > s {
		r, n := utf8.DecodeLastRuneInString(text[s:e])
		if !isSpace(r) {
			break
		}
		e -= n
	}
	return s, e
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '\u00a0' || r == '\f' || r == '\v'
}

// runeOffsets converts byte offsets of text into code-point offsets.
func runeOffsets(text string, s, e int) (int, int) {
	rs := utf8.RuneCountInString(text[:s])
	return rs, rs + utf8.RuneCountInString(text[s:e])
}
