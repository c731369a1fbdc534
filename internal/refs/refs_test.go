package refs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// decode decodes s as bas decodes request bodies: numbers stay json.Number.
func decode(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func runData(t *testing.T) map[string]any {
	t.Helper()
	return decode(t, `{
		"subject": {"type": "invoice", "label": "INV-7"},
		"trigger": {"type": "event", "data": {"amount_cents": 12500, "big": 1.5e3, "tiny": 2E-3, "ok": true, "none": null}},
		"steps": {
			"extract": {"fields": {"total": 99.5, "number": "INV-7", "lines": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}]}},
			"review": {"outcome": "approve", "fields": {}}
		}
	}`).(map[string]any)
}

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		config string
		want   string
	}{
		{"no references", `{"a": "plain", "b": 1, "c": [true, null]}`, `{"a": "plain", "b": 1, "c": [true, null]}`},
		{"exact keeps number", `{"amount": "${trigger.data.amount_cents}"}`, `{"amount": 12500}`},
		{"exact keeps bool", `{"ok": "${trigger.data.ok}"}`, `{"ok": true}`},
		{"exact keeps null", `{"v": "${trigger.data.none}"}`, `{"v": null}`},
		{"exact keeps object", `{"s": "${subject}"}`, `{"s": {"type": "invoice", "label": "INV-7"}}`},
		{"exact keeps list", `{"l": "${steps.extract.fields.lines}"}`, `{"l": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}]}`},
		{"exact string", `{"to": "${subject.label}"}`, `{"to": "INV-7"}`},
		{"list index", `{"sku": "${steps.extract.fields.lines.1.sku}"}`, `{"sku": "B-2"}`},
		{"interpolated string", `{"t": "Invoice ${subject.label} is due"}`, `{"t": "Invoice INV-7 is due"}`},
		{"interpolated number", `{"t": "total ${steps.extract.fields.total} EUR"}`, `{"t": "total 99.5 EUR"}`},
		{"interpolated exponent number", `{"t": "${trigger.data.big}/${trigger.data.tiny}"}`, `{"t": "1500/0.002"}`},
		{"interpolated bool and null", `{"t": "ok=${trigger.data.ok} none=${trigger.data.none}"}`, `{"t": "ok=true none=null"}`},
		{"interpolated object", `{"t": "s: ${subject}"}`, `{"t": "s: {\"label\":\"INV-7\",\"type\":\"invoice\"}"}`},
		{"interpolated list", `{"t": "${steps.extract.fields.lines.0.qty}x ${steps.extract.fields.lines.0.sku}"}`, `{"t": "2x A-1"}`},
		{"two adjacent references", `{"t": "${subject.type}${subject.label}"}`, `{"t": "invoiceINV-7"}`},
		{"escape", `{"t": "$${subject.label} is ${subject.label}"}`, `{"t": "${subject.label} is INV-7"}`},
		{"escape alone is text", `{"t": "$${subject.label}"}`, `{"t": "${subject.label}"}`},
		{"lone dollar", `{"t": "$5 and $ {x} and $$"}`, `{"t": "$5 and $ {x} and $$"}`},
		{"nested in lists and maps", `{"args": {"to": ["${subject.label}", {"n": "${steps.extract.fields.lines.0.qty}"}]}}`, `{"args": {"to": ["INV-7", {"n": 2}]}}`},
		{"scalar config", `"${subject.type}"`, `"invoice"`},
		{"empty object value", `{"f": "${steps.review.fields}"}`, `{"f": {}}`},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(decode(t, test.config), runData(t))
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(decode(t, test.want), got); diff != "" {
				t.Errorf("Resolve(%s) mismatch (-want +got):\n%s", test.config, diff)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		config string
		want   string
	}{
		{"missing path", `{"a": "${steps.extract.fields.totl}"}`, `reference ${steps.extract.fields.totl}: no value at "steps.extract.fields.totl"`},
		{"missing inside text", `{"a": ["x ${subject.name} y"]}`, `reference ${subject.name}: no value at "subject.name"`},
		{"index out of range", `{"a": "${steps.extract.fields.lines.2.sku}"}`, `reference ${steps.extract.fields.lines.2.sku}: no value at "steps.extract.fields.lines.2.sku"`},
		{"through a string", `{"a": "${subject.label.x}"}`, `reference ${subject.label.x}: no value at "subject.label.x"`},
		{"unterminated", `{"a": "x ${subject.label"}`, `reference ${subject.label: missing closing brace`},
		{"empty path", `{"a": "${}"}`, `reference ${}: empty path`},
		{"empty segment", `{"a": "${subject..label}"}`, `reference ${subject..label}: empty segment in path "subject..label"`},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			_, err := Resolve(decode(t, test.config), runData(t))
			if err == nil {
				t.Fatalf("Resolve(%s) = nil error, want %q", test.config, test.want)
			}
			if diff := cmp.Diff(test.want, err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if errors.Is(err, errs.Invalid) {
				t.Errorf("error %v is marked errs.Invalid; a reference failure is a step error", err)
			}
		})
	}
}

