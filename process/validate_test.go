package process

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/google/go-cmp/cmp"
)

func invoiceRecord() map[string]any {
	return map[string]any{
		"invoice_number": "INV-7",
		"total":          json.Number("12000"),
		"subtotal":       10000,
		"tax":            2000.0,
		"currency":       "EUR",
		"email":          "ap@acme.test",
		"issued":         "2025-01-10",
		"due":            "2025-02-10",
		"lines":          []any{map[string]any{"sku": "A-1", "qty": 2}},
		"blank":          "  ",
		"none":           nil,
		"po":             map[string]any{"total": 11900},
	}
}

func TestValidateRules(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		rule ValidateRule
		want *Issue // nil: the rule passes
	}{
		{name: "required present", rule: ValidateRule{Field: "invoice_number", Check: CheckRequired}},
		{name: "required missing", rule: ValidateRule{Field: "po_number", Check: CheckRequired},
			want: &Issue{RuleID: "required:po_number", Field: ptr("po_number"), Severity: "error", Message: "po_number is required",
				Evidence: Evidence{Field: "po_number"}}},
		{name: "required blank string", rule: ValidateRule{Field: "blank", Check: CheckRequired, Severity: "warning"},
			want: &Issue{RuleID: "required:blank", Field: ptr("blank"), Severity: "warning", Message: "blank is required",
				Evidence: Evidence{Field: "blank", Present: true, Found: "  "}}},
		{name: "required null", rule: ValidateRule{Field: "none", Check: CheckRequired},
			want: &Issue{RuleID: "required:none", Field: ptr("none"), Severity: "error", Message: "none is required",
				Evidence: Evidence{Field: "none", Present: true}}},
		{name: "required nested", rule: ValidateRule{Field: "lines.0.sku", Check: CheckRequired}},
		{name: "type ok", rule: ValidateRule{Field: "total", Check: CheckType, Value: "integer"}},
		{name: "type date ok", rule: ValidateRule{Field: "issued", Check: CheckType, Value: "date"}},
		{name: "type email ok", rule: ValidateRule{Field: "email", Check: CheckType, Value: "email"}},
		{name: "type wrong", rule: ValidateRule{ID: "type:currency", Field: "currency", Check: CheckType, Value: "number"},
			want: &Issue{RuleID: "type:currency", Field: ptr("currency"), Severity: "error",
				Message:  `currency must be a number, found the string "EUR"`,
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: "number"}}},
		{name: "type skips missing", rule: ValidateRule{Field: "nope", Check: CheckType, Value: "number"}},
		{name: "min ok at bound", rule: ValidateRule{Field: "total", Check: CheckMin, Value: 12000}},
		{name: "min below", rule: ValidateRule{Field: "total", Check: CheckMin, Value: json.Number("12000.5")},
			want: &Issue{RuleID: "min:total", Field: ptr("total"), Severity: "error", Message: "total must be at least 12000.5, found 12000",
				Evidence: Evidence{Field: "total", Present: true, Found: json.Number("12000"), Expected: json.Number("12000.5")}}},
		{name: "max ok at bound", rule: ValidateRule{Field: "total", Check: CheckMax, Value: 12000.0}},
		{name: "max above", rule: ValidateRule{Field: "total", Check: CheckMax, Value: 11999},
			want: &Issue{RuleID: "max:total", Field: ptr("total"), Severity: "error", Message: "total must be at most 11999, found 12000",
				Evidence: Evidence{Field: "total", Present: true, Found: json.Number("12000"), Expected: 11999}}},
		{name: "max against value_field", rule: ValidateRule{Field: "total", Check: CheckMax, ValueField: "po.total"},
			want: &Issue{RuleID: "max:total", Field: ptr("total"), Severity: "error",
				Message: "total must be at most po.total (11900), found 12000",
				Evidence: Evidence{Field: "total", Present: true, Found: json.Number("12000"), Expected: 11900,
					Values: map[string]any{"po.total": 11900}}}},
		{name: "value_field missing", rule: ValidateRule{Field: "total", Check: CheckMax, ValueField: "po.nope"},
			want: &Issue{RuleID: "max:total", Field: ptr("total"), Severity: "error",
				Message:  "total cannot be compared: po.nope has no value",
				Evidence: Evidence{Field: "total", Present: true, Found: json.Number("12000"), Values: map[string]any{"po.nope": nil}}}},
		{name: "min on a string", rule: ValidateRule{Field: "currency", Check: CheckMin, Value: 1},
			want: &Issue{RuleID: "min:currency", Field: ptr("currency"), Severity: "error",
				Message:  `currency must be a number to compare with 1, found the string "EUR"`,
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: 1}}},
		{name: "min_length ok", rule: ValidateRule{Field: "currency", Check: CheckMinLength, Value: 3}},
		{name: "max_length over", rule: ValidateRule{Field: "currency", Check: CheckMaxLength, Value: 2},
			want: &Issue{RuleID: "max_length:currency", Field: ptr("currency"), Severity: "error",
				Message:  "currency must have at most 2 characters or items, found 3",
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: 2}}},
		{name: "min_length list", rule: ValidateRule{Field: "lines", Check: CheckMinLength, Value: 2},
			want: &Issue{RuleID: "min_length:lines", Field: ptr("lines"), Severity: "error",
				Message:  "lines must have at least 2 characters or items, found 1",
				Evidence: Evidence{Field: "lines", Present: true, Found: []any{map[string]any{"sku": "A-1", "qty": 2}}, Expected: 2}}},
		{name: "equals ok", rule: ValidateRule{Field: "currency", Check: CheckEquals, Value: "EUR"}},
		{name: "equals numbers of different types", rule: ValidateRule{Field: "subtotal", Check: CheckEquals, Value: json.Number("1e4")}},
		{name: "equals within tolerance", rule: ValidateRule{Field: "total", Check: CheckEquals, ValueField: "po.total", ToleranceCents: 100}},
		{name: "equals outside tolerance", rule: ValidateRule{Field: "total", Check: CheckEquals, ValueField: "po.total", ToleranceCents: 99},
			want: &Issue{RuleID: "equals:total", Field: ptr("total"), Severity: "error",
				Message: "total must equal po.total (11900), found 12000",
				Evidence: Evidence{Field: "total", Present: true, Found: json.Number("12000"), Expected: 11900,
					Values: map[string]any{"po.total": 11900}}}},
		{name: "equals no type conversion", rule: ValidateRule{Field: "subtotal", Check: CheckEquals, Value: "10000"},
			want: &Issue{RuleID: "equals:subtotal", Field: ptr("subtotal"), Severity: "error", Message: "subtotal must equal 10000, found 10000",
				Evidence: Evidence{Field: "subtotal", Present: true, Found: 10000, Expected: "10000"}}},
		{name: "not_equals fails", rule: ValidateRule{Field: "currency", Check: CheckNotEquals, Value: "EUR", Message: "EUR is not accepted"},
			want: &Issue{RuleID: "not_equals:currency", Field: ptr("currency"), Severity: "error", Message: "EUR is not accepted",
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: "EUR"}}},
		{name: "matches ok", rule: ValidateRule{Field: "invoice_number", Check: CheckMatches, Value: `^INV-\d+$`}},
		{name: "matches fails", rule: ValidateRule{Field: "invoice_number", Check: CheckMatches, Value: `^PO-`},
			want: &Issue{RuleID: "matches:invoice_number", Field: ptr("invoice_number"), Severity: "error",
				Message:  `invoice_number must match ^PO-, found "INV-7"`,
				Evidence: Evidence{Field: "invoice_number", Present: true, Found: "INV-7", Expected: "^PO-"}}},
		{name: "in ok", rule: ValidateRule{Field: "currency", Check: CheckIn, Value: []any{"EUR", "USD"}}},
		{name: "in fails", rule: ValidateRule{Field: "currency", Check: CheckIn, Value: []any{"USD", "GBP"}},
			want: &Issue{RuleID: "in:currency", Field: ptr("currency"), Severity: "error",
				Message:  `currency must be one of ["USD","GBP"], found EUR`,
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: []any{"USD", "GBP"}}}},
		{name: "not_in fails", rule: ValidateRule{Field: "currency", Check: CheckNotIn, Value: []any{"EUR"}},
			want: &Issue{RuleID: "not_in:currency", Field: ptr("currency"), Severity: "error",
				Message:  `currency must not be one of ["EUR"], found EUR`,
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: []any{"EUR"}}}},
		{name: "sum_equals ok", rule: ValidateRule{Field: "total", Check: CheckSumEquals, Fields: []string{"subtotal", "tax"}}},
		{name: "sum_equals missing addend counts as zero", rule: ValidateRule{Field: "total", Check: CheckSumEquals,
			Fields: []string{"subtotal", "shipping"}, ToleranceCents: 1},
			want: &Issue{RuleID: "sum_equals:total", Field: ptr("total"), Severity: "error",
				Message: "total must equal the sum of subtotal + shipping (10000), found 12000",
				Evidence: Evidence{Field: "total", Present: true, Found: json.Number("12000"), Expected: int64(10000),
					Values: map[string]any{"subtotal": 10000, "shipping": nil, "sum": int64(10000)}}}},
		{name: "sum_equals within tolerance", rule: ValidateRule{Field: "po.total", Check: CheckSumEquals,
			Fields: []string{"subtotal", "tax"}, ToleranceCents: 100}},
		{name: "sum_equals just outside tolerance", rule: ValidateRule{Field: "po.total", Check: CheckSumEquals,
			Fields: []string{"subtotal", "tax"}, ToleranceCents: 99},
			want: &Issue{RuleID: "sum_equals:po.total", Field: ptr("po.total"), Severity: "error",
				Message: "po.total must equal the sum of subtotal + tax (12000), found 11900",
				Evidence: Evidence{Field: "po.total", Present: true, Found: 11900, Expected: int64(12000),
					Values: map[string]any{"subtotal": 10000, "tax": 2000.0, "sum": int64(12000)}}}},
		{name: "before ok", rule: ValidateRule{Field: "issued", Check: CheckBefore, ValueField: "due"}},
		{name: "after fails", rule: ValidateRule{Field: "issued", Check: CheckAfter, ValueField: "due"},
			want: &Issue{RuleID: "after:issued", Field: ptr("issued"), Severity: "error",
				Message: "issued must be after due (2025-02-10), found 2025-01-10",
				Evidence: Evidence{Field: "issued", Present: true, Found: "2025-01-10", Expected: "2025-02-10",
					Values: map[string]any{"due": "2025-02-10"}}}},
		{name: "before an RFC 3339 time", rule: ValidateRule{Field: "due", Check: CheckBefore, Value: "2025-02-10T00:00:00Z"},
			want: &Issue{RuleID: "before:due", Field: ptr("due"), Severity: "error",
				Message:  "due must be before 2025-02-10T00:00:00Z, found 2025-02-10",
				Evidence: Evidence{Field: "due", Present: true, Found: "2025-02-10", Expected: "2025-02-10T00:00:00Z"}}},
		{name: "before on a non-date", rule: ValidateRule{Field: "currency", Check: CheckBefore, Value: "2025-01-01"},
			want: &Issue{RuleID: "before:currency", Field: ptr("currency"), Severity: "error",
				Message:  `currency must be a date (YYYY-MM-DD or RFC 3339), found the string "EUR"`,
				Evidence: Evidence{Field: "currency", Present: true, Found: "EUR", Expected: "2025-01-01"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			out := Validate(ValidateConfig{Rules: []ValidateRule{test.rule}}, invoiceRecord())
			want := ValidateOutput{Status: ValidationPassed, Issues: []Issue{}}
			if test.want != nil {
				want.Issues = []Issue{*test.want}
				want.Status = ValidationErrors
				if test.want.Severity == SeverityWarning {
					want.Status = ValidationWarnings
				}
			}
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateStatusAndStopOnError(t *testing.T) {
	t.Parallel()
	rules := []ValidateRule{
		{Field: "po_number", Check: CheckRequired, Severity: SeverityWarning},
		{Field: "currency", Check: CheckEquals, Value: "USD"},
		{Field: "total", Check: CheckMax, Value: 1},
	}
	ids := func(out ValidateOutput) []string {
		var s []string
		for _, i := range out.Issues {
			s = append(s, i.RuleID)
		}
		return s
	}
	for _, test := range []struct {
		name       string
		rules      []ValidateRule
		stop       bool
		wantStatus string
		wantIDs    []string
	}{
		{"warnings only", rules[:1], false, ValidationWarnings, []string{"required:po_number"}},
		{"all issues", rules, false, ValidationErrors, []string{"required:po_number", "equals:currency", "max:total"}},
		{"stop at first error", rules, true, ValidationErrors, []string{"required:po_number", "equals:currency"}},
		{"passed", []ValidateRule{{Field: "currency", Check: CheckRequired}}, true, ValidationPassed, nil},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			out := Validate(ValidateConfig{Rules: test.rules, StopOnError: test.stop}, invoiceRecord())
			if out.Status != test.wantStatus {
				t.Errorf("status = %s, want %s", out.Status, test.wantStatus)
			}
			if diff := cmp.Diff(test.wantIDs, ids(out)); diff != "" {
				t.Errorf("rule ids (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateEveryIssueCitesEvidence runs every check on every field of a
// record and demands evidence on each issue: the field, and the value found
// (or that none was) and, for comparisons, what it was compared with.
func TestValidateEveryIssueCitesEvidence(t *testing.T) {
	t.Parallel()
	record := invoiceRecord()
	operands := map[string][]ValidateRule{
		CheckRequired:  {{}},
		CheckType:      {{Value: "number"}, {Value: "date"}, {Value: "object"}},
		CheckMin:       {{Value: 1e9}, {ValueField: "po.total"}},
		CheckMax:       {{Value: -1}, {ValueField: "po.total"}},
		CheckMinLength: {{Value: 100}},
		CheckMaxLength: {{Value: 0}},
		CheckEquals:    {{Value: "x"}, {ValueField: "currency"}},
		CheckNotEquals: {{ValueField: "total"}},
		CheckMatches:   {{Value: "^zzz$"}},
		CheckIn:        {{Value: []any{"nothing"}}},
		CheckNotIn:     {{Value: []any{"EUR", "INV-7"}}},
		CheckSumEquals: {{Fields: []string{"subtotal"}}},
		CheckBefore:    {{Value: "2000-01-01"}},
		CheckAfter:     {{Value: "2100-01-01"}},
	}
	fields := []string{"invoice_number", "total", "subtotal", "currency", "issued", "lines", "po", "missing", "blank", "none"}
	n := 0
	for _, check := range checks() {
		for _, op := range operands[check] {
			for _, f := range fields {
				r := op
				r.Check, r.Field = check, f
				for _, issue := range Validate(ValidateConfig{Rules: []ValidateRule{r}}, record).Issues {
					n++
					ev := issue.Evidence
					if ev.Field != f {
						t.Errorf("%s on %s: evidence field %q", check, f, ev.Field)
					}
					_, present := lookup(record, f)
					if ev.Present != present {
						t.Errorf("%s on %s: evidence present = %v, want %v", check, f, ev.Present, present)
					}
					if present && !jsonvalue.Equal(ev.Found, mustLookup(record, f)) {
						t.Errorf("%s on %s: evidence found %v", check, f, ev.Found)
					}
					if check != CheckRequired && ev.Expected == nil && len(ev.Values) == 0 {
						t.Errorf("%s on %s: no compared value in the evidence: %+v", check, f, ev)
					}
					if issue.Message == "" || issue.RuleID == "" {
						t.Errorf("%s on %s: issue without message or rule id: %+v", check, f, issue)
					}
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d issues raised; the table no longer exercises the checks", n)
	}
}

func mustLookup(m map[string]any, path string) any {
	v, _ := lookup(m, path)
	return v
}
