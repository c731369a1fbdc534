// Package openapi30 renders bas's OpenAPI 3.1 document in the OpenAPI 3.0
// dialect that oapi-codegen reads: a type list with "null" becomes the type
// with nullable true (and so does anyOf or oneOf a schema or null), a type list of
// several types becomes any type, and the
// 3.1-only keywords go. The client's generator (internal/gen) runs it on
// the golden document before oapi-codegen.
package openapi30

import (
	"encoding/json"
)

// Convert renders a 3.1 document as 3.0.
func Convert(raw []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	doc["openapi"] = "3.0.3"
	walk(doc)
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func walk(v any) {
	switch x := v.(type) {
	case map[string]any:
		if ts, ok := x["type"].([]any); ok {
			var kept []any
			null := false
			for _, t := range ts {
				if t == "null" {
					null = true
					continue
				}
				kept = append(kept, t)
			}
			delete(x, "type")
			if len(kept) == 1 {
				x["type"] = kept[0]
			}
			if null {
				x["nullable"] = true
			}
		}
		for _, key := range []string{"anyOf", "oneOf"} {
			alts, ok := x[key].([]any)
			if !ok || len(alts) != 2 {
				continue
			}
			// anyOf or oneOf [S, {type: null}] is S, nullable.
			for i, a := range alts {
				if am, ok := a.(map[string]any); ok && len(am) == 1 && am["type"] == "null" {
					delete(x, key)
					for k, v := range alts[1-i].(map[string]any) {
						x[k] = v
					}
					x["nullable"] = true
					break
				}
			}
		}
		delete(x, "contentMediaType")
		delete(x, "$schema")
		for _, c := range x {
			walk(c)
		}
	case []any:
		for _, c := range x {
			walk(c)
		}
	}
}
