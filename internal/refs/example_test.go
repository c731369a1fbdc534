package refs_test

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/internal/refs"
)

// A step's config is resolved against the run's data just before the step
// runs.
func Example() {
	var data, config map[string]any
	_ = json.Unmarshal([]byte(`{
		"subject": {"type": "invoice", "label": "INV-7"},
		"trigger": {"data": {"amount_cents": 12500}},
		"steps": {"extract": {"fields": {"total": 125.5, "lines": [{"sku": "A-1"}]}}}
	}`), &data)
	_ = json.Unmarshal([]byte(`{
		"title": "Approve ${subject.label} (${steps.extract.fields.total} EUR)",
		"amount_cents": "${trigger.data.amount_cents}",
		"first_sku": "${steps.extract.fields.lines.0.sku}",
		"note": "literal $${not.a.reference}"
	}`), &config)

	fmt.Println(refs.Paths(config))
	resolved, err := refs.Resolve(config, data)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(resolved, "", "  ")
	fmt.Println(string(out))

	_, err = refs.Resolve(map[string]any{"amount": "${steps.extract.fields.totl}"}, data)
	fmt.Println(err)
	// Output:
	// [steps.extract.fields.lines.0.sku steps.extract.fields.total subject.label trigger.data.amount_cents]
	// {
	//   "amount_cents": 12500,
	//   "first_sku": "A-1",
	//   "note": "literal ${not.a.reference}",
	//   "title": "Approve INV-7 (125.5 EUR)"
	// }
	// reference ${steps.extract.fields.totl}: no value at "steps.extract.fields.totl"
}
