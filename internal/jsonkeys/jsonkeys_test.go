package jsonkeys_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonkeys"
	"github.com/google/go-cmp/cmp"
)

type line struct {
	Label string `json:"label"`
	Qty   int    `json:"qty,omitempty"`
}

type Embedded struct {
	Note string `json:"note"`
}

type input struct {
	Embedded
	Label  string          `json:"label"`
	Lines  []line          `json:"lines"`
	ByName map[string]line `json:"by_name"`
	Data   map[string]any  `json:"data"`
	Next   *input          `json:"next"`
	Skip   string          `json:"-"`
	Plain  string
}

func TestCheck(t *testing.T) {
	long := strings.Repeat("x", 10)
	tests := []struct {
		name string
		doc  string
		typ  reflect.Type
		want []errs.Violation
	}{
		{"clean", `{"label":"a","lines":[{"label":"b","qty":1}],"data":{"Label":1},"note":"n","Plain":"p"}`, reflect.TypeFor[input](), nil},
		{"case variant beside the key", `{"label":"ok","LABEL":"` + long + `"}`, reflect.TypeFor[input](),
			[]errs.Violation{{Loc: []any{"body", "LABEL"}, Msg: `is not a field; keys are case-sensitive (did you mean "label"?)`, Type: "extra_forbidden"}}},
		{"case variant alone", `{"Label":"x"}`, reflect.TypeFor[*input](),
			[]errs.Violation{{Loc: []any{"body", "Label"}, Msg: `is not a field; keys are case-sensitive (did you mean "label"?)`, Type: "extra_forbidden"}}},
		{"case variant of an embedded field", `{"NOTE":"x"}`, reflect.TypeFor[input](),
			[]errs.Violation{{Loc: []any{"body", "NOTE"}, Msg: `is not a field; keys are case-sensitive (did you mean "note"?)`, Type: "extra_forbidden"}}},
		{"case variant in a list element", `{"lines":[{"label":"a"},{"Qty":2}]}`, reflect.TypeFor[input](),
			[]errs.Violation{{Loc: []any{"body", "lines", 1, "Qty"}, Msg: `is not a field; keys are case-sensitive (did you mean "qty"?)`, Type: "extra_forbidden"}}},
		{"case variant in a map value and a recursive field", `{"by_name":{"a":{"LABEL":"x"}},"next":{"next":{"Lines":[]}}}`, reflect.TypeFor[input](),
			[]errs.Violation{
				{Loc: []any{"body", "by_name", "a", "LABEL"}, Msg: `is not a field; keys are case-sensitive (did you mean "label"?)`, Type: "extra_forbidden"},
				{Loc: []any{"body", "next", "next", "Lines"}, Msg: `is not a field; keys are case-sensitive (did you mean "lines"?)`, Type: "extra_forbidden"},
			}},
		{"unknown key that is no variant is left to the schema", `{"other":1,"skip":2}`, reflect.TypeFor[input](), nil},
		{"a json:\"-\" field is no field", `{"Skip":1}`, reflect.TypeFor[input](), nil},
		{"duplicate at the top", `{"label":"a","label":"b"}`, reflect.TypeFor[input](),
			[]errs.Violation{{Loc: []any{"body", "label"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}},
		{"duplicate inside free data", `{"data":{"x":[{"k":1,"k":2}]}}`, reflect.TypeFor[input](),
			[]errs.Violation{{Loc: []any{"body", "data", "x", 0, "k"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}},
		{"duplicate written with an escape", `{"a":1,"\u0061":2}`, nil,
			[]errs.Violation{{Loc: []any{"body", "a"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}},
		{"same key in sibling objects is fine", `[{"a":1},{"a":2}]`, nil, nil},
		{"not an object", `"x"`, reflect.TypeFor[input](), nil},
	}
	var c jsonkeys.Checker
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Check([]byte(tt.doc), tt.typ, "body")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%s) (-want +got):\n%s", tt.doc, diff)
			}
		})
	}
}

// TestCheckLargeObject: past the pairwise limit, duplicates are still found.
func TestCheckLargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		b.WriteString(`"k` + string(rune('a'+i%26)) + strings.Repeat("z", i/26) + `":1,`)
	}
	b.WriteString(`"ka":2}`)
	got := new(jsonkeys.Checker).Check([]byte(b.String()), nil, "body")
	want := []errs.Violation{{Loc: []any{"body", "ka"}, Msg: "appears more than once in this object; send each key once", Type: "value_error"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func BenchmarkCheck(b *testing.B) {
	doc := []byte(`{"label":"invoice 42","lines":[{"label":"a","qty":1},{"label":"b","qty":2}],"data":{"supplier":"ACME","total":12345,"tags":["x","y"]}}`)
	var c jsonkeys.Checker
	typ := reflect.TypeFor[input]()
	b.ReportAllocs()
	for b.Loop() {
		if vs := c.Check(doc, typ, "body"); len(vs) > 0 {
			b.Fatal(vs)
		}
	}
}
