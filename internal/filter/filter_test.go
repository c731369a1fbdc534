package filter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func decodeData(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

const event = `{
	"status": "paid",
	"amount_cents": 12500,
	"ratio": 0.25,
	"zero": 0,
	"due_date": "2025-03-31",
	"paid": true,
	"note": null,
	"tags": ["urgent", "eu", 3],
	"customer": {"name": "Acme GmbH", "country": "DE", "address": {"city": "Berlin"}},
	"lines": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}],
	"code": "5",
	"empty": {}
}`

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		filter string
		want   bool
	}{
		// No filter.
		{"null", `null`, true},
		{"empty object", `{}`, true},
		{"empty input", ``, true},

		// Equality.
		{"equal string", `{"status": "paid"}`, true},
		{"unequal string", `{"status": "open"}`, false},
		{"equal number", `{"amount_cents": 12500}`, true},
		{"equal number other spelling", `{"amount_cents": 1.25e4}`, true},
		{"equal number trailing zeros", `{"amount_cents": 12500.000}`, true},
		{"unequal number", `{"amount_cents": 12501}`, false},
		{"equal fraction", `{"ratio": 0.250}`, true},
		{"equal bool", `{"paid": true}`, true},
		{"unequal bool", `{"paid": false}`, false},
		{"equal null", `{"note": null}`, true},
		{"null does not equal missing", `{"nothing": null}`, false},
		{"null does not equal zero", `{"zero": null}`, false},
		{"number is not numeric string", `{"code": 5}`, false},
		{"string is not number", `{"amount_cents": "12500"}`, false},
		{"bool is not number", `{"zero": false}`, false},
		{"eq list deep", `{"tags": {"eq": ["urgent", "eu", 3.0]}}`, true},
		{"eq list order matters", `{"tags": {"eq": ["eu", "urgent", 3]}}`, false},
		{"eq object deep", `{"customer.address": {"eq": {"city": "Berlin"}}}`, true},
		{"eq object differs", `{"customer.address": {"eq": {"city": "Bonn"}}}`, false},
		{"eq object extra key", `{"customer.address": {"eq": {"city": "Berlin", "zip": "1"}}}`, false},
		{"eq empty object", `{"empty": {"eq": {}}}`, true},
		{"eq missing", `{"nothing": {"eq": 1}}`, false},

		// Paths.
		{"nested path", `{"customer.address.city": "Berlin"}`, true},
		{"list index path", `{"lines.1.sku": "B-2"}`, true},
		{"list index out of range", `{"lines.2.sku": {"exists": true}}`, false},
		{"path through string is missing", `{"status.x": {"exists": false}}`, true},
		{"path through number is missing", `{"amount_cents.x": {"exists": true}}`, false},

		// ne.
		{"ne differs", `{"status": {"ne": "void"}}`, true},
		{"ne same", `{"status": {"ne": "paid"}}`, false},
		{"ne missing holds", `{"nothing": {"ne": "void"}}`, true},
		{"ne other type", `{"code": {"ne": 5}}`, true},
		{"ne number spelling", `{"amount_cents": {"ne": 12500.0}}`, false},

		// Ordering.
		{"gt number", `{"amount_cents": {"gt": 10000}}`, true},
		{"gt equal", `{"amount_cents": {"gt": 12500}}`, false},
		{"gte equal", `{"amount_cents": {"gte": 12500}}`, true},
		{"lt number", `{"amount_cents": {"lt": 12500.5}}`, true},
		{"lte equal", `{"amount_cents": {"lte": 12500}}`, true},
		{"lt fails", `{"amount_cents": {"lt": 100}}`, false},
		{"gt fraction", `{"ratio": {"gt": 0.2}}`, true},
		{"gt negative", `{"zero": {"gt": -1}}`, true},
		{"range both hold", `{"amount_cents": {"gte": 10000, "lt": 20000}}`, true},
		{"range one fails", `{"amount_cents": {"gte": 10000, "lt": 12000}}`, false},
		{"gt string lexical", `{"due_date": {"gt": "2025-03-30"}}`, true},
		{"lt string lexical", `{"due_date": {"lt": "2025-03-30"}}`, false},
		{"date range", `{"due_date": {"gte": "2025-01-01", "lt": "2025-04-01"}}`, true},
		{"gt string vs number", `{"code": {"gt": 1}}`, false},
		{"lt number vs string", `{"amount_cents": {"lt": "z"}}`, false},
		{"gt bool value", `{"paid": {"gt": 0}}`, false},
		{"gt null value", `{"note": {"gte": 0}}`, false},
		{"gt missing", `{"nothing": {"gt": 0}}`, false},
		{"huge integers exact", `{"amount_cents": {"lt": 123456789012345678901234567890}}`, true},

		// in.
		{"in string", `{"customer.country": {"in": ["AT", "DE"]}}`, true},
		{"in string absent", `{"customer.country": {"in": ["AT", "CH"]}}`, false},
		{"in number spelling", `{"amount_cents": {"in": [1, 1.25E4]}}`, true},
		{"in no type conversion", `{"code": {"in": [5]}}`, false},
		{"in empty list", `{"status": {"in": []}}`, false},
		{"in missing", `{"nothing": {"in": [null]}}`, false},
		{"in null", `{"note": {"in": [null]}}`, true},

		// contains.
		{"contains substring", `{"customer.name": {"contains": "Acme"}}`, true},
		{"contains substring absent", `{"customer.name": {"contains": "acme"}}`, false},
		{"contains empty substring", `{"customer.name": {"contains": ""}}`, true},
		{"contains number in string", `{"code": {"contains": 5}}`, false},
		{"contains list element", `{"tags": {"contains": "eu"}}`, true},
		{"contains list number", `{"tags": {"contains": 3.0}}`, true},
		{"contains list absent", `{"tags": {"contains": "us"}}`, false},
		{"contains list no substring", `{"tags": {"contains": "urg"}}`, false},
		{"contains list object", `{"lines": {"contains": {"sku": "A-1", "qty": 2}}}`, true},
		{"contains on number", `{"amount_cents": {"contains": 1}}`, false},
		{"contains on object", `{"customer": {"contains": "name"}}`, false},
		{"contains missing", `{"nothing": {"contains": "x"}}`, false},

		// exists.
		{"exists true present", `{"status": {"exists": true}}`, true},
		{"exists true null counts", `{"note": {"exists": true}}`, true},
		{"exists true missing", `{"nothing": {"exists": true}}`, false},
		{"exists false missing", `{"nothing": {"exists": false}}`, true},
		{"exists false present", `{"status": {"exists": false}}`, false},
		{"exists false nested missing", `{"customer.vat_id": {"exists": false}}`, true},

		// All entries must hold.
		{"all hold", `{"status": "paid", "customer.country": "DE", "amount_cents": {"gte": 100}}`, true},
		{"one fails", `{"status": "paid", "customer.country": "AT", "amount_cents": {"gte": 100}}`, false},
		{"several operators all hold", `{"tags": {"exists": true, "contains": "urgent", "ne": []}}`, true},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(json.RawMessage(test.filter), "body", "trigger", "filter")
			if err != nil {
				t.Fatalf("Parse(%s): %v", test.filter, err)
			}
			if got := f.Match(decodeData(t, event)); got != test.want {
				t.Errorf("Parse(%s).Match(event) = %v, want %v", test.filter, got, test.want)
			}
		})
	}
}

