package capability_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/capability"
)

// greeter is a provider of one capability of its own.
type greeter struct{}

func (greeter) Info() capability.Info {
	return capability.Info{ID: "greeter", Name: "Greeter", Kind: capability.KindConnector, Capabilities: []string{"greet.say"}}
}

func (greeter) Call(_ context.Context, call capability.Call) (json.RawMessage, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"greeting": "Hello, " + args.Name})
}

// A provider implements Info and Call; the engine calls it the same way
// whether it is built in, a connector or a plugin.
func Example_provider() {
	var p capability.Provider = greeter{}
	out, err := p.Call(context.Background(), capability.Call{
		Tenant: "ten_1", Capability: "greet.say", Args: json.RawMessage(`{"name":"Ada"}`), IdempotencyKey: "run_1/greet/1",
	})
	fmt.Println(p.Info().ID, string(out), err)
	// Output: greeter {"greeting":"Hello, Ada"} <nil>
}

// ExampleViolation renders where a value is wrong, and why.
func ExampleViolation() {
	v := capability.Violation{Loc: []any{"body", "lines", 0, "quantity"}, Msg: "must be at least 1", Type: "value_error"}
	fmt.Println(v.Where())
	fmt.Println(v)
	fmt.Println(capability.Violation{}.Where() == "")
	// Output:
	// body.lines.0.quantity
	// body.lines.0.quantity: must be at least 1
	// true
}
