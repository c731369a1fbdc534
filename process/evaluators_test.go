package process

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/extract"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRoute(t *testing.T) {
	t.Parallel()
	cfg := RouteConfig{
		Rules: []RouteRule{
			{ID: "big", When: map[string]any{"amount_cents": map[string]any{"gte": 1000000}}, Queue: "cfo", Priority: PriorityUrgent},
			{When: map[string]any{"country": map[string]any{"in": []any{"DE", "AT"}}}, Queue: "dach", Owner: "anna@acme.test"},
			{When: map[string]any{"vip": true}, Owner: "boss@acme.test"},
			{When: map[string]any{"country": "DE"}, Queue: "never-reached"},
		},
		Default: RouteTarget{Queue: "general", Owner: "ops@acme.test"},
	}
	prepared := cfg
	prepared.Prepare()
	if len(prepared.parsed) != len(cfg.Rules) || prepared.parsed[0] == nil {
		t.Fatalf("Prepare parsed %d filters of %d rules", len(prepared.parsed), len(cfg.Rules))
	}
	for _, test := range []struct {
		name string
		data map[string]any
		want RouteOutput
	}{
		{"first rule wins", map[string]any{"amount_cents": json.Number("1000000"), "country": "DE"},
			RouteOutput{Queue: "cfo", Owner: "ops@acme.test", Priority: "urgent", MatchedRule: "big"}},
		{"just below the first rule", map[string]any{"amount_cents": 999999, "country": "AT"},
			RouteOutput{Queue: "dach", Owner: "anna@acme.test", Priority: "normal", MatchedRule: "rules.1"}},
		{"owner only rule keeps the default queue", map[string]any{"vip": true},
			RouteOutput{Queue: "general", Owner: "boss@acme.test", Priority: "normal", MatchedRule: "rules.2"}},
		{"default", map[string]any{"country": "FR"},
			RouteOutput{Queue: "general", Owner: "ops@acme.test", Priority: "normal", MatchedRule: "default"}},
		{"nil data", nil,
			RouteOutput{Queue: "general", Owner: "ops@acme.test", Priority: "normal", MatchedRule: "default"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, Route(cfg, test.data)); diff != "" {
				t.Errorf("Route (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(test.want, Route(prepared, test.data)); diff != "" {
				t.Errorf("Route with the filters prepared (-want +got):\n%s", diff)
			}
		})
	}
}

func i64(n int64) *int64     { return &n }
func f64(f float64) *float64 { return &f }

