package openapi30_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bas-platform/bas/httpapi/client/internal/openapi30"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		name     string
		in, want string
	}{
		{"nullable type", `{"type": ["integer", "null"], "minimum": 1}`, `{"type": "integer", "nullable": true, "minimum": 1}`},
		{"several types", `{"type": ["string", "integer"]}`, `{}`},
		{"anyOf with null", `{"anyOf": [{"type": "number", "maximum": 1}, {"type": "null"}]}`,
			`{"type": "number", "maximum": 1, "nullable": true}`},
		{"oneOf with null", `{"oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "null"}]}`,
			`{"type": "array", "items": {"type": "object"}, "nullable": true}`},
		{"anyOf without null", `{"anyOf": [{"type": "number"}, {"type": "string"}]}`,
			`{"anyOf": [{"type": "number"}, {"type": "string"}]}`},
		{"3.1 keywords", `{"type": "string", "format": "binary", "contentMediaType": "application/pdf"}`,
			`{"type": "string", "format": "binary"}`},
		{"deep", `{"properties": {"a": {"items": {"type": ["boolean", "null"]}}}}`,
			`{"properties": {"a": {"items": {"type": "boolean", "nullable": true}}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := openapi30.Convert([]byte(`{"openapi": "3.1.0", "s": ` + tc.in + `}`))
			if err != nil {
				t.Fatal(err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(`{"openapi": "3.0.3", "s": `+tc.want+`}`), &want); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
