package plugintest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bas-platform/bas/plugins/plugintest"
)

var bins = &plugintest.Set{Packages: map[string]string{"acme-erp": "github.com/bas-platform/bas/examples/provider"}}

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// TestSet builds the example provider once and links a copy into a plugin
// directory of its own.
func TestSet(t *testing.T) {
	bin := bins.Path(t, "acme-erp")
	path := plugintest.Link(t, bin, t.TempDir(), "acme-erp")
	info, err := os.Stat(path)
	if err != nil || info.Mode()&0o111 == 0 || filepath.Base(path) != "acme-erp" {
		t.Fatalf("linked plugin %s: %v, mode %v", path, err, info.Mode())
	}
	if bins.Path(t, "acme-erp") != bin {
		t.Fatal("the set was built twice")
	}
}