// TestMatchGoTypes checks that data built in Go (not decoded JSON) matches as
// its JSON form would.
func TestMatchGoTypes(t *testing.T) {
	t.Parallel()
	data := map[string]any{
		"n":      12500,
		"u":      uint64(18446744073709551615),
		"f32":    float32(0.5),
		"f":      2.5,
		"tenth":  0.1,
		"strs":   []string{"a", "b"},
		"ints":   []int{1, 2},
		"obj":    map[string]int{"x": 1},
		"bytes":  []byte("abc"),
		"nested": []map[string]any{{"k": "v"}},
	}
	for _, test := range []struct {
		filter string
		want   bool
	}{
		{`{"n": 12500}`, true},
		{`{"n": 12500.0}`, true},
		{`{"n": {"gt": 12499.99}}`, true},
		{`{"u": 18446744073709551615}`, true},
		{`{"u": {"gt": 9223372036854775807}}`, true},
		{`{"f32": 0.5}`, true},
		{`{"f": {"lt": 3}}`, true},
		{`{"f": 2.5}`, true},
		{`{"tenth": 0.1}`, true},
		{`{"tenth": {"gt": 0.1}}`, false},
		{`{"strs": {"contains": "b"}}`, true},
		{`{"strs": {"eq": ["a", "b"]}}`, true},
		{`{"ints": {"contains": 2.0}}`, true},
		{`{"obj": {"eq": {"x": 1}}}`, true},
		{`{"obj.x": 1}`, true},
		{`{"bytes": {"contains": 97}}`, false},
		{`{"nested.0.k": "v"}`, true},
		{`{"nested": {"contains": {"k": "v"}}}`, true},
	} {
		f, err := Parse(json.RawMessage(test.filter))
		if err != nil {
			t.Fatalf("Parse(%s): %v", test.filter, err)
		}
		if got := f.Match(data); got != test.want {
			t.Errorf("Parse(%s).Match(go data) = %v, want %v", test.filter, got, test.want)
		}
	}
}

