package schema

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, raw, want string
	}{
		{"drops false", `{"type": "object", "additionalProperties": false, "properties": {}}`,
			`{"type":"object","properties":{}}`},
		{"keeps order and nested objects",
			`{"z": 1, "properties": {"a": {"type": "object", "additionalProperties": false, "required": ["x"]}}, "a": 2}`,
			`{"z":1,"properties":{"a":{"type":"object","required":["x"]}},"a":2}`},
		{"inside lists", `{"oneOf": [{"additionalProperties": false}, {"type": "string"}]}`,
			`{"oneOf":[{},{"type":"string"}]}`},
		{"keeps true and schemas", `{"additionalProperties": true, "items": {"additionalProperties": {"type": "string"}}}`,
			`{"additionalProperties":true,"items":{"additionalProperties":{"type":"string"}}}`},
		{"keeps number text", `{"maximum": 12345678901234567890.50, "minimum": 1e-3}`,
			`{"maximum":12345678901234567890.50,"minimum":1e-3}`},
		{"scalars", `"s"`, `"s"`},
		{"not JSON is kept", `{"a": `, `{"a": `},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got := Open(json.RawMessage(test.raw))
			if diff := cmp.Diff(test.want, string(got)); diff != "" {
				t.Errorf("Open(%s) mismatch (-want +got):\n%s", test.raw, diff)
			}
		})
	}
}

func TestOpenAcceptsUnknownFields(t *testing.T) {
	t.Parallel()
	type item struct {
		SKU string `json:"sku" jsonschema:"required"`
	}
	type record struct {
		Name  string `json:"name" jsonschema:"required"`
		Items []item `json:"items"`
	}
	strict := MustCompile(Reflect(&record{}))
	open := MustCompile(Open(Reflect(&record{})))
	doc := map[string]any{"name": "n", "extra": true, "items": []any{map[string]any{"sku": "a", "more": 1}}}
	if vs := strict.Validate(doc); len(vs) != 2 {
		t.Errorf("strict schema: got %v, want two extra_forbidden violations", vs)
	}
	if vs := open.Validate(doc); len(vs) != 0 {
		t.Errorf("open schema: got %v, want none", vs)
	}
	if vs := open.Validate(map[string]any{"items": []any{map[string]any{}}}); len(vs) != 2 {
		t.Errorf("open schema must still require fields: got %v", vs)
	}
}
