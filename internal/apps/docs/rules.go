package docs

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/jsonvalue"
)

// Issue severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Validation statuses.
const (
	ValidationPassed   = "passed"
	ValidationWarnings = "warnings"
	ValidationErrors   = "errors"
)

// RuleInfo is one validation rule a document type implies.
type RuleInfo struct {
	// RuleID is stable: "required:invoice_number", "sum:total" ...
	RuleID string `json:"rule_id"`
	// Field is the key of the field the rule reports on.
	Field string `json:"field"`
	// Severity is error or warning.
	Severity string `json:"severity"`
	// Description says what the rule checks.
	Description string `json:"description"`
}

// Roles: the well-known field keys the cross-field rules look for, in the
// order they are tried. A role is filled by the first key present with
// the right type.
var roleKeys = map[string][]string{
	"total":          {"total", "total_amount", "amount_due"},
	"subtotal":       {"subtotal", "net_amount", "net_total"},
	"tax":            {"tax", "tax_amount", "vat", "vat_amount"},
	"tax_rate":       {"tax_rate", "vat_rate"},
	"lines":          {"line_amounts"},
	"supplier":       {"supplier", "supplier_name", "vendor", "vendor_name"},
	"number":         {"invoice_number", "document_number"},
	"opening":        {"opening_balance"},
	"closing":        {"closing_balance"},
	"credits":        {"total_credits"},
	"debits":         {"total_debits"},
	"issue_date":     {"issue_date", "invoice_date"},
	"due_date":       {"due_date"},
	"effective_date": {"effective_date", "start_date"},
	"end_date":       {"end_date", "expiry_date"},
	"order_date":     {"order_date"},
	"delivery_date":  {"delivery_date"},
	"period_start":   {"period_start"},
	"period_end":     {"period_end"},
}

var roleTypes = map[string]string{
	"total": extract.TypeMoney, "subtotal": extract.TypeMoney, "tax": extract.TypeMoney,
	"tax_rate": extract.TypeNumber, "lines": extract.TypeMoney, "supplier": extract.TypeText,
	"number": extract.TypeText, "opening": extract.TypeMoney, "closing": extract.TypeMoney,
	"credits": extract.TypeMoney, "debits": extract.TypeMoney,
	"issue_date": extract.TypeDate, "due_date": extract.TypeDate, "effective_date": extract.TypeDate,
	"end_date": extract.TypeDate, "order_date": extract.TypeDate, "delivery_date": extract.TypeDate,
	"period_start": extract.TypeDate, "period_end": extract.TypeDate,
}

// datePairs are (earlier, later) roles: the later date may not come before
// the earlier one.
var datePairs = [][2]string{
	{"issue_date", "due_date"}, {"effective_date", "end_date"},
	{"order_date", "delivery_date"}, {"period_start", "period_end"},
}

// roles resolves the roles of a type's fields.
func roles(fields []DocField) map[string]DocField {
	out := map[string]DocField{}
	for role, keys := range roleKeys {
		for _, k := range keys {
			for _, f := range fields {
				if f.Key != k || f.fieldType() != roleTypes[role] || f.Repeat != (role == "lines") {
					continue
				}
				out[role] = f
			}
			if _, ok := out[role]; ok {
				break
			}
		}
	}
	return out
}

