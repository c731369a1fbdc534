package jsonkeys_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/bas-platform/bas/internal/jsonkeys"
)

type fuzzLine struct {
	Description string `json:"description"`
	Amount      int64  `json:"amount_cents"`
}

type fuzzIn struct {
	Name   string            `json:"name"`
	Roles  []string          `json:"roles"`
	Lines  []fuzzLine        `json:"lines"`
	Meta   map[string]any    `json:"meta"`
	Labels map[string]string `json:"labels"`
	Any    any               `json:"any"`
	Ptr    *fuzzLine         `json:"ptr"`
}

// FuzzCheck: no document panics the key check, and every violation it
// reports is located under the root. A document with a key twice in one
// object is never passed.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"name": "a"}`, `{"name": "a", "name": "b"}`, `{"Name": "a"}`, `{"NAME": 1, "name": 2}`,
		`{"lines": [{"description": "x", "description": "y"}]}`, `{"lines": [{"Description": "x"}]}`,
		`{"meta": {"a": 1, "a": 2}}`, `{"any": {"x": {"y": [1, {"z": 1, "z": 2}]}}}`, `[]`, `null`, `"x"`,
		`{"ptr": {"amount_cents": 1, "AMOUNT_CENTS": 2}}`, `{"a\u0000": 1, "a\u0000": 2}`, `{"\u00e9": 1, "\u00c9": 2}`,
		`{"name": "\ud800"}`, `{"k": 1e999}`, `{` + "\"x\":" + `[[[[[[[[[[]]]]]]]]]]}`,
	} {
		f.Add([]byte(seed))
	}
	var c jsonkeys.Checker
	t := reflect.TypeFor[fuzzIn]()
	f.Fuzz(func(tt *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return // the caller refuses invalid JSON first
		}
		for _, v := range c.Check(doc, t, "body") {
			if len(v.Loc) == 0 || v.Loc[0] != "body" || v.Type == "" || v.Msg == "" {
				tt.Fatalf("Check(%q): violation %+v", doc, v)
			}
		}
	})
}
