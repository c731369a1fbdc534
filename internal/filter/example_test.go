package filter_test

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/filter"
)

// A trigger filter selects the events whose data satisfies every entry.
func Example() {
	f, err := filter.Parse(json.RawMessage(`{
		"status": "paid",
		"amount_cents": {"gte": 10000},
		"customer.country": {"in": ["DE", "AT"]},
		"tags": {"contains": "priority"}
	}`), "body", "trigger", "filter")
	if err != nil {
		fmt.Println(err)
		return
	}
	events := []string{
		`{"status": "paid", "amount_cents": 12500, "customer": {"country": "DE"}, "tags": ["priority"]}`,
		`{"status": "paid", "amount_cents": 9900, "customer": {"country": "DE"}, "tags": ["priority"]}`,
		`{"status": "paid", "amount_cents": 12500, "customer": {"country": "FR"}, "tags": ["priority"]}`,
	}
	for _, e := range events {
		var data map[string]any
		if err := json.Unmarshal([]byte(e), &data); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(f.Match(data))
	}
	out, _ := json.Marshal(f)
	fmt.Println(string(out))
	// Output:
	// true
	// false
	// false
	// {"amount_cents":{"gte":10000},"customer.country":{"in":["DE","AT"]},"status":"paid","tags":{"contains":"priority"}}
}

// Mistakes are reported for every entry at once.
func ExampleParse_invalid() {
	_, err := filter.Parse(json.RawMessage(`{"amount": {"greater": 5}, "country": {"in": "DE"}}`), "body", "trigger", "filter")
	for _, v := range errs.Violations(err) {
		fmt.Println(v)
	}
	// Output:
	// body.trigger.filter.amount: unknown operator "greater" (use one of: eq, ne, gt, gte, lt, lte, in, contains, exists)
	// body.trigger.filter.country: operator in needs a list
}
