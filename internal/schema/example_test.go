package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/internal/schema"
)

type lineIn struct {
	Description string `json:"description" jsonschema:"required,minLength=1,maxLength=200"`
	Quantity    int    `json:"quantity" jsonschema:"required,minimum=1"`
}

type invoiceIn struct {
	Currency string   `json:"currency" jsonschema:"required,enum=EUR,enum=USD"`
	Lines    []lineIn `json:"lines" jsonschema:"required,minItems=1"`
}

// A request body is validated against the schema of its Go type, and every
// violation comes back at once in api.md's 422 shape.
func Example() {
	// Compile once, at start-up; the Validator is safe for concurrent use.
	v := schema.MustCompile(schema.Reflect(&invoiceIn{}))

	body := json.RawMessage(`{"currency": "GBP", "lines": [{"description": "Widget", "quantity": 0}, {"quantity": 2}], "note": "rush"}`)
	for _, violation := range v.ValidateJSON(body, "body") {
		out, _ := json.Marshal(violation)
		fmt.Println(string(out))
	}
	// Output:
	// {"loc":["body","currency"],"msg":"must be one of: EUR, USD","type":"enum"}
	// {"loc":["body","lines",0,"quantity"],"msg":"must be at least 1","type":"greater_than_equal"}
	// {"loc":["body","lines",1,"description"],"msg":"is required","type":"missing"}
	// {"loc":["body","note"],"msg":"is not an allowed field","type":"extra_forbidden"}
}

// A Cache compiles schemas that arrive at run time once each.
func ExampleCache() {
	var cache schema.Cache
	inputSchema := json.RawMessage(`{"type": "object", "required": ["amount_cents"], "properties": {"amount_cents": {"type": "integer", "minimum": 0}}}`)

	for _, input := range []map[string]any{{"amount_cents": 1200}, {"amount_cents": -5}, {}} {
		v, err := cache.Compile(inputSchema)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(v.Validate(input, "body", "input"))
	}
	fmt.Println(cache.Len(), "compiled")
	// Output:
	// []
	// [body.input.amount_cents: must be at least 0]
	// [body.input.amount_cents: is required]
	// 1 compiled
}
