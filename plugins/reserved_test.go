package plugins_test

import (
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/plugins"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestPluginEventsOutsideReservedNamespaces: a plugin emits only events of
// its own. A name in a namespace the workspace owns (process.*, approval.*,
// docs.* ...) is refused, as POST /v1/events refuses it. Before, a plugin
// that describes no app (so declares no events) could pass an event off as
// a run's end, a decision or a validated document: processes it triggers
// started, and subscribers waiting for it were told.
func TestPluginEventsOutsideReservedNamespaces(t *testing.T) {
	t.Parallel()
	path, _ := chaosPlugin(t)
	h := newHost(t, plugins.HostOptions{})
	p := h.load(t, path)
	for _, test := range []struct{ name, ns string }{
		{"process.run.completed", "process"}, {"approval.decided", "approval"}, {"docs.document.validated", "docs"},
	} {
		_, err := chaosCall(p, `{"do": "emit", "event": "`+test.name+`"}`)
		if !errors.Is(err, errs.Invalid) {
			t.Errorf("emit %s: %v, want errs.Invalid", test.name, err)
		}
		want := []errs.Violation{{Loc: []any{"event", "name"}, Type: "value_error",
			Msg: "events named " + test.ns + ".* are emitted only by the workspace itself; use your app's own namespace"}}
		if diff := cmp.Diff(want, errs.Violations(err)); diff != "" {
			t.Errorf("emit %s: violations (-want +got):\n%s", test.name, diff)
		}
	}
	if _, err := chaosCall(p, `{"do": "emit", "event": "chaos.happened"}`); err != nil {
		t.Fatalf("emit an event of its own: %v", err)
	}
	if ev := h.sink.next(t); ev.Name != "chaos.happened" || ev.Tenant != "t1" {
		t.Errorf("the sink got %+v first, want chaos.happened of t1 (and none of the refused ones)", ev)
	}
}