func TestConsolidate(t *testing.T) {
	t.Parallel()
	pos := []any{
		map[string]any{"number": "PO-1", "total": 10000, "vendor": "Acme"},
		map[string]any{"number": "po-2 ", "total": 50000, "vendor": "Bolt"},
		map[string]any{"number": "PO-3", "total": 7000, "vendor": "Acme"},
		map[string]any{"total": 1},
	}
	keys := []KeyPair{{Left: "po_number", Right: "number"}}
	totals := func(abs *int64, pct *float64) []Tolerance {
		return []Tolerance{{Left: "amount", Right: "total", AbsCents: abs, Percent: pct}}
	}
	inv := func(po any, amount any) map[string]any { return map[string]any{"po_number": po, "amount": amount} }
	for _, test := range []struct {
		name        string
		left        any
		tolerances  []Tolerance
		wantMatched bool
		wantDiffs   []Difference // of the first match
		wantLeft    []int        // unmatched left indexes
		wantRight   []int        // unmatched right indexes
	}{
		{name: "exact", left: inv("PO-1", 10000), tolerances: totals(nil, f64(1)), wantMatched: true,
			wantDiffs: []Difference{}, wantRight: []int{1, 2, 3}},
		{name: "within 1 percent at the bound", left: inv("PO-1", 10100), tolerances: totals(nil, f64(1)), wantMatched: true,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 10100, Right: 10000, Delta: int64(100), WithinTolerance: true}},
			wantRight: []int{1, 2, 3}},
		{name: "just outside 1 percent", left: inv("PO-1", 10101), tolerances: totals(nil, f64(1)), wantMatched: false,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 10101, Right: 10000, Delta: int64(101)}},
			wantRight: []int{1, 2, 3}},
		{name: "below by 1 percent", left: inv("PO-1", 9900), tolerances: totals(nil, f64(1)), wantMatched: true,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 9900, Right: 10000, Delta: int64(-100), WithinTolerance: true}},
			wantRight: []int{1, 2, 3}},
		{name: "absolute cents at the bound", left: inv("PO-1", 10050), tolerances: totals(i64(50), nil), wantMatched: true,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 10050, Right: 10000, Delta: int64(50), WithinTolerance: true}},
			wantRight: []int{1, 2, 3}},
		{name: "absolute cents just outside", left: inv("PO-1", 10051), tolerances: totals(i64(50), nil), wantMatched: false,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 10051, Right: 10000, Delta: int64(51)}},
			wantRight: []int{1, 2, 3}},
		{name: "either bound suffices", left: inv("PO-1", 10080), tolerances: totals(i64(50), f64(1)), wantMatched: true,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 10080, Right: 10000, Delta: int64(80), WithinTolerance: true}},
			wantRight: []int{1, 2, 3}},
		{name: "no tolerance means equal", left: inv("PO-1", 10001), tolerances: totals(nil, nil), wantMatched: false,
			wantDiffs: []Difference{{Field: "amount", RightField: "total", Left: 10001, Right: 10000, Delta: int64(1)}},
			wantRight: []int{1, 2, 3}},
		{name: "keys ignore case and space", left: inv("PO-2", json.Number("50000")), tolerances: totals(nil, nil), wantMatched: true,
			wantDiffs: []Difference{}, wantRight: []int{0, 2, 3}},
		{name: "no match", left: inv("PO-9", 1), wantMatched: false, wantLeft: []int{0}, wantRight: []int{0, 1, 2, 3}},
		{name: "missing key", left: inv(nil, 1), wantMatched: false, wantLeft: []int{0}, wantRight: []int{0, 1, 2, 3}},
		{name: "a list on the left", left: []any{inv("PO-3", 7000), inv("PO-1", 10000)}, tolerances: totals(nil, nil),
			wantMatched: true, wantDiffs: []Difference{}, wantRight: []int{1, 3}},
		{name: "a right item is taken once", left: []any{inv("PO-3", 7000), inv("PO-3", 7000)}, wantMatched: false,
			wantDiffs: []Difference{}, wantLeft: []int{1}, wantRight: []int{0, 1, 3}},
		{name: "compared field missing on one side", left: map[string]any{"po_number": "PO-1"}, tolerances: totals(nil, f64(5)),
			wantMatched: false, wantDiffs: []Difference{{Field: "amount", RightField: "total", Right: 10000}}, wantRight: []int{1, 2, 3}},
		{name: "nothing on the left", left: []any{}, wantMatched: false, wantRight: []int{0, 1, 2, 3}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			out := Consolidate(ConsolidateConfig{Keys: keys, Tolerances: test.tolerances}, test.left, pos)
			if out.Matched != test.wantMatched {
				t.Errorf("matched = %v, want %v", out.Matched, test.wantMatched)
			}
			if test.wantDiffs != nil {
				if len(out.Matches) == 0 {
					t.Fatalf("no match: %+v", out)
				}
				if diff := cmp.Diff(test.wantDiffs, out.Matches[0].Differences); diff != "" {
					t.Errorf("differences (-want +got):\n%s", diff)
				}
			}
			idx := func(us []Unmatched) []int {
				var out []int
				for _, u := range us {
					if u.Reason == "" {
						t.Errorf("unmatched item %d without a reason", u.Index)
					}
					out = append(out, u.Index)
				}
				return out
			}
			if diff := cmp.Diff(test.wantLeft, idx(out.UnmatchedLeft)); diff != "" {
				t.Errorf("unmatched left (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(test.wantRight, idx(out.UnmatchedRight)); diff != "" {
				t.Errorf("unmatched right (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsolidateReasons(t *testing.T) {
	t.Parallel()
	out := Consolidate(ConsolidateConfig{Keys: []KeyPair{{Left: "po", Right: "number"}}},
		map[string]any{"po": "PO-9"}, []any{map[string]any{"number": "PO-1"}, map[string]any{}})
	want := ConsolidateOutput{
		Matches:        []Match{},
		UnmatchedLeft:  []Unmatched{{Index: 0, Item: map[string]any{"po": "PO-9"}, Reason: "no right item has number = PO-9"}},
		UnmatchedRight: []Unmatched{{Index: 0, Item: map[string]any{"number": "PO-1"}, Reason: "no left item has po = PO-1"}, {Index: 1, Item: map[string]any{}, Reason: "key field number has no value"}},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("Consolidate (-want +got):\n%s", diff)
	}
}

func TestAnalyse(t *testing.T) {
	t.Parallel()
	// Ten values of 100 and one of 1000: z of 1000 is about 3.16.
	spike := make([]any, 0, 11)
	for range 10 {
		spike = append(spike, map[string]any{"amount": json.Number("100")})
	}
	spike = append(spike, map[string]any{"amount": 1000})
	oneToTen := []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	withHundred := []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 100}
	q := func(f float64) *float64 { return &f }
	approx := cmpopts.EquateApprox(0, 1e-9)
	for _, test := range []struct {
		name   string
		cfg    AnalyseConfig
		values []any
		want   AnalyseOutput
	}{
		{"spike is an outlier at z 3", AnalyseConfig{Field: "amount"}, spike, AnalyseOutput{
			Count: 11, Mean: 2000.0 / 11, Stddev: math.Sqrt((10*math.Pow(100-2000.0/11, 2) + math.Pow(1000-2000.0/11, 2)) / 11),
			Min: 100, Max: 1000, Median: 100, P90: 100,
			Outliers: []Outlier{{Index: 10, Value: 1000, Z: (1000 - 2000.0/11) / math.Sqrt((10*math.Pow(100-2000.0/11, 2)+math.Pow(1000-2000.0/11, 2))/11)}},
		}},
		{"a higher threshold keeps it", AnalyseConfig{Field: "amount", ZThreshold: q(3.2)}, spike, AnalyseOutput{
			Count: 11, Mean: 2000.0 / 11, Stddev: math.Sqrt((10*math.Pow(100-2000.0/11, 2) + math.Pow(1000-2000.0/11, 2)) / 11),
			Min: 100, Max: 1000, Median: 100, P90: 100, Outliers: []Outlier{},
		}},
		{"percentiles interpolate", AnalyseConfig{}, oneToTen, AnalyseOutput{
			Count: 10, Mean: 5.5, Stddev: math.Sqrt(8.25), Min: 1, Max: 10, Median: 5.5, P90: 9.1, Outliers: []Outlier{},
		}},
		{"iqr fences", AnalyseConfig{IQR: true}, withHundred, AnalyseOutput{
			Count: 10, Mean: 14.5, Stddev: math.Sqrt((func() float64 {
				s := 0.0
				for _, v := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 100} {
					s += (v - 14.5) * (v - 14.5)
				}
				return s / 10
			})()), Min: 1, Max: 100, Median: 5.5, P90: 18.1, Q1: q(3.25), Q3: q(7.75),
			Outliers: []Outlier{{Index: 9, Value: 100, Z: 85.5 / math.Sqrt((func() float64 {
				s := 0.0
				for _, v := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 100} {
					s += (v - 14.5) * (v - 14.5)
				}
				return s / 10
			})())}},
		}},
		{"nulls and missing fields are skipped", AnalyseConfig{Field: "x"}, []any{map[string]any{"x": 4}, map[string]any{"x": nil}, map[string]any{}, map[string]any{"x": 4}},
			AnalyseOutput{Count: 2, Mean: 4, Min: 4, Max: 4, Median: 4, P90: 4, Skipped: 2, Outliers: []Outlier{}}},
		{"no values", AnalyseConfig{}, nil, AnalyseOutput{Outliers: []Outlier{}}},
		{"one value", AnalyseConfig{}, []any{7}, AnalyseOutput{Count: 1, Mean: 7, Min: 7, Max: 7, Median: 7, P90: 7, Outliers: []Outlier{}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got, err := Analyse(test.cfg, test.values)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, got, approx); diff != "" {
				t.Errorf("Analyse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnalyseRejectsNonNumbers(t *testing.T) {
	t.Parallel()
	_, err := Analyse(AnalyseConfig{Field: "amount"}, []any{map[string]any{"amount": 1}, map[string]any{"amount": "12"}})
	if err == nil || !strings.Contains(err.Error(), "item 1: amount is the string \"12\", not a number") {
		t.Fatalf("err = %v", err)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	data := map[string]any{
		"subject": map[string]any{"label": "Acme GmbH"},
		"steps":   map[string]any{"extract": map[string]any{"fields": map[string]any{"total": json.Number("1.2e3"), "lines": []any{1, 2}}}},
	}
	for _, test := range []struct {
		template, want, wantErr string
	}{
		{template: "Dear ${subject.label}, your total is ${steps.extract.fields.total} cents.", want: "Dear Acme GmbH, your total is 1200 cents."},
		{template: "${steps.extract.fields.total}", want: "1200"},
		{template: "${steps.extract.fields.lines}", want: "[1,2]"},
		{template: "Literal $${subject.label}", want: "Literal ${subject.label}"},
		{template: "no references", want: "no references"},
		{template: "Hello ${subject.name}", wantErr: `no value at "subject.name"`},
		{template: "Hello ${subject.label", wantErr: "missing closing brace"},
	} {
		got, err := render(test.template, data)
		if test.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), test.wantErr) {
				t.Errorf("Render(%q) error = %v, want %q", test.template, err, test.wantErr)
			}
			continue
		}
		if err != nil || got != test.want {
			t.Errorf("Render(%q) = %q, %v; want %q", test.template, got, err, test.want)
		}
	}
}

func TestIntake(t *testing.T) {
	t.Parallel()
	cfg := IntakeConfig{Text: "ignored", Fields: []IntakeField{
		{Key: "invoice_number", Label: "Invoice number", Required: true},
		{Key: "total", Label: "Total", Type: "money", Required: true},
		{Key: "due", Label: "Due date", Type: "date"},
		{Key: "po", Label: "PO", Extract: &ExtractRule{Method: "regex", Pattern: `PO-(\d+)`}},
		{Key: "vat_id", Label: "VAT ID", Required: true},
		{Key: "currency", Label: "Currency", Type: "enum", Options: []string{"EUR", "USD"}},
	}}
	text := "ACME GmbH\nInvoice number: INV-7\nTotal: 1.234,50 EUR\nDue date: 2025-03-01\nRef PO-4711\nCurrency: CHF\n"
	out, err := Intake(cfg, text)
	if err != nil {
		t.Fatal(err)
	}
	wantFields := map[string]any{"invoice_number": "INV-7", "total": int64(123450), "due": "2025-03-01", "po": "4711"}
	if diff := cmp.Diff(wantFields, out.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"vat_id"}, out.Missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if got := out.Extracted["total"]; got.Text != "1.234,50 EUR" && got.Text != "1.234,50" || got.Page != 1 {
		t.Errorf("total evidence = %+v", got)
	}
	var kinds []string
	for _, p := range out.Problems {
		kinds = append(kinds, p.Field+":"+p.Kind)
	}
	if diff := cmp.Diff([]string{"vat_id:" + extract.ProblemMissing, "currency:" + extract.ProblemOption}, kinds); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	data := map[string]any{"trigger": map[string]any{"data": map[string]any{"amount_cents": 5}}}
	route := map[string]any{"rules": []any{map[string]any{"when": map[string]any{"trigger.data.amount_cents": map[string]any{"lt": 10}}, "queue": "small"}},
		"default": map[string]any{"queue": "big"}}
	got, err := Eval(StepRoute, route, data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(RouteOutput{Queue: "small", Priority: "normal", MatchedRule: "rules.0"}, got); diff != "" {
		t.Errorf("route without input looks at the run's data (-want +got):\n%s", diff)
	}

	cons := json.RawMessage(`{"left": {"n": "A", "t": 100}, "right": [{"n": "B", "t": 100}], "keys": [{"left": "n", "right": "n"}], "require_match": true}`)
	got, err = Eval(StepConsolidate, cons, nil)
	if !errors.Is(err, ErrNoMatch) {
		t.Fatalf("require_match error = %v, want ErrNoMatch", err)
	}
	if out, ok := got.(ConsolidateOutput); !ok || out.Matched || len(out.UnmatchedLeft) != 1 {
		t.Errorf("the failed consolidate keeps its output: %+v", got)
	}

	got, err = Eval(StepValidate, map[string]any{"record": map[string]any{"a": 1}, "rules": []any{map[string]any{"field": "b", "check": "required"}}}, nil)
	if err != nil || got.(ValidateOutput).Status != ValidationErrors {
		t.Errorf("validate = %+v, %v", got, err)
	}
	if _, err := Eval(StepValidate, map[string]any{"record": "not resolved", "rules": []any{}}, nil); err == nil {
		t.Error("validate of a string record: no error")
	}
	got, err = Eval(StepAnalyse, map[string]any{"values": []any{1, 2, 3}}, nil)
	if err != nil || got.(AnalyseOutput).Median != 2 {
		t.Errorf("analyse = %+v, %v", got, err)
	}
	got, err = Eval(StepIntake, map[string]any{"text": "Total: 12.00", "fields": []any{map[string]any{"key": "total", "label": "Total", "type": "money"}}}, nil)
	if err != nil || got.(IntakeOutput).Fields["total"] != int64(1200) {
		t.Errorf("intake = %+v, %v", got, err)
	}
	for _, typ := range []string{StepWait, StepExecute, StepHumanTask, "nope"} {
		if _, err := Eval(typ, map[string]any{}, nil); err == nil {
			t.Errorf("Eval(%s): no error", typ)
		}
	}
	if _, err := Eval(StepIntake, map[string]any{"document_id": "doc_1"}, nil); err == nil {
		t.Error("Eval of a document intake: no error")
	}
}
