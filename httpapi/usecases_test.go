package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/httpapi"
)

// newTestServerProviders is newTestServer (development login on) with
// extra capability providers registered beside the built-in ones.
func newTestServerProviders(t *testing.T, providers ...bas.Provider) *testServer {
	t.Helper()
	logs := &logBuffer{}
	clk := bas.NewFakeClock(testStart)
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true, Clock: clk, Providers: providers,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, httpapi.Options{DevLogin: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: logs}
}

// echoProvider fills capabilities with fixed results (by capability id).
type echoProvider struct {
	id      string
	results map[string]string
}

func (p echoProvider) Info() capability.Info {
	var caps []string
	for c := range p.results {
		caps = append(caps, c)
	}
	return capability.Info{ID: p.id, Name: p.id, Kind: capability.KindPlugin, Capabilities: caps}
}

func (p echoProvider) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	return json.RawMessage(p.results[c.Capability]), nil
}
