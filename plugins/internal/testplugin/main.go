// Command testplugin is a bas plugin for the host's tests: besides echoing
// it misbehaves on request (crash, hang, malformed output, panic), reports
// its pid and environment, and emits events (with the call's context, or
// with one of its own when "detached"). test.slow writes the file "marker"
// names as it begins.
//
// Environment: BAS_TESTPLUGIN_ID sets its provider id (by default the host
// names it after the binary's file name);
// BAS_TESTPLUGIN_HEALTH="status:detail" sets the health it reports;
// BAS_TESTPLUGIN_UNDESCRIBED names a capability it lists but does not
// describe (a workspace's registry refuses such a provider);
// BAS_TESTPLUGIN_DROP="capability:marker file" leaves that capability out
// of its Info and descriptions when the marker file exists as it starts (a
// restart into a version without it).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins/sdk"
	"github.com/cockroachdb/errors"
)

func main() {
	sdk.Serve(&provider{})
}

type provider struct {
	sdk.HostRef
}

var caps = []string{
	"test.echo", "test.pid", "test.env", "test.crash", "test.hang", "test.slow",
	"test.malformed", "test.fail", "test.panic", "test.emit", "test.print",
}

// listed returns the capabilities this process fills: caps, less the one
// BAS_TESTPLUGIN_DROP drops.
func listed() []string {
	c, marker, ok := strings.Cut(os.Getenv("BAS_TESTPLUGIN_DROP"), ":")
	if !ok {
		return caps
	}
	if _, err := os.Stat(marker); err != nil {
		return caps
	}
	var out []string
	for _, id := range caps {
		if id != c {
			out = append(out, id)
		}
	}
	return out
}

func (p *provider) Info() capability.Info {
	listed := listed()
	if c := os.Getenv("BAS_TESTPLUGIN_UNDESCRIBED"); c != "" {
		listed = append(append([]string(nil), listed...), c)
	}
	return capability.Info{
		ID:           os.Getenv("BAS_TESTPLUGIN_ID"), // "": the host names it after the binary
		Name:         "Test plugin",
		Capabilities: listed,
		App: &capability.App{
			ID:     "testapp",
			Name:   "Test app",
			Events: capability.Events{Emits: []string{"test.happened"}},
		},
	}
}

// Capabilities describes every capability the plugin lists, so a
// workspace's registry accepts it (a provider may list only capabilities
// that are in the catalog or that it describes).
func (p *provider) Capabilities() []capability.Capability {
	ids := listed()
	out := make([]capability.Capability, len(ids))
	for i, id := range ids {
		out[i] = capability.Capability{
			ID:          id,
			Name:        id,
			Description: "Test capability " + id + "; see the testplugin command's doc.",
			Args:        json.RawMessage(`{"type":"object"}`),
			Result:      json.RawMessage(`{"type":"object"}`),
		}
	}
	if len(out) > 0 && out[0].ID == "test.echo" {
		out[0].Name, out[0].Description = "Echo", "Returns its arguments."
	}
	return out
}

func (p *provider) Health(context.Context) capability.Health {
	if h := os.Getenv("BAS_TESTPLUGIN_HEALTH"); h != "" {
		st, detail, _ := strings.Cut(h, ":")
		return capability.Health{Status: st, Detail: detail}
	}
	return capability.Health{Status: "connected"}
}

type args struct {
	Marker string          `json:"marker"`
	Kind   string          `json:"kind"`
	Key    string          `json:"key"`
	Tenant string          `json:"tenant"`
	Name   string          `json:"name"`
	Data   json.RawMessage `json:"data"`
	Text   string          `json:"text"`
	Millis int             `json:"millis"`
	// Detached emits with a context of its own, not the call's.
	Detached bool `json:"detached"`
}

func (p *provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	var a args
	if len(call.Args) > 0 {
		if err := json.Unmarshal(call.Args, &a); err != nil {
			return nil, sdk.Invalidf([]any{"args"}, "json_invalid", "bad arguments: %v", err)
		}
	}
	switch call.Capability {
	case "test.echo":
		return call.Args, nil
	case "test.pid":
		return jsonOf(map[string]int{"pid": os.Getpid()})
	case "test.env":
		v, ok := os.LookupEnv(a.Key)
		return jsonOf(map[string]any{"value": v, "set": ok})
	case "test.crash":
		// Crash in the middle of the first call that names a new marker.
		if _, err := os.Stat(a.Marker); err != nil {
			if err := os.WriteFile(a.Marker, []byte("crashed\n"), 0o600); err != nil {
				return nil, err
			}
			os.Exit(3)
		}
		return jsonOf(map[string]any{"survived": true, "pid": os.Getpid()})
	case "test.hang":
		<-make(chan struct{}) // ignores ctx on purpose
		return nil, nil
	case "test.slow":
		if a.Marker != "" { // tells the test the call has begun
			if err := os.WriteFile(a.Marker, nil, 0o600); err != nil {
				return nil, err
			}
		}
		select {
		case <-time.After(time.Duration(a.Millis) * time.Millisecond):
			return jsonOf(map[string]bool{"done": true})
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "test.malformed":
		return json.RawMessage(`{"total_cents": 12, "lines": [`), nil
	case "test.fail":
		return nil, failure(a.Kind)
	case "test.panic":
		panic("test plugin panics on purpose")
	case "test.emit":
		ectx := ctx
		if a.Detached {
			ectx = context.Background()
		}
		err := p.Emit(ectx, capability.Event{Tenant: a.Tenant, Name: a.Name, Data: a.Data})
		if err != nil {
			return nil, errors.Wrap(err, "emit")
		}
		return jsonOf(map[string]bool{"emitted": true})
	case "test.print":
		fmt.Fprintln(os.Stdout, a.Text)
		return jsonOf(map[string]bool{"printed": true})
	}
	return nil, sdk.NotFoundf("no capability %s", call.Capability)
}

func failure(kind string) error {
	switch kind {
	case "not_found":
		return sdk.NotFoundf("purchase order PO-9 not found")
	case "invalid":
		return sdk.Validation(
			sdk.Violation{Loc: []any{"args", "lines", 0, "quantity"}, Msg: "must be at least 1", Type: "greater_than_equal"},
			sdk.Violation{Loc: []any{"args", "number"}, Msg: "is required", Type: "missing"},
		)
	case "rate_limited":
		return sdk.RateLimitedAfter(7 * time.Second)
	case "unavailable":
		return errors.Wrap(errors.Mark(errors.New("erp is down"), sdk.Unavailable), "lookup")
	}
	return errors.New("plain failure")
}

func jsonOf(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return b, err
}
