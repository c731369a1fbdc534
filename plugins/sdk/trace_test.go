package sdk

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// traced answers the span context its call's context carries.
type traced struct{}

func (traced) Info() capability.Info {
	return capability.Info{ID: "traced", Name: "Traced", Capabilities: []string{"traced.whoami"}}
}

func (traced) Call(ctx context.Context, _ capability.Call) (json.RawMessage, error) {
	sc := trace.SpanContextFromContext(ctx)
	return json.Marshal(map[string]any{"trace": sc.TraceID().String(), "span": sc.SpanID().String(), "remote": sc.IsRemote()})
}

func TestTheHostsSpanReachesTheVendor(t *testing.T) {
	t.Parallel()
	conn, _ := connect(t, traced{}, &fakeHost{events: make(chan capability.Event, 1)})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab, 1}, SpanID: trace.SpanID{0xcd, 2},
		TraceFlags: trace.FlagsSampled})
	for _, test := range []struct {
		name string
		ctx  context.Context
		want map[string]any
	}{
		{"with a span", trace.ContextWithSpanContext(context.Background(), sc),
			map[string]any{"trace": sc.TraceID().String(), "span": sc.SpanID().String(), "remote": true}},
		{"without", context.Background(),
			map[string]any{"trace": trace.TraceID{}.String(), "span": trace.SpanID{}.String(), "remote": false}},
	} {
		ctx, cancel := context.WithTimeout(test.ctx, 10*time.Second)
		resp, err := conn.Provider.Call(wire.InjectTrace(ctx), &wire.CallRequest{Call: wire.FromCall(capability.Call{Capability: "traced.whoami"})})
		cancel()
		if err != nil || resp.Error != nil {
			t.Fatalf("%s: %v %v", test.name, err, resp.Error)
		}
		var got map[string]any
		if err := json.Unmarshal(resp.Result, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range test.want {
			if got[k] != v {
				t.Errorf("%s: the vendor saw %v, want %v", test.name, got, test.want)
				break
			}
		}
	}
}
