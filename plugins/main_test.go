package plugins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/plugins/plugintest"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins"
)

// bins are the plugin binaries the tests load, built once per test binary.
var bins = &plugintest.Set{Packages: map[string]string{
	"acme-erp":   "github.com/bas-platform/bas/examples/provider",
	"testplugin": "github.com/bas-platform/bas/plugins/internal/testplugin",
	"chaos":      "github.com/bas-platform/bas/plugins/internal/chaosplugin",
}}

const (
	helperEnv       = "BAS_PLUGINS_TEST_HELPER"
	helperPluginEnv = "BAS_PLUGINS_TEST_PLUGIN"
	secretEnv       = "BAS_PLUGINS_TEST_SECRET"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "host" {
		os.Exit(helperHost())
	}
	// A variable of the host's environment that plugins must not see.
	os.Setenv(secretEnv, "host-only")
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// binaries builds the example provider and the test plugin once and
// returns their paths.
func binaries(tb testing.TB) (acme, test string) {
	tb.Helper()
	return bins.Path(tb, "acme-erp"), bins.Path(tb, "testplugin")
}

// writeFile writes a file with mode.
func writeFile(tb testing.TB, path, content string, mode os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		tb.Fatal(err)
	}
}

func sha256Hex(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sampleCSV is the example provider's sample data.
func sampleCSV(tb testing.TB) string {
	tb.Helper()
	p, err := filepath.Abs("../examples/provider/purchase_orders.csv")
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// sink records the events plugins emit.
type sink struct{ ch chan capability.Event }

func newSink() *sink { return &sink{ch: make(chan capability.Event, 100)} }

func (s *sink) Emit(_ context.Context, ev capability.Event) error {
	s.ch <- ev
	return nil
}

func (s *sink) next(tb testing.TB) capability.Event {
	tb.Helper()
	select {
	case ev := <-s.ch:
		return ev
	case <-time.After(20 * time.Second):
		tb.Fatal("no event arrived")
		return capability.Event{}
	}
}

// recorder is a slog handler keeping every record.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// has tells whether a record has the attribute key=value.
func (r *recorder) has(key, value string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		found := false
		rec.Attrs(func(a slog.Attr) bool {
			found = a.Key == key && a.Value.String() == value
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// testHost is a host closed when the test ends.
type testHost struct {
	*plugins.Host
	sink *sink
	log  *recorder
}

func newHost(t *testing.T, opts plugins.HostOptions) *testHost {
	t.Helper()
	th := &testHost{sink: newSink(), log: &recorder{}}
	if opts.Sink == nil {
		opts.Sink = th.sink
	}
	opts.Logger = slog.New(th.log)
	if opts.RestartBackoffMin == 0 {
		opts.RestartBackoffMin = 5 * time.Millisecond
		opts.RestartBackoffMax = 50 * time.Millisecond
	}
	th.Host = plugins.NewHost(opts)
	t.Cleanup(func() { th.Close() })
	return th
}

func (th *testHost) load(t *testing.T, path string) *plugins.Plugin {
	t.Helper()
	p, err := th.Load(context.Background(), path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return p.(*plugins.Plugin)
}

// call calls a capability with args given as a Go value.
func call(t *testing.T, p capability.Provider, capID string, args any) (json.RawMessage, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return p.Call(context.Background(), capability.Call{Tenant: "t1", Capability: capID, Args: b, IdempotencyKey: "run/step/1"})
}

// mustCall calls and fails the test on an error.
func mustCall(t *testing.T, p capability.Provider, capID string, args any) json.RawMessage {
	t.Helper()
	out, err := call(t, p, capID, args)
	if err != nil {
		t.Fatalf("%s: %v", capID, err)
	}
	return out
}

// pidOf asks the test plugin for its pid.
func pidOf(t *testing.T, p capability.Provider) int {
	t.Helper()
	var out struct{ PID int }
	if err := json.Unmarshal(mustCall(t, p, "test.pid", nil), &out); err != nil || out.PID == 0 {
		t.Fatalf("test.pid: %v (pid %d)", err, out.PID)
	}
	return out.PID
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func health(p capability.Provider) capability.Health {
	return p.(capability.HealthChecker).Health(context.Background())
}

// helperHost runs in a child process: it loads the plugin named by
// helperPluginEnv, prints the plugin's pid and waits for stdin to close.
func helperHost() int {
	h := plugins.NewHost(plugins.HostOptions{Logger: discardLogger()})
	p, err := h.Load(context.Background(), os.Getenv(helperPluginEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := p.Call(context.Background(), capability.Call{Tenant: "t", Capability: "test.pid"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var v struct{ PID int }
	_ = json.Unmarshal(out, &v)
	fmt.Println(v.PID)
	_, _ = io.Copy(io.Discard, os.Stdin)
	h.Close()
	return 0
}

// contains fails the test unless s contains every part.
func contains(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(s, part) {
			t.Errorf("%s = %q, want it to contain %q", what, s, part)
		}
	}
}
