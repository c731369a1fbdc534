package jsonkeys_test

import (
	"fmt"
	"reflect"

	"github.com/bas-platform/bas/internal/jsonkeys"
)

func ExampleChecker_Check() {
	type runIn struct {
		Label string `json:"label"`
	}
	var c jsonkeys.Checker
	for _, v := range c.Check([]byte(`{"label":"ok","LABEL":"long","label":"again"}`), reflect.TypeFor[runIn](), "body") {
		fmt.Println(v.Loc, v.Type)
	}
	// Output:
	// [body LABEL] extra_forbidden
	// [body label] value_error
}