// Rules lists the validation rules fields imply, in a stable order: per
// field (in field order) required:<key>, type:<key> (number, money, date,
// email) or option:<key> (enum); then the cross-field checks, which apply
// when the well-known keys are present (see the package doc): sum:<total>,
// sum:<subtotal>, tax:<tax>, balance:<closing>, dates:<later date> and the
// duplicate:<number> warning.
func Rules(fields []DocField) []RuleInfo {
	var out []RuleInfo
	for _, f := range fields {
		if f.Required {
			out = append(out, RuleInfo{RuleID: "required:" + f.Key, Field: f.Key, Severity: SeverityError,
				Description: fmt.Sprintf("%s must be present", f.Label)})
		}
		switch t := f.fieldType(); t {
		case extract.TypeText:
		case extract.TypeEnum:
			out = append(out, RuleInfo{RuleID: "option:" + f.Key, Field: f.Key, Severity: SeverityError,
				Description: fmt.Sprintf("%s must be one of %s", f.Label, strings.Join(f.Options, ", "))})
		default:
			out = append(out, RuleInfo{RuleID: "type:" + f.Key, Field: f.Key, Severity: SeverityError,
				Description: fmt.Sprintf("%s must be a valid %s", f.Label, typeWord(t))})
		}
	}
	r := roles(fields)
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := r[n]; !ok {
				return false
			}
		}
		return true
	}
	if has("total") && (has("lines") || has("subtotal", "tax")) {
		out = append(out, RuleInfo{RuleID: "sum:" + r["total"].Key, Field: r["total"].Key, Severity: SeverityError,
			Description: fmt.Sprintf("%s must equal the sum of the lines (plus tax when the lines are net), or the subtotal plus tax, within a cent", r["total"].Label)})
	}
	if has("subtotal", "lines") {
		out = append(out, RuleInfo{RuleID: "sum:" + r["subtotal"].Key, Field: r["subtotal"].Key, Severity: SeverityError,
			Description: fmt.Sprintf("%s must equal the sum of the lines within a cent", r["subtotal"].Label)})
	}
	if has("tax", "tax_rate") && (has("subtotal") || has("total")) {
		out = append(out, RuleInfo{RuleID: "tax:" + r["tax"].Key, Field: r["tax"].Key, Severity: SeverityError,
			Description: fmt.Sprintf("%s must equal the net amount times %s within a cent", r["tax"].Label, r["tax_rate"].Label)})
	}
	if has("opening", "closing") && (has("credits") || has("debits")) {
		out = append(out, RuleInfo{RuleID: "balance:" + r["closing"].Key, Field: r["closing"].Key, Severity: SeverityError,
			Description: fmt.Sprintf("%s must equal %s plus credits minus debits within a cent", r["closing"].Label, r["opening"].Label)})
	}
	for _, p := range datePairs {
		if has(p[0], p[1]) {
			out = append(out, RuleInfo{RuleID: "dates:" + r[p[1]].Key, Field: r[p[1]].Key, Severity: SeverityError,
				Description: fmt.Sprintf("%s must not be before %s", r[p[1]].Label, r[p[0]].Label)})
		}
	}
	if has("supplier", "number") {
		out = append(out, RuleInfo{RuleID: "duplicate:" + r["number"].Key, Field: r["number"].Key, Severity: SeverityWarning,
			Description: fmt.Sprintf("no other document may have the same %s and %s", r["supplier"].Label, r["number"].Label)})
	}
	if out == nil {
		out = []RuleInfo{}
	}
	return out
}

func typeWord(t string) string {
	switch t {
	case extract.TypeMoney:
		return "amount"
	case extract.TypeEmail:
		return "email address"
	}
	return t
}

// Issue is one validation finding: its RuleID, the Field (the key of the
// field at fault, null for a finding about the whole document), its
// Severity, the Message and the Evidence (the issue record every check
// that reports findings writes).
type Issue = capability.Issue

// Evidence is what an issue cites: the text found (its page and
// code-point offsets), what was searched for, the values compared, or
// other documents (Text, Page, Start, End, Searched, Values and Documents
// of the record every check that cites evidence writes).
type Evidence = capability.Evidence

// Validation is a document's validation outcome.
type Validation struct {
	// Status is passed, warnings or errors.
	Status string `json:"status"`
	// Errors and Warnings count the issues by severity.
	Errors   int     `json:"errors"`
	Warnings int     `json:"warnings"`
	Issues   []Issue `json:"issues"`
	// RuleCount is how many rules were checked.
	RuleCount int `json:"rule_count"`
}

func (v *Validation) ruleIDs() []string {
	out := make([]string, len(v.Issues))
	for i, is := range v.Issues {
		out[i] = is.RuleID
	}
	return out
}

// checkInput is what validation looks at.
type checkInput struct {
	typ        *DocType
	values     map[string]FieldValue
	problems   map[string]extract.Problem
	pages      int
	noText     bool
	duplicates []string
}

func evidenceOf(fv FieldValue) Evidence {
	t := fv.Text
	return Evidence{Text: &t, Page: fv.Page, Start: fv.Start, End: fv.End}
}

func ptr[T any](v T) *T { return &v }

