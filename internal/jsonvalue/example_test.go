package jsonvalue_test

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/internal/jsonvalue"
)

// Values decoded with json.Number, values decoded as float64 and values built
// in Go compare alike.
func Example() {
	var decoded map[string]any
	if err := json.Unmarshal([]byte(`{"amount": 12.5, "tags": ["a", "b"]}`), &decoded); err != nil {
		fmt.Println(err)
		return
	}
	built := map[string]any{"amount": json.Number("12.50"), "tags": []string{"a", "b"}}
	fmt.Println(jsonvalue.Equal(decoded, built))
	fmt.Println(jsonvalue.Equal(5, "5"))

	c, ok := jsonvalue.Compare(json.Number("1e3"), 999)
	fmt.Println(c, ok)
	c, ok = jsonvalue.Compare("2025-01-31", "2025-02-01")
	fmt.Println(c, ok)
	_, ok = jsonvalue.Compare(1, "1")
	fmt.Println(ok)
	// Output:
	// true
	// false
	// 1 true
	// -1 true
	// false
}
