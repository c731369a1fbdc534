package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/plugins/internal/wire"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// vendor is a provider as a vendor writes it, with every optional ability.
type vendor struct {
	HostRef
	health   capability.Health
	panicked bool // panic in Info and Health
}

func (v *vendor) Info() capability.Info {
	if v.panicked {
		panic("no info")
	}
	return capability.Info{ID: "acme", Name: "ACME", Capabilities: []string{"acme.echo", "acme.fail", "acme.emit", "acme.deadline", "acme.raw", "acme.panic"},
		App: &capability.App{ID: "acme", Events: capability.Events{Emits: []string{"acme.done"}}}}
}

func (v *vendor) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "acme.echo", Name: "Echo", Args: json.RawMessage(`{"type":"object"}`), Result: json.RawMessage(`{"type":"object"}`)}}
}

func (v *vendor) Health(context.Context) capability.Health {
	if v.panicked {
		panic("no health")
	}
	return v.health
}

func (v *vendor) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	switch c.Capability {
	case "acme.echo":
		return c.Args, nil
	case "acme.raw":
		return json.RawMessage(`not json`), nil
	case "acme.fail":
		return nil, NotFoundf("order %s not found", c.IdempotencyKey)
	case "acme.emit":
		return nil, v.Emit(ctx, capability.Event{Tenant: c.Tenant, Name: "acme.done", Data: c.Args})
	case "acme.deadline":
		dl, ok := ctx.Deadline()
		return json.Marshal(map[string]any{"has": ok, "in_future": time.Until(dl) > 0})
	}
	panic("unknown capability " + c.Capability)
}

// fakeHost is the host's side of HostService in these tests.
type fakeHost struct {
	events chan capability.Event
	err    error
}

func (f *fakeHost) Emit(ctx context.Context, req *wire.EmitRequest) (*wire.EmitResponse, error) {
	if f.err != nil {
		return &wire.EmitResponse{Error: wire.EncodeError(ctx, f.err)}, nil
	}
	f.events <- req.Event.ToCapability()
	return &wire.EmitResponse{}, nil
}

// connect serves p in process through go-plugin's test connection and opens
// the session as the host does.
func connect(t *testing.T, p capability.Provider, host wire.HostServer) (*wire.Conn, *wire.InitResponse) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	client, server := plugin.TestPluginGRPCConn(t, false, wire.PluginSets(newServerFunc(p, logger))[wire.ProtocolVersion])
	t.Cleanup(func() {
		// Close asks the server to stop (go-plugin's Shutdown); stopping
		// it here as well would race with that.
		_ = client.Close()
		select {
		case <-server.DoneCh:
		case <-time.After(10 * time.Second):
			t.Error("the plugin server did not stop after the client closed")
		}
	})
	raw, err := client.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	conn := raw.(*wire.Conn)
	id := conn.Broker.NextId()
	go conn.Broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		wire.RegisterHostServer(s, host)
		return s
	})
	init, err := conn.Provider.Init(context.Background(), &wire.InitRequest{BrokerID: id})
	if err != nil {
		t.Fatal(err)
	}
	return conn, init
}

