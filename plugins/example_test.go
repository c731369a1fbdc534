package plugins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/plugins"
	"github.com/cockroachdb/errors"
)

// bus stands for the engine's event bus.
type bus struct{}

func (bus) Emit(ctx context.Context, ev capability.Event) error {
	fmt.Println("event", ev.Name, "for", ev.Tenant)
	return nil
}

// Load every plugin in a directory and call one. (Not run: it needs plugin
// binaries; see the tests.)
func Example() {
	ctx := context.Background()
	h := plugins.NewHost(plugins.HostOptions{
		Logger:      slog.Default(),
		Sink:        bus{},
		CallTimeout: 10 * time.Second,
		Checksums:   map[string]string{"acme-erp": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	})
	defer h.Close()

	providers, loadErrs := h.LoadDir(ctx, "plugins")
	for _, err := range loadErrs {
		slog.Warn("plugin not loaded", "error", err)
	}
	for _, p := range providers {
		out, err := p.Call(ctx, capability.Call{
			Tenant:         "t_1",
			Capability:     "erp.purchase_order.get",
			Args:           json.RawMessage(`{"number":"PO-1001"}`),
			IdempotencyKey: "run_1/lookup/1",
		})
		switch {
		case errors.Is(err, errs.Unavailable):
			// retry later: the plugin is restarting or timed out
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Println(string(out))
		}
	}
}

// A plugin that cannot be loaded is reported, and listed as a failed
// provider for GET /v1/connections.
func ExampleHost_Failed() {
	ctx := context.Background()
	h := plugins.NewHost(plugins.HostOptions{Logger: slog.New(slog.DiscardHandler)})
	defer h.Close()

	_, err := h.Load(ctx, "/opt/bas/plugins/acme-erp")
	fmt.Println(err)
	fmt.Println(errors.Is(err, errs.NotFound))
	for _, p := range h.Failed() {
		health := p.(capability.HealthChecker).Health(ctx)
		fmt.Println(p.Info().ID, health.Status, health.Detail)
	}
	// Output:
	// plugin /opt/bas/plugins/acme-erp: not found
	// true
	// plugin.acme-erp failed not found
}
