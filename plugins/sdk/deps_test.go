package sdk_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestVendorBuildIsSlim checks that a vendor's plugin compiles only the
// contract: neither the SDK nor package capability pulls in the store,
// Badger, the registry or the JSON Schema libraries.
func TestVendorBuildIsSlim(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	forbidden := []string{
		"github.com/bas-platform/bas/store",
		"github.com/bas-platform/bas/capability/registry",
		"github.com/bas-platform/bas/internal/schema",
		"github.com/dgraph-io/badger",
		"github.com/invopop/jsonschema",
		"github.com/santhosh-tekuri/jsonschema",
	}
	for _, pkg := range []string{".", "../../capability"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for dep := range strings.FieldsSeq(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
