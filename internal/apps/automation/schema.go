package automation

import (
	"encoding/json"
	"strconv"

	invopop "github.com/invopop/jsonschema"
)

// JSONSchema describes Patch as ParsePatch reads it: an object of the
// patch fields, each optional, of its JSON type and bounds, or null (which
// clears it). schema.Reflect and the API's OpenAPI document use it.
func (Patch) JSONSchema() *invopop.Schema {
	props := invopop.NewProperties()
	for _, pf := range patchFields {
		s := &invopop.Schema{}
		switch pf.kind {
		case kindBool:
			s.Type = "boolean"
		case kindInt, kindNumber:
			s.Type = "number"
			if pf.kind == kindInt {
				s.Type = "integer"
			}
			s.Minimum = jsonNumber(pf.min)
			s.Maximum = jsonNumber(pf.max)
		case kindString:
			s.Type = "string"
			n := uint64(pf.max)
			s.MaxLength = &n
		}
		props.Set(pf.name, &invopop.Schema{AnyOf: []*invopop.Schema{s, {Type: "null"}}})
	}
	return &invopop.Schema{Type: "object", Properties: props}
}

func jsonNumber(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
}