// check validates values against the type's rules.
func check(in checkInput) Validation {
	var issues []Issue
	add := func(rule, field, sev, msg string, ev Evidence) {
		issues = append(issues, Issue{RuleID: rule, Field: capability.IssueField(field), Severity: sev, Message: msg, Evidence: ev})
	}
	if in.noText {
		add("text:document", "", SeverityError,
			"the file has no text to extract from (a scanned PDF needs OCR: bind document.extract to a provider that reads images)",
			Evidence{Values: map[string]any{"pages": in.pages, "characters": 0}})
	}
	for _, f := range in.typ.Fields {
		if _, ok := in.values[f.Key]; ok {
			continue
		}
		if p, ok := in.problems[f.Key]; ok && (p.Kind == extract.ProblemType || p.Kind == extract.ProblemOption) {
			ev := Evidence{Text: ptr(p.Text), Page: ptr(p.Page), Start: ptr(p.Start), End: ptr(p.End)}
			if p.Kind == extract.ProblemOption {
				ev.Values = map[string]any{"options": f.Options}
				add("option:"+f.Key, f.Key, SeverityError, fmt.Sprintf("%s: %s", f.Label, p.Message), ev)
			} else {
				ev.Values = map[string]any{"expected_type": f.fieldType()}
				add("type:"+f.Key, f.Key, SeverityError, fmt.Sprintf("%s: %s", f.Label, p.Message), ev)
			}
			continue
		}
		if f.Required {
			add("required:"+f.Key, f.Key, SeverityError, fmt.Sprintf("%s is required but was not found", f.Label),
				Evidence{Searched: f.searched(), Values: map[string]any{"pages_searched": in.pages}})
		}
	}
	r := roles(in.typ.Fields)
	val := func(role string) (FieldValue, DocField, bool) {
		f, ok := r[role]
		if !ok {
			return FieldValue{}, f, false
		}
		v, ok := in.values[f.Key]
		return v, f, ok && v.Value != nil
	}
	total, totalF, hasTotal := val("total")
	sub, subF, hasSub := val("subtotal")
	tax, taxF, hasTax := val("tax")
	lines, _, hasLines := val("lines")
	var lineCents []int64
	var lineSum int64
	if hasLines {
		for _, x := range asList(lines.Value) {
			if c, ok := cents(x); ok {
				lineCents = append(lineCents, c)
				lineSum += c
			}
		}
		hasLines = len(lineCents) > 0
	}
	if hasTotal && hasLines {
		t, _ := cents(total.Value)
		ok := abs(t-lineSum) <= 1
		values := map[string]any{totalF.Key: t, "lines": lineCents, "sum_of_lines": lineSum, "difference": t - lineSum}
		if !ok && hasTax {
			tx, _ := cents(tax.Value)
			values[taxF.Key] = tx
			values["sum_of_lines_plus_tax"] = lineSum + tx
			if abs(t-lineSum-tx) <= 1 {
				ok = true
			} else {
				values["difference"] = t - lineSum - tx
			}
		}
		if !ok {
			ev := evidenceOf(total)
			ev.Values = values
			msg := fmt.Sprintf("%s %s does not equal the sum of the %d lines %s", totalF.Label, money(t), len(lineCents), money(lineSum))
			if hasTax {
				tx, _ := cents(tax.Value)
				msg += fmt.Sprintf(" (or %s with %s)", money(lineSum+tx), strings.ToLower(taxF.Label))
			}
			add("sum:"+totalF.Key, totalF.Key, SeverityError, msg, ev)
		}
	} else if hasTotal && hasSub && hasTax {
		t, _ := cents(total.Value)
		s, _ := cents(sub.Value)
		tx, _ := cents(tax.Value)
		if d := t - s - tx; abs(d) > 1 {
			ev := evidenceOf(total)
			ev.Values = map[string]any{totalF.Key: t, subF.Key: s, taxF.Key: tx, "expected": s + tx, "difference": d}
			add("sum:"+totalF.Key, totalF.Key, SeverityError,
				fmt.Sprintf("%s %s does not equal %s %s plus %s %s (%s)", totalF.Label, money(t), subF.Label, money(s), strings.ToLower(taxF.Label), money(tx), money(s+tx)), ev)
		}
	}
	if hasSub && hasLines {
		s, _ := cents(sub.Value)
		if d := s - lineSum; abs(d) > 1 {
			ev := evidenceOf(sub)
			ev.Values = map[string]any{subF.Key: s, "lines": lineCents, "sum_of_lines": lineSum, "difference": d}
			add("sum:"+subF.Key, subF.Key, SeverityError,
				fmt.Sprintf("%s %s does not equal the sum of the %d lines %s", subF.Label, money(s), len(lineCents), money(lineSum)), ev)
		}
	}
	if rate, rateF, ok := val("tax_rate"); ok && hasTax && (hasSub || hasTotal) {
		tx, _ := cents(tax.Value)
		pct, _ := jsonvalue.Float(rate.Value)
		var base int64
		baseKey := ""
		if hasSub {
			base, _ = cents(sub.Value)
			baseKey = subF.Key
		} else {
			t, _ := cents(total.Value)
			base, baseKey = t-tx, "net_amount"
		}
		want := int64(math.Round(float64(base) * pct / 100))
		if d := tx - want; abs(d) > 1 {
			ev := evidenceOf(tax)
			ev.Values = map[string]any{taxF.Key: tx, baseKey: base, rateF.Key: pct, "expected_tax": want, "difference": d}
			add("tax:"+taxF.Key, taxF.Key, SeverityError,
				fmt.Sprintf("%s %s is not %s%% of %s (expected %s)", taxF.Label, money(tx), trimFloat(pct), money(base), money(want)), ev)
		}
	}
	if open, openF, ok := val("opening"); ok {
		if closing, closeF, ok2 := val("closing"); ok2 {
			cr, crF, hasCr := val("credits")
			db, dbF, hasDb := val("debits")
			if hasCr || hasDb {
				o, _ := cents(open.Value)
				c, _ := cents(closing.Value)
				values := map[string]any{openF.Key: o, closeF.Key: c}
				want := o
				if hasCr {
					x, _ := cents(cr.Value)
					want += x
					values[crF.Key] = x
				}
				if hasDb {
					x, _ := cents(db.Value)
					want -= abs(x)
					values[dbF.Key] = x
				}
				if d := c - want; abs(d) > 1 {
					values["expected"], values["difference"] = want, d
					ev := evidenceOf(closing)
					ev.Values = values
					add("balance:"+closeF.Key, closeF.Key, SeverityError,
						fmt.Sprintf("%s %s does not equal %s plus credits minus debits (%s)", closeF.Label, money(c), strings.ToLower(openF.Label), money(want)), ev)
				}
			}
		}
	}
	for _, p := range datePairs {
		early, earlyF, ok1 := val(p[0])
		late, lateF, ok2 := val(p[1])
		if !ok1 || !ok2 {
			continue
		}
		e, _ := early.Value.(string)
		l, _ := late.Value.(string)
		if e != "" && l != "" && l < e {
			ev := evidenceOf(late)
			ev.Values = map[string]any{earlyF.Key: e, lateF.Key: l}
			add("dates:"+lateF.Key, lateF.Key, SeverityError,
				fmt.Sprintf("%s %s is before %s %s", lateF.Label, l, strings.ToLower(earlyF.Label), e), ev)
		}
	}
	if len(in.duplicates) > 0 {
		num, numF, _ := val("number")
		sup, supF, _ := val("supplier")
		ev := evidenceOf(num)
		ev.Values = map[string]any{supF.Key: sup.Value, numF.Key: num.Value}
		ev.Documents = in.duplicates
		add("duplicate:"+numF.Key, numF.Key, SeverityWarning,
			fmt.Sprintf("possible duplicate: %d other document(s) have %s %v and %s %v", len(in.duplicates),
				strings.ToLower(supF.Label), sup.Value, strings.ToLower(numF.Label), num.Value), ev)
	}
	v := Validation{Status: ValidationPassed, Issues: issues, RuleCount: len(Rules(in.typ.Fields))}
	if v.Issues == nil {
		v.Issues = []Issue{}
	}
	for _, is := range issues {
		if is.Severity == SeverityError {
			v.Errors++
		} else {
			v.Warnings++
		}
	}
	switch {
	case v.Errors > 0:
		v.Status = ValidationErrors
	case v.Warnings > 0:
		v.Status = ValidationWarnings
	}
	return v
}

// duplicateKey returns the normalized (supplier, number) of values, or
// false when the type has no such roles or a value is missing.
func duplicateKey(t *DocType, values map[string]FieldValue) (string, string, bool) {
	r := roles(t.Fields)
	sf, ok1 := r["supplier"]
	nf, ok2 := r["number"]
	if !ok1 || !ok2 {
		return "", "", false
	}
	s, ok1 := values[sf.Key].Value.(string)
	n, ok2 := values[nf.Key].Value.(string)
	if !ok1 || !ok2 {
		return "", "", false
	}
	norm := func(x string) string {
		return strings.Join(strings.FieldsFunc(strings.ToLower(x), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
		}), " ")
	}
	s, n = norm(s), norm(n)
	if s == "" || n == "" {
		return "", "", false
	}
	return s, n, true
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// money formats cents as "1234.56".
func money(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

func trimFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", f), "0"), ".")
}

// cents reads a money value, whatever JSON decoding made of it.
func cents(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		return int64(math.Round(x)), true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		f, err := x.Float64()
		return int64(math.Round(f)), err == nil
	}
	return 0, false
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}
