package capability_test

import (
	"testing"

	"github.com/bas-platform/bas/capability"
)

// TestReservedNamespace: every event a built-in app emits is in a
// namespace the workspace owns, so that neither a plugin nor POST
// /v1/events can pass one off; a name outside those is anyone's.
func TestReservedNamespace(t *testing.T) {
	t.Parallel()
	for _, app := range capability.BuiltinApps() {
		for _, ev := range app.Events.Emits {
			if _, reserved := capability.ReservedNamespace(ev); !reserved {
				t.Errorf("app %s emits %s, in a namespace ReservedNamespace does not list", app.ID, ev)
			}
		}
	}
	for _, test := range []struct {
		name, ns string
		reserved bool
	}{
		{"process.run.completed", "process", true},
		{"approval.decided", "approval", true},
		{"docs", "docs", true},
		{"custom.order.shipped", "", false},
		{"processing.done", "", false},
		{"", "", false},
	} {
		ns, reserved := capability.ReservedNamespace(test.name)
		if ns != test.ns || reserved != test.reserved {
			t.Errorf("ReservedNamespace(%q) = %q, %v; want %q, %v", test.name, ns, reserved, test.ns, test.reserved)
		}
	}
}
