package wire

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/protocol1.golden")

// protocol1 returns one of every message of protocol 1, every field set, in
// the order the golden file lists them.
func protocol1() []struct {
	name string
	msg  any
} {
	app := &App{
		ID: "acme", Name: "ACME ERP", API: API{Prefix: "/v1/acme"},
		Events:       Events{Emits: []string{"acme.order.shipped"}, Consumes: []string{"task.completed"}},
		Capabilities: []string{"acme.order.get"},
	}
	rpcErr := &Error{
		Encoded:    []byte{0x0a, 0x02, 0x68, 0x69},
		Message:    "lookup: order PO-1 not found",
		Public:     "order PO-1 not found",
		Violations: []Violation{{Loc: []any{"args", "lines", 2, "sku"}, Msg: "is required", Type: "missing"}},
		RetryAfter: 1500000000,
	}
	return []struct {
		name string
		msg  any
	}{
		{"Provider.Init request", &InitRequest{BrokerID: 7}},
		{"Provider.Init response", &InitResponse{
			Info: Info{ID: "acme", Name: "ACME ERP", Kind: "plugin", Capabilities: []string{"acme.order.get"}, App: app, Coming: true},
			Capabilities: []Capability{{
				ID: "acme.order.get", Name: "Read an order", Description: "Returns an order by its number.",
				Args: json.RawMessage(`{"type":"object"}`), Result: json.RawMessage(`{"type":"object"}`),
			}},
			Error: rpcErr,
		}},
		{"Provider.Call request", &CallRequest{Call: Call{
			Tenant: "ten_1", Capability: "acme.order.get", Args: json.RawMessage(`{"number":"PO-1"}`), IdempotencyKey: "run_1/fetch/1",
		}}},
		{"Provider.Call response", &CallResponse{Result: []byte(`{"number":"PO-1"}`), Error: rpcErr}},
		{"Provider.Health request", &HealthRequest{}},
		{"Provider.Health response", &HealthResponse{Health: Health{Status: "failed", Detail: "ERP unreachable"}}},
		{"Host.Emit request", &EmitRequest{Event: Event{Tenant: "ten_1", Name: "acme.order.shipped", Data: json.RawMessage(`{"number":"PO-1"}`)}}},
		{"Host.Emit response", &EmitResponse{Error: rpcErr}},
		{"Provider.Call response, empty", &CallResponse{}},
		{"Provider.Init response, empty", &InitResponse{}},
	}
}

// TestProtocol1Golden pins protocol 1's messages as the codec puts them on
// the wire: a change to a message type shows up as a diff of
// testdata/protocol1.golden, which a plugin built against an older bas
// would not understand. Run with -update only for a new protocol version.
func TestProtocol1Golden(t *testing.T) {
	t.Parallel()
	var got bytes.Buffer
	for _, m := range protocol1() {
		b, err := jsonCodec{}.Marshal(m.msg)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		fmt.Fprintf(&got, "%s\n%s\n\n", m.name, b)
	}
	path := filepath.Join("testdata", "protocol1.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("protocol 1's messages changed (-want +got):\n%s", diff)
	}
}

// TestProtocol1Decodes reads every golden message back: decoding and
// encoding again gives the same bytes, so nothing is lost on the way in.
func TestProtocol1Decodes(t *testing.T) {
	t.Parallel()
	for _, m := range protocol1() {
		t.Run(m.name, func(t *testing.T) {
			want, err := jsonCodec{}.Marshal(m.msg)
			if err != nil {
				t.Fatal(err)
			}
			back := newOf(m.msg)
			if err := (jsonCodec{}).Unmarshal(want, back); err != nil {
				t.Fatal(err)
			}
			got, err := jsonCodec{}.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("re-encoded (-want +got):\n%s", diff)
			}
		})
	}
}

// newOf returns a new zero message of msg's type.
func newOf(msg any) any {
	switch msg.(type) {
	case *InitRequest:
		return new(InitRequest)
	case *InitResponse:
		return new(InitResponse)
	case *CallRequest:
		return new(CallRequest)
	case *CallResponse:
		return new(CallResponse)
	case *HealthRequest:
		return new(HealthRequest)
	case *HealthResponse:
		return new(HealthResponse)
	case *EmitRequest:
		return new(EmitRequest)
	case *EmitResponse:
		return new(EmitResponse)
	}
	panic(fmt.Sprintf("no message type %T", msg))
}

// TestConvertersRoundTrip checks that every field of the contract's types
// survives the trip to the wire and back.
func TestConvertersRoundTrip(t *testing.T) {
	t.Parallel()
	info := capability.Info{
		ID: "acme", Name: "ACME", Kind: capability.KindPlugin, Capabilities: []string{"acme.order.get"}, Coming: true,
		App: &capability.App{ID: "acme", Name: "ACME", API: capability.API{Prefix: "/v1/acme"},
			Events: capability.Events{Emits: []string{"a.b"}, Consumes: []string{"c.d"}}, Capabilities: []string{"acme.order.get"}},
	}
	if diff := cmp.Diff(info, FromInfo(info).ToCapability()); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
	noApp := capability.Info{ID: "x", Kind: capability.KindPlugin}
	if diff := cmp.Diff(noApp, FromInfo(noApp).ToCapability()); diff != "" {
		t.Errorf("Info without app (-want +got):\n%s", diff)
	}
	caps := []capability.Capability{{ID: "a.b", Name: "A", Description: "d", Args: json.RawMessage(`{}`), Result: json.RawMessage(`{"type":"object"}`)}}
	if diff := cmp.Diff(caps, ToCapabilities(FromCapabilities(caps))); diff != "" {
		t.Errorf("Capabilities (-want +got):\n%s", diff)
	}
	if ToCapabilities(FromCapabilities(nil)) != nil {
		t.Error("nil capabilities did not stay nil")
	}
	call := capability.Call{Tenant: "t", Capability: "a.b", Args: json.RawMessage(`{"x":1}`), IdempotencyKey: "k"}
	if diff := cmp.Diff(call, FromCall(call).ToCapability()); diff != "" {
		t.Errorf("Call (-want +got):\n%s", diff)
	}
	health := capability.Health{Status: "failed", Detail: "down"}
	if diff := cmp.Diff(health, FromHealth(health).ToCapability()); diff != "" {
		t.Errorf("Health (-want +got):\n%s", diff)
	}
	ev := capability.Event{Tenant: "t", Name: "a.b", Data: json.RawMessage(`{}`)}
	if diff := cmp.Diff(ev, FromEvent(ev).ToCapability()); diff != "" {
		t.Errorf("Event (-want +got):\n%s", diff)
	}
}
