package plugins_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/plugins"
	"github.com/bas-platform/bas/plugins/plugintest"
)

// TestReadmePluginExample builds the README's "Write one" plugin as it is
// written, loads it and registers it as a workspace does, then calls it.
// Its capability is not in the standard catalog, so it must describe it;
// before, it did not, and a vendor who copied it had a plugin every
// workspace refused ("lists weather.today, which is neither in the
// catalog nor described by the provider").
func TestReadmePluginExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, src, ok := strings.Cut(string(readme), "```go\npackage main\n")
	if !ok {
		t.Fatal("the README has no Go block of a main package")
	}
	src, _, _ = strings.Cut(src, "```")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n"+src, 0o644)
	if err := plugintest.Build(dir, map[string]string{"weather": filepath.Join(dir, "main.go")}); err != nil {
		t.Fatal(err)
	}
	h := plugins.NewHost(plugins.HostOptions{Logger: discardLogger()})
	defer h.Close()
	p, err := h.Load(context.Background(), filepath.Join(dir, "weather"))
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.New(registry.Config{}).Register(p); err != nil {
		t.Fatalf("a workspace's registry refuses the README's plugin: %v", err)
	}
	out, err := p.Call(context.Background(), capability.Call{Tenant: "t1", Capability: "weather.today",
		Args: json.RawMessage(`{"city": "Lisbon"}`)})
	if err != nil || !json.Valid(out) {
		t.Fatalf("call: %s, %v", out, err)
	}
}
