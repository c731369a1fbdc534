package plugintest_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bas-platform/bas/plugins/plugintest"
)

// Build the example provider once, then link a copy into a plugin
// directory of its own.
func Example() {
	bin, _ := os.MkdirTemp("", "plugins-")
	defer os.RemoveAll(bin)
	if err := plugintest.Build(bin, map[string]string{"acme-erp": "github.com/bas-platform/bas/examples/provider"}); err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "plugin-dir-")
	defer os.RemoveAll(dir)
	path, err := plugintest.Link(filepath.Join(bin, "acme-erp"), dir, "acme-erp")
	fmt.Println(filepath.Base(path), err)
	// Output: acme-erp <nil>
}
