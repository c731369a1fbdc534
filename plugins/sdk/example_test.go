package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins/sdk"
	"github.com/cockroachdb/errors"
)

// weather is a provider of one capability, weather.today.
type weather struct {
	sdk.HostRef // to emit events
}

func (w *weather) Info() capability.Info {
	return capability.Info{
		ID:           "weather", // listed by the host as plugin.weather
		Name:         "Weather",
		Capabilities: []string{"weather.today"},
		App:          &capability.App{ID: "weather", Name: "Weather", Events: capability.Events{Emits: []string{"weather.asked"}}},
	}
}

// Capabilities describes weather.today, which the standard catalog does not
// have; a workspace refuses a provider that lists a capability it neither
// finds in the catalog nor sees described.
func (w *weather) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "weather.today", Name: "Today's weather",
		Description: "Today's forecast for a city.",
		Args:        json.RawMessage(`{"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}`),
		Result:      json.RawMessage(`{"type": "object", "required": ["sky"], "properties": {"sky": {"type": "string"}}}`)}}
}

func (w *weather) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	var args struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal(call.Args, &args); err != nil || args.City == "" {
		return nil, sdk.Invalidf([]any{"args", "city"}, "missing", "a city is required")
	}
	if args.City != "Lisbon" {
		return nil, sdk.NotFoundf("no forecast for %s", args.City)
	}
	_ = w.Emit(ctx, capability.Event{Tenant: call.Tenant, Name: "weather.asked", Data: call.Args})
	return json.RawMessage(`{"city":"Lisbon","sky":"clear","max_c":24}`), nil
}

// A vendor's whole plugin: a provider and a main that serves it. Build it
// with go build and put the binary in the host's plugin directory.
func Example_provider() {
	// func main() {
	sdk.Serve(&weather{})
	// }
}

// Errors a provider returns keep their kind in the host.
func ExampleNotFoundf() {
	w := &weather{}
	_, err := w.Call(context.Background(), capability.Call{Capability: "weather.today", Args: json.RawMessage(`{"city":"Oslo"}`)})
	fmt.Println(err)
	fmt.Println(errors.Is(err, sdk.NotFound))
	// Output:
	// no forecast for Oslo
	// true
}