func callOf(t *testing.T, conn *wire.Conn, c capability.Call) *wire.CallResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := conn.Provider.Call(ctx, &wire.CallRequest{Call: wire.FromCall(c)})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestServe(t *testing.T) {
	t.Parallel()
	host := &fakeHost{events: make(chan capability.Event, 1)}
	v := &vendor{health: capability.Health{Status: "not_configured", Detail: "no token"}}
	conn, init := connect(t, v, host)

	if init.Error != nil || init.Info.ID != "acme" || len(init.Capabilities) != 1 || init.Capabilities[0].ID != "acme.echo" {
		t.Errorf("Init = %+v, want acme's info and its described capability", init)
	}
	if v.Host() == nil {
		t.Error("SetHost was not called")
	}

	t.Run("result passes unchanged", func(t *testing.T) {
		for _, test := range []struct{ capID, args, want string }{
			{"acme.echo", `{"a":[1,2]}`, `{"a":[1,2]}`},
			{"acme.raw", `{}`, `not json`}, // the host judges the output
		} {
			resp := callOf(t, conn, capability.Call{Tenant: "t1", Capability: test.capID, Args: json.RawMessage(test.args)})
			if resp.Error != nil || string(resp.Result) != test.want {
				t.Errorf("%s = %q, %+v; want %q", test.capID, resp.Result, resp.Error, test.want)
			}
		}
	})
	t.Run("errors keep their kind", func(t *testing.T) {
		resp := callOf(t, conn, capability.Call{Capability: "acme.fail", IdempotencyKey: "PO-7"})
		err := wire.DecodeError(context.Background(), resp.Error)
		if !errors.Is(err, errs.NotFound) || errs.PublicMessage(err) != "order PO-7 not found" {
			t.Errorf("err = %v (public %q), want NotFound, order PO-7 not found", err, errs.PublicMessage(err))
		}
	})
	t.Run("panics become errors", func(t *testing.T) {
		resp := callOf(t, conn, capability.Call{Capability: "acme.nope"})
		if resp.Error == nil || resp.Error.Message != "provider panicked in acme.nope: unknown capability acme.nope" {
			t.Errorf("error = %+v", resp.Error)
		}
	})
	t.Run("deadline reaches the provider", func(t *testing.T) {
		resp := callOf(t, conn, capability.Call{Capability: "acme.deadline"})
		if string(resp.Result) != `{"has":true,"in_future":true}` {
			t.Errorf("deadline seen by the provider: %s", resp.Result)
		}
	})
	t.Run("health", func(t *testing.T) {
		resp, err := conn.Provider.Health(context.Background(), &wire.HealthRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(v.health, resp.Health.ToCapability()); diff != "" {
			t.Errorf("health (-want +got):\n%s", diff)
		}
	})
	t.Run("events reach the host", func(t *testing.T) {
		resp := callOf(t, conn, capability.Call{Tenant: "t1", Capability: "acme.emit", Args: json.RawMessage(`{"n":1}`)})
		if resp.Error != nil {
			t.Fatal(resp.Error.Message)
		}
		want := capability.Event{Tenant: "t1", Name: "acme.done", Data: json.RawMessage(`{"n":1}`)}
		if diff := cmp.Diff(want, testwait.Recv(t, host.events, "the event reached the host")); diff != "" {
			t.Errorf("event (-want +got):\n%s", diff)
		}
	})
}

func TestEmitErrors(t *testing.T) {
	t.Parallel()
	host := &fakeHost{err: errs.Invalidf([]any{"event", "name"}, "value_error", "undeclared")}
	v := &vendor{}
	connect(t, v, host)
	ctx := context.Background()

	err := v.Emit(ctx, capability.Event{Tenant: "t1", Name: "acme.done"})
	if !errors.Is(err, Invalid) || len(errs.Violations(err)) != 1 {
		t.Errorf("host's rejection = %v, want Invalid with its violation", err)
	}
	err = v.Emit(ctx, capability.Event{Tenant: "t1", Name: "acme.done", Data: json.RawMessage(`{`)})
	if !errors.Is(err, Invalid) {
		t.Errorf("data that is not JSON: %v, want Invalid", err)
	}
	var unconnected HostRef
	if err := unconnected.Emit(ctx, capability.Event{Name: "acme.done"}); !errors.Is(err, Unavailable) {
		t.Errorf("Emit before the host connected: %v, want Unavailable", err)
	}
}

func TestPanicsInInfoAndHealth(t *testing.T) {
	t.Parallel()
	conn, init := connect(t, &vendor{panicked: true}, &fakeHost{})
	if init.Error == nil || init.Error.Message != "provider panicked in Info: no info" {
		t.Errorf("Init error = %+v", init.Error)
	}
	resp, err := conn.Provider.Health(context.Background(), &wire.HealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(capability.Health{Status: "failed", Detail: "provider panicked in Health: no health"}, resp.Health.ToCapability()); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}
}

func TestNewLoggerWritesHclogJSON(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelDebug).Warn("erp slow", "ms", 1200)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	ts, _ := line["@timestamp"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", ts); err != nil {
		t.Errorf("@timestamp %q is not in hclog's layout: %v", ts, err)
	}
	delete(line, "@timestamp")
	if diff := cmp.Diff(map[string]any{"@level": "warn", "@message": "erp slow", "ms": float64(1200)}, line); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
}
