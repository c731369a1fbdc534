package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins/plugintest"
	"github.com/bas-platform/bas/process"
	"github.com/cockroachdb/errors"
)

// TestPluginEventsLandOnlyInTenantsThatUseIt loads the fault plugin into a
// workspace and has it emit, from calls of one tenant, events into others:
// an event lands in the calling tenant, in a tenant that bound one of the
// plugin's capabilities to it, and in one whose processes call it (the
// plugin is the lone provider, so their default); a tenant that did
// neither refuses it (ErrForbidden to the plugin, a warning in the log).
// Before, a plugin serving any tenant could emit into every other one. An
// event that lands names the plugin as its emitter (it was "provider").
func TestPluginEventsLandOnlyInTenantsThatUseIt(t *testing.T) {
	t.Parallel()
	_, fault := pluginBinaries(t)
	s := newE2E(t, bas.Options{Plugins: []string{plugintest.Link(t, fault, t.TempDir(), "test")}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := s.ws.Capabilities()

	s.executeProcess(t, "emit", "test.emit", `{}`) // the demo tenant's processes call the plugin
	if err := reg.Bind(ctx, "ten_bound", "test.echo", "plugin.test", "usr_admin"); err != nil {
		t.Fatal(err)
	}
	const other = "ten_other" // never bound anything, runs no process
	// ten_listen binds nothing and calls nothing of the plugin, but a
	// process of it starts on the event the plugin's app declares.
	in, err := process.DecodeIn([]byte(`{"name": "On test.happened", "trigger": {"type": "event", "event": "test.happened"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Look"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ws.Processes().Create(ctx, "ten_listen", "usr_admin", in); err != nil {
		t.Fatal(err)
	}
	events := map[string]chan string{}
	for _, tenant := range []string{s.tenant, "ten_bound", other, "ten_listen"} {
		ch := make(chan string, 10)
		events[tenant] = ch
		seq := s.ws.Subscribe(ctx, bas.SubscribeParams{Tenant: tenant, Names: []string{"test.happened"}})
		go func() {
			for n, err := range seq {
				if err != nil {
					return
				}
				marker, _ := n.Event.Data["marker"].(string)
				ch <- marker + " from " + n.Event.EmittedBy
			}
		}()
	}
	emit := func(caller, into, marker string) error {
		_, err := reg.Call(ctx, capability.Call{Tenant: caller, Capability: "test.emit",
			Args: json.RawMessage(fmt.Sprintf(`{"tenant": %q, "name": "test.happened", "data": {"marker": %q}}`, into, marker))})
		return err
	}

	if err := emit("ten_bound", other, "refused"); !errors.Is(err, bas.ErrForbidden) {
		t.Errorf("emit into %s, which does not use the plugin: %v, want ErrForbidden", other, err)
	}
	mustContain(t, "logs", s.logs.String(), `msg="plugin event refused: the tenant does not use the plugin"`, "tenant="+other)
	for _, test := range []struct{ name, caller, into string }{
		{"the calling tenant", other, other},
		{"a tenant that bound a capability to it", other, "ten_bound"},
		{"a tenant whose processes call it", other, s.tenant},
		{"a tenant whose processes start on its declared event", other, "ten_listen"},
	} {
		if err := emit(test.caller, test.into, test.name); err != nil {
			t.Errorf("%s: emit into %s: %v", test.name, test.into, err)
			continue
		}
		select {
		case got := <-events[test.into]:
			// The refused event would have come first; the event names the
			// plugin that emitted it.
			if want := test.name + " from plugin.test"; got != want {
				t.Errorf("%s: tenant %s got the event %q first, want %q", test.name, test.into, got, want)
			}
		case <-ctx.Done():
			t.Fatalf("%s: no event reached tenant %s", test.name, test.into)
		}
	}
}