func TestResolveDoesNotShare(t *testing.T) {
	t.Parallel()
	data := runData(t)
	config := decode(t, `{"s": "${subject}", "keep": {"k": "v"}}`).(map[string]any)
	got, err := Resolve(config, data)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(map[string]any)
	out["s"].(map[string]any)["label"] = "changed"
	out["keep"].(map[string]any)["k"] = "changed"
	if diff := cmp.Diff("INV-7", data["subject"].(map[string]any)["label"]); diff != "" {
		t.Errorf("data changed through the result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(decode(t, `{"s": "${subject}", "keep": {"k": "v"}}`), any(config)); diff != "" {
		t.Errorf("config changed (-want +got):\n%s", diff)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	data := runData(t)
	type goItem map[string]string
	data["go"] = map[string]any{
		"items":  []goItem{{"sku": "G-1"}},
		"counts": map[string]int{"a": 3},
		"arr":    [2]string{"x", "y"},
		"ptr":    &[]any{"p"},
	}
	for _, test := range []struct {
		path   string
		want   any
		wantOK bool
	}{
		{"subject.label", "INV-7", true},
		{"trigger.data.amount_cents", json.Number("12500"), true},
		{"trigger.data.none", nil, true},
		{"steps.extract.fields.lines.0.sku", "A-1", true},
		{"steps.extract.fields.lines.1", map[string]any{"sku": "B-2", "qty": json.Number("1")}, true},
		{"steps.review.fields", map[string]any{}, true},
		{"go.items.0.sku", "G-1", true},
		{"go.counts.a", 3, true},
		{"go.arr.1", "y", true},
		{"go.ptr.0", "p", true},
		{"", nil, false},
		{"missing", nil, false},
		{"subject.label.x", nil, false},
		{"trigger.data.none.x", nil, false},
		{"steps.extract.fields.lines.2", nil, false},
		{"steps.extract.fields.lines.-1", nil, false},
		{"steps.extract.fields.lines.01", nil, false},
		{"steps.extract.fields.lines.+1", nil, false},
		{"steps.extract.fields.lines.sku", nil, false},
		{"steps.extract.fields.lines.99999999999999999999999", nil, false},
		{"subject.", nil, false},
		{".subject", nil, false},
		{"subject..label", nil, false},
		{"go.counts.b", nil, false},
	} {
		t.Run(test.path, func(t *testing.T) {
			t.Parallel()
			got, ok := Lookup(data, test.path)
			if ok != test.wantOK {
				t.Fatalf("Lookup(%q) ok = %v, want %v", test.path, ok, test.wantOK)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("Lookup(%q) mismatch (-want +got):\n%s", test.path, diff)
			}
		})
	}
}

func TestLookupNilData(t *testing.T) {
	t.Parallel()
	if v, ok := Lookup(nil, "a"); ok {
		t.Errorf("Lookup(nil, a) = %v, true; want no value", v)
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		config string
		want   []string
	}{
		{"none", `{"a": "x", "b": [1, true]}`, nil},
		{"sorted and unique", `{"z": "${steps.b.x}", "a": ["${subject.label}", "n ${steps.b.x} ${steps.a.y}"]}`, []string{"steps.a.y", "steps.b.x", "subject.label"}},
		{"escapes are not references", `{"a": "$${subject.label}"}`, nil},
		{"malformed left out", `{"a": "${subject", "b": "${x}"}`, []string{"x"}},
		{"scalar", `"${a.b}"`, []string{"a.b"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, Paths(decode(t, test.config))); diff != "" {
				t.Errorf("Paths(%s) mismatch (-want +got):\n%s", test.config, diff)
			}
		})
	}
}

// TestEach reports every well-formed reference with the location of its
// string, in Check's order, repeats included.
func TestEach(t *testing.T) {
	t.Parallel()
	type ref struct {
		Path string
		At   []any
	}
	var got []ref
	Each(decode(t, `{"z": "${steps.b.x}", "a": ["${subject.label}", "n ${steps.b.x} $${no} ${steps.a.y}", "${bad"]}`),
		func(path string, at []any) { got = append(got, ref{path, at}) }, "body", 2)
	want := []ref{
		{"subject.label", []any{"body", 2, "a", 0}},
		{"steps.b.x", []any{"body", 2, "a", 1}},
		{"steps.a.y", []any{"body", 2, "a", 1}},
		{"steps.b.x", []any{"body", 2, "z"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Each mismatch (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		config string
		want   []errs.Violation
	}{
		{"valid", `{"a": "${x.y} and $${z", "b": ["${q}"]}`, nil},
		{"all malformed reported", `{"b": ["ok", "${x"], "a": {"c": "${}"}, "d": "${a..b}"}`, []errs.Violation{
			{Loc: []any{"body", "steps", 0, "config", "a", "c"}, Msg: "reference ${}: empty path", Type: "value_error"},
			{Loc: []any{"body", "steps", 0, "config", "b", 1}, Msg: "reference ${x: missing closing brace", Type: "value_error"},
			{Loc: []any{"body", "steps", 0, "config", "d"}, Msg: `reference ${a..b}: empty segment in path "a..b"`, Type: "value_error"},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			err := Check(decode(t, test.config), "body", "steps", 0, "config")
			if test.want != nil && !errors.Is(err, errs.Invalid) {
				t.Errorf("Check error %v is not errs.Invalid", err)
			}
			if diff := cmp.Diff(test.want, errs.Violations(err)); diff != "" {
				t.Errorf("Check(%s) violations mismatch (-want +got):\n%s", test.config, diff)
			}
		})
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in   any
		want string
	}{
		{"s", "s"},
		{nil, "null"},
		{false, "false"},
		{json.Number("12"), "12"},
		{json.Number("1.50"), "1.50"},
		{json.Number("1.5e3"), "1500"},
		{json.Number("-1.5E+3"), "-1500"},
		{json.Number("12e-4"), "0.0012"},
		{json.Number("-0.0e1"), "0"},
		{json.Number("123.456e1"), "1234.56"},
		{json.Number("1e-400"), "0." + strings.Repeat("0", 399) + "1"},
		{json.Number("1e999999999"), "1e999999999"},
		{1e21, "1000000000000000000000"},
		{0.1, "0.1"},
		{float32(0.1), "0.1"},
		{-7, "-7"},
		{uint8(7), "7"},
		{[]any{"a", json.Number("1")}, `["a",1]`},
	} {
		got, err := Text(test.in)
		if err != nil {
			t.Errorf("Text(%#v): %v", test.in, err)
			continue
		}
		if got != test.want {
			t.Errorf("Text(%#v) = %q, want %q", test.in, got, test.want)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	data := map[string]any{"subject": map[string]any{"label": "INV-7"}, "steps": map[string]any{"x": map[string]any{"n": json.Number("3")}}}
	config := map[string]any{"title": "Review ${subject.label}", "n": "${steps.x.n}", "static": "text", "list": []any{"a", "b"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(config, data); err != nil {
			b.Fatal(err)
		}
	}
}
