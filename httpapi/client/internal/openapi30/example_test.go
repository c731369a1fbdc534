package openapi30_test

import (
	"fmt"

	"github.com/bas-platform/bas/httpapi/client/internal/openapi30"
)

// A 3.1 nullable type becomes a 3.0 nullable schema.
func Example() {
	out, err := openapi30.Convert([]byte(`{"openapi": "3.1.0", "components": {"schemas": {"A": {"type": ["string", "null"]}}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// {
	//   "components": {
	//     "schemas": {
	//       "A": {
	//         "nullable": true,
	//         "type": "string"
	//       }
	//     }
	//   },
	//   "openapi": "3.0.3"
	// }
}
