package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/internal/schema"
)

type fuzzAddress struct {
	Line1   string `json:"line1" jsonschema:"required,minLength=1,maxLength=200"`
	Country string `json:"country,omitempty" jsonschema:"pattern=^[A-Z]{2}$"`
}

type fuzzIn struct {
	Name    string         `json:"name" jsonschema:"required,minLength=1,maxLength=120"`
	Email   *string        `json:"email,omitempty" jsonschema:"nullable,format=email,maxLength=320"`
	Kind    string         `json:"kind,omitempty" jsonschema:"enum=a,enum=b"`
	Amount  int64          `json:"amount_cents,omitempty" jsonschema:"minimum=0,maximum=1000000000000000"`
	Due     *string        `json:"due_date,omitempty" jsonschema:"nullable,format=date"`
	Tags    []string       `json:"tags,omitempty" jsonschema:"maxItems=20"`
	Address *fuzzAddress   `json:"address,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
}

// FuzzValidateJSON: no document panics validation; what it accepts
// decodes into the Go type; every violation is located under the root.
func FuzzValidateJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"name": "a"}`, `{"name": ""}`, `{"name": 5}`, `{"name": "a", "email": "x@example.com"}`,
		`{"name": "a", "email": "not mail"}`, `{"name": "a", "kind": "c"}`, `{"name": "a", "amount_cents": -1}`,
		`{"name": "a", "amount_cents": 1e30}`, `{"name": "a", "amount_cents": 1.5}`, `{"name": "a", "due_date": "2024-02-30"}`,
		`{"name": "a", "tags": [1]}`, `{"name": "a", "address": {"line1": "", "country": "x"}}`, `[]`, `null`, `1`,
		`{"name": "a", "data": {"deep": [[[[{"x": null}]]]]}}`, `{"name": "\u0000"}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	v := schema.MustCompile(schema.Reflect(&fuzzIn{}))
	f.Fuzz(func(t *testing.T, doc []byte) {
		vs := v.ValidateJSON(doc, "body")
		for _, x := range vs {
			if len(x.Loc) == 0 || x.Loc[0] != "body" || x.Type == "" {
				t.Fatalf("ValidateJSON(%q): violation %+v", doc, x)
			}
		}
		if len(vs) == 0 {
			var in fuzzIn
			if err := json.Unmarshal(doc, &in); err != nil {
				t.Fatalf("ValidateJSON(%q) passed but it does not decode: %v", doc, err)
			}
		}
	})
}