func TestMatchNil(t *testing.T) {
	t.Parallel()
	var f *Filter
	if !f.Match(map[string]any{"a": 1}) || !f.Empty() {
		t.Errorf("nil filter must match everything and be empty")
	}
	if !(&Filter{}).Match(nil) {
		t.Errorf("zero filter must match nil data")
	}
	g, err := Parse(json.RawMessage(`{"a": {"exists": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Match(nil) || g.Empty() {
		t.Errorf("exists:false must match nil data, and the filter is not empty")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	loc := func(extra ...any) []any { return append([]any{"body", "trigger", "filter"}, extra...) }
	for _, test := range []struct {
		name   string
		filter string
		want   []errs.Violation
	}{
		{"malformed JSON", `{"a": `, []errs.Violation{{Loc: loc(), Msg: "is not valid JSON: unexpected EOF", Type: "json_invalid"}}},
		{"trailing data", `{} {}`, []errs.Violation{{Loc: loc(), Msg: "is not valid JSON: unexpected data after the top-level value", Type: "json_invalid"}}},
		{"list", `[{"a": 1}]`, []errs.Violation{{Loc: loc(), Msg: "must be an object", Type: "type_error"}}},
		{"string", `"status=paid"`, []errs.Violation{{Loc: loc(), Msg: "must be an object", Type: "type_error"}}},
		{"unknown operator", `{"amount": {"greater": 1}}`, []errs.Violation{{Loc: loc("amount"), Msg: `unknown operator "greater" (use one of: eq, ne, gt, gte, lt, lte, in, contains, exists)`, Type: "value_error"}}},
		{"plain object is not equality", `{"customer": {"country": "DE"}}`, []errs.Violation{{Loc: loc("customer"), Msg: `unknown operator "country" (use one of: eq, ne, gt, gte, lt, lte, in, contains, exists)`, Type: "value_error"}}},
		{"in not a list", `{"country": {"in": "DE"}}`, []errs.Violation{{Loc: loc("country"), Msg: "operator in needs a list", Type: "value_error"}}},
		{"exists not a bool", `{"x": {"exists": "yes"}}`, []errs.Violation{{Loc: loc("x"), Msg: "operator exists needs true or false", Type: "value_error"}}},
		{"gt bool", `{"x": {"gt": true}}`, []errs.Violation{{Loc: loc("x"), Msg: "operator gt needs a number or a string", Type: "value_error"}}},
		{"lte null", `{"x": {"lte": null}}`, []errs.Violation{{Loc: loc("x"), Msg: "operator lte needs a number or a string", Type: "value_error"}}},
		{"lt list", `{"x": {"lt": [1]}}`, []errs.Violation{{Loc: loc("x"), Msg: "operator lt needs a number or a string", Type: "value_error"}}},
		{"gte object", `{"x": {"gte": {}}}`, []errs.Violation{{Loc: loc("x"), Msg: "operator gte needs a number or a string", Type: "value_error"}}},
		{"empty operator object", `{"x": {}}`, []errs.Violation{{Loc: loc("x"), Msg: `operator object must not be empty (use {"eq": {}} to match an empty object)`, Type: "value_error"}}},
		{"empty path", `{"": 1}`, []errs.Violation{{Loc: loc(""), Msg: "is not a field path: use dot-separated names such as customer.country", Type: "value_error"}}},
		{"empty segment", `{"a..b": 1}`, []errs.Violation{{Loc: loc("a..b"), Msg: "is not a field path: use dot-separated names such as customer.country", Type: "value_error"}}},
		{"all reported in key order", `{"z": {"in": 1}, "a": {"exists": 1, "gt": false}, "m": 1}`, []errs.Violation{
			{Loc: loc("a"), Msg: "operator exists needs true or false", Type: "value_error"},
			{Loc: loc("a"), Msg: "operator gt needs a number or a string", Type: "value_error"},
			{Loc: loc("z"), Msg: "operator in needs a list", Type: "value_error"},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse(json.RawMessage(test.filter), "body", "trigger", "filter")
			if err == nil {
				t.Fatalf("Parse(%s) = %v, want an error", test.filter, f)
			}
			if !errors.Is(err, errs.Invalid) {
				t.Errorf("Parse error %v is not errs.Invalid", err)
			}
			if diff := cmp.Diff(test.want, errs.Violations(err)); diff != "" {
				t.Errorf("Parse(%s) violations mismatch (-want +got):\n%s", test.filter, diff)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in, want string
	}{
		{``, `null`},
		{`null`, `null`},
		{` {} `, `{}`},
		{`{"b": {"lt": 2.50, "gte": 1e2}, "a": "x", "c": {"eq": {"k": [1, null]}}, "d": null, "e": {"in": ["x", 1]}, "f": {"exists": false}}`,
			`{"a":"x","b":{"gte":1e2,"lt":2.50},"c":{"eq":{"k":[1,null]}},"d":null,"e":{"in":["x",1]},"f":{"exists":false}}`},
	} {
		f, err := Parse(json.RawMessage(test.in))
		if err != nil {
			t.Fatalf("Parse(%s): %v", test.in, err)
		}
		got, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if diff := cmp.Diff(test.want, string(got)); diff != "" {
			t.Errorf("Marshal(Parse(%s)) mismatch (-want +got):\n%s", test.in, diff)
		}
		var again Filter
		if err := json.Unmarshal(got, &again); err != nil {
			t.Fatalf("Unmarshal(%s): %v", got, err)
		}
		twice, err := json.Marshal(&again)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(got), string(twice)); diff != "" {
			t.Errorf("second round trip mismatch (-want +got):\n%s", diff)
		}
	}
	var nilFilter *Filter
	if got, _ := nilFilter.MarshalJSON(); string(got) != "null" {
		t.Errorf("nil filter marshals as %s, want null", got)
	}
	if got, _ := (&Filter{}).MarshalJSON(); string(got) != "{}" {
		t.Errorf("zero filter marshals as %s, want {}", got)
	}
}

func TestUnmarshalInStruct(t *testing.T) {
	t.Parallel()
	var trigger struct {
		Filter *Filter `json:"filter"`
	}
	if err := json.Unmarshal([]byte(`{"filter": {"amount": {"gt": 5}}}`), &trigger); err != nil {
		t.Fatal(err)
	}
	if !trigger.Filter.Match(map[string]any{"amount": 6}) || trigger.Filter.Match(map[string]any{"amount": 5}) {
		t.Errorf("unmarshalled filter does not match as parsed")
	}
	err := json.Unmarshal([]byte(`{"filter": {"amount": {"gt": true}}}`), &trigger)
	if !errors.Is(err, errs.Invalid) {
		t.Errorf("Unmarshal of a bad filter: %v, want errs.Invalid", err)
	}
}

func BenchmarkMatch(b *testing.B) {
	f, err := Parse(json.RawMessage(`{"status": "paid", "amount_cents": {"gte": 10000, "lt": 1e6}, "customer.country": {"in": ["AT", "DE", "CH"]}, "tags": {"contains": "eu"}}`))
	if err != nil {
		b.Fatal(err)
	}
	d := json.NewDecoder(strings.NewReader(event))
	d.UseNumber()
	var data map[string]any
	if err := d.Decode(&data); err != nil {
		b.Fatal(err)
	}
	if !f.Match(data) {
		b.Fatal("benchmark filter does not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Match(data)
	}
}

// TestRoots: a filter's roots are the first segments of its paths, each
// once, in its entries' order (the entries are sorted by path); a nil or
// empty filter has none.
func TestRoots(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		filter string
		want   []string
	}{
		{`null`, nil},
		{`{}`, nil},
		{`{"subject.type": "delivery"}`, []string{"subject"}},
		{`{"steps.a.ok": true, "subject.label": {"ne": "x"}, "steps.b": {"exists": true}, "amount": 5}`,
			[]string{"amount", "steps", "subject"}},
	} {
		f, err := Parse(json.RawMessage(test.filter))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(test.want, f.Roots()); diff != "" {
			t.Errorf("Roots of %s (-want +got):\n%s", test.filter, diff)
		}
	}
	if roots := (*Filter)(nil).Roots(); roots != nil {
		t.Errorf("a nil filter's roots: %v", roots)
	}
}
