package filter_test

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/filter"
)

// FuzzParse: no expression panics Parse or Match; a refused one carries
// violations; an accepted one survives a marshal round trip unchanged.
func FuzzParse(f *testing.F) {
	for _, seed := range [][2]string{
		{`{}`, `{}`},
		{`{"status": "paid"}`, `{"status": "paid"}`},
		{`{"amount": {"gt": 100}}`, `{"amount": 150}`},
		{`{"a.b.c": {"in": [1, 2, "x"]}}`, `{"a": {"b": {"c": 2}}}`},
		{`{"x": {"exists": true}}`, `{"x": null}`},
		{`{"x": {"contains": "ab"}}`, `{"x": ["ab", 1]}`},
		{`{"x": {"gte": "2024-01-01", "lt": "2025"}}`, `{"x": "2024-06-01"}`},
		{`{"x": {"nope": 1}}`, `{}`},
		{`{"": 1}`, `{"": 1}`},
		{`{"x": {"in": []}}`, `{"x": 1}`},
		{`{"x": {"gt": null}}`, `{"x": 1}`},
		{`[]`, `[]`},
		{`{"x.0.y": 1}`, `{"x": [{"y": 1}]}`},
		{`{"x": {"ne": {"a": 1}}}`, `{"x": {"a": 1}}`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, raw, doc []byte) {
		flt, err := filter.Parse(raw, "filter")
		if err != nil {
			if len(errs.Violations(err)) == 0 {
				t.Fatalf("Parse(%q): error %v carries no violations", raw, err)
			}
			return
		}
		var data map[string]any
		if json.Unmarshal(doc, &data) == nil {
			m := flt.Match(data)
			out, err := json.Marshal(flt)
			if err != nil {
				t.Fatalf("Marshal(Parse(%q)): %v", raw, err)
			}
			again, err := filter.Parse(out, "filter")
			if err != nil {
				t.Fatalf("Parse(Marshal(Parse(%q))) = %s: %v", raw, out, err)
			}
			if again.Match(data) != m {
				t.Fatalf("filter %q matches %q, its round trip %s does not agree", raw, doc, out)
			}
		}
	})
}
