package plugintest_test

import (
	"os"
	"testing"

	"github.com/bas-platform/bas/plugins/plugintest"
)

// A test package builds its plugins once and removes them after the run;
// each test links its own copy into a plugin directory.
func Example() {
	plugins := &plugintest.Set{Packages: map[string]string{
		"acme-erp": "github.com/bas-platform/bas/examples/provider",
	}}
	testMain := func(m *testing.M) {
		code := m.Run()
		plugins.Remove()
		os.Exit(code)
	}
	testLoad := func(t *testing.T) {
		dir := t.TempDir()
		plugintest.Link(t, plugins.Path(t, "acme-erp"), dir, "acme-erp")
		// ... bas.Open(ctx, bas.Options{PluginDir: dir}) ...
	}
	_, _ = testMain, testLoad
}
