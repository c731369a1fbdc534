package plugins_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/plugins"
	"github.com/bas-platform/bas/plugins/plugintest"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestCrashMidCallRestarts(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	var mu sync.Mutex
	var restarted []string
	h := newHost(t, plugins.HostOptions{OnRestart: func(id string) {
		mu.Lock()
		defer mu.Unlock()
		restarted = append(restarted, id)
	}})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	before := pidOf(t, p)
	marker := filepath.Join(t.TempDir(), "crashed")

	_, err := call(t, p, "test.crash", map[string]string{"marker": marker})
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("call during the crash: %v, want errs.Unavailable", err)
	}
	contains(t, "error", err.Error(), "plugin plugin.test", "test.crash", "restarting")

	// The engine's retry: the same call works once the plugin is back.
	var got struct {
		Survived bool
		PID      int
	}
	if err := json.Unmarshal(mustCall(t, p, "test.crash", map[string]string{"marker": marker}), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Survived || got.PID == before {
		t.Errorf("retried call = %+v, want survived in a new process (old pid %d)", got, before)
	}
	if plugintest.Alive(before) {
		t.Errorf("the crashed process %d is still there", before)
	}
	if diff := cmp.Diff(capability.Health{Status: "connected"}, health(p)); diff != "" {
		t.Errorf("health after the restart (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"plugin.test"}, restarted); diff != "" {
		t.Errorf("OnRestart calls (-want +got):\n%s", diff)
	}
}

func TestHealthStates(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHost(t, plugins.HostOptions{
		Clock:             fc,
		RestartBackoffMin: time.Second,
		RestartBackoffMax: time.Minute,
		HealthInterval:    time.Hour,
	})
	dir := t.TempDir()
	path := plugintest.Link(t, bin, dir, "test")
	p := h.load(t, path)
	if diff := cmp.Diff(capability.Health{Status: "connected"}, health(p)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}

	// Crash: "starting" until the backoff has passed.
	if _, err := call(t, p, "test.crash", map[string]string{"marker": filepath.Join(dir, "marker")}); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("crash call: %v", err)
	}
	testwait.Until(t, "the supervisor reaps the crashed process", func() bool {
		return strings.Contains(health(p).Detail, "exit status 3")
	})
	hl := health(p)
	if hl.Status != "starting" {
		t.Errorf("after the crash: %+v, want starting", hl)
	}
	contains(t, "detail", hl.Detail, "plugin ", "(exit status 3); restarting")
	waitTimer(t, fc)
	// A call waits for the restart within its deadline; the clock stands
	// still, so this one gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p.Call(ctx, capability.Call{Tenant: "t1", Capability: "test.echo"})
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "plugin plugin.test is still starting") {
		t.Errorf("call while restarting: %v, want errs.Unavailable, still starting", err)
	}

	// The binary is replaced by something that is not a plugin: the
	// restart fails and Health says so.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "#!/bin/sh\necho garbage\n", 0o755)
	fc.Advance(time.Second)
	testwait.Until(t, "the restart fails", func() bool { return health(p).Status == "failed" })
	contains(t, "detail", health(p).Detail, "restart failed: handshake failed", "garbage", "retrying in 2s")
	if _, err := call(t, p, "test.echo", nil); !errors.Is(err, errs.Unavailable) {
		t.Errorf("call while failed: %v, want errs.Unavailable", err)
	}

	// The binary is back: the next attempt connects.
	waitTimer(t, fc)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	plugintest.Link(t, bin, dir, "test")
	fc.Advance(2 * time.Second)
	testwait.Until(t, "the restart succeeds", func() bool { return health(p).Status == "connected" })
	mustCall(t, p, "test.echo", map[string]bool{"back": true})
}

// waitTimer waits until the plugin's supervisor waits on the fake clock.
func waitTimer(t *testing.T, fc *clock.Fake) {
	t.Helper()
	testwait.Until(t, "the supervisor waits on the clock", func() bool { return fc.Timers() > 0 })
}

func TestProviderReportsItsOwnHealth(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{Env: []string{"BAS_TESTPLUGIN_HEALTH=not_configured:set ERP_TOKEN"}})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	if diff := cmp.Diff(capability.Health{Status: "not_configured", Detail: "set ERP_TOKEN"}, health(p)); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}
}

func TestHangingCallTimesOut(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{CallTimeout: 300 * time.Millisecond})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	// A call that must answer may miss a deadline of 300ms on a loaded
	// machine; the next meets it.
	pidOfSoon := func() int {
		t.Helper()
		var pid int
		testwait.Until(t, "the plugin tells its pid", func() bool {
			out, err := call(t, p, "test.pid", nil)
			var v struct{ PID int }
			if err != nil || json.Unmarshal(out, &v) != nil {
				return false
			}
			pid = v.PID
			return true
		})
		return pid
	}
	pid := pidOfSoon()

	_, err := call(t, p, "test.hang", nil)
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("hanging call: %v, want errs.Unavailable", err)
	}
	contains(t, "error", err.Error(), "plugin plugin.test: call test.hang timed out after 300ms")

	// The caller's earlier deadline wins, and says so.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Call(ctx, capability.Call{Tenant: "t1", Capability: "test.hang"})
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "timed out after") {
		t.Errorf("call with a short deadline: %v", err)
	}

	// A call the caller cancels is cancelled, not unavailable.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { cancel() }()
	_, err = p.Call(ctx, capability.Call{Tenant: "t1", Capability: "test.slow", Args: json.RawMessage(`{"millis":60000}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v, want context.Canceled", err)
	}

	// The host and the plugin are unharmed.
	testwait.Until(t, "a call answers after the timeout", func() bool {
		_, err := call(t, p, "test.echo", map[string]int{"after": 1})
		return err == nil
	})
	if got := pidOfSoon(); got != pid {
		t.Errorf("pid %d after the timeout, want the same process %d", got, pid)
	}
	testwait.Until(t, "health says connected", func() bool {
		return cmp.Equal(capability.Health{Status: "connected"}, health(p))
	})
}

func TestMalformedOutput(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))

	_, err := call(t, p, "test.malformed", nil)
	if err == nil {
		t.Fatal("no error for malformed output")
	}
	if k := errs.Kind(err); k != nil {
		t.Errorf("malformed output is marked %v; it is the plugin's fault, not a kind", k)
	}
	contains(t, "error", err.Error(), "plugin plugin.test returned malformed output for test.malformed", "unexpected end of JSON input")
	mustCall(t, p, "test.echo", nil)
}

func TestPluginOutputIsLogged(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	mustCall(t, p, "test.print", map[string]string{"text": "hello from the plugin"})
	testwait.Until(t, "the plugin's stdout reaches the host's log", func() bool {
		return h.log.has("line", "hello from the plugin")
	})
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	for _, test := range []struct {
		name    string
		inherit bool
		key     string
		want    string
		wantSet bool
	}{
		{"host secret stays in the host", false, secretEnv, "", false},
		{"host environment on request", true, secretEnv, "host-only", true},
		{"Env is passed", false, "ERP_URL", "https://erp.example", true},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			h := newHost(t, plugins.HostOptions{InheritEnv: test.inherit, Env: []string{"ERP_URL=https://erp.example"}})
			p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
			var got struct {
				Value string
				Set   bool
			}
			if err := json.Unmarshal(mustCall(t, p, "test.env", map[string]string{"key": test.key}), &got); err != nil {
				t.Fatal(err)
			}
			if got.Value != test.want || got.Set != test.wantSet {
				t.Errorf("%s = %q (set %v), want %q (set %v)", test.key, got.Value, got.Set, test.want, test.wantSet)
			}
		})
	}
}

func TestCloseKillsPlugins(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	dir := t.TempDir()
	h := newHost(t, plugins.HostOptions{})
	a := h.load(t, plugintest.Link(t, bin, dir, "a"))
	b := h.load(t, plugintest.Link(t, bin, dir, "b"))
	pids := []int{pidOf(t, a), pidOf(t, b)}
	// A call in flight does not hold Close up; it ends unavailable.
	inFlight := make(chan error, 1)
	go func() {
		_, err := a.Call(context.Background(), capability.Call{Tenant: "t1", Capability: "test.hang"})
		inFlight <- err
	}()

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, inFlight, "the call in flight at Close returned"); !errors.Is(err, errs.Unavailable) {
		t.Errorf("call in flight during Close: %v, want errs.Unavailable", err)
	}
	for _, pid := range pids {
		if plugintest.Alive(pid) {
			t.Errorf("plugin process %d is still running after Close", pid)
		}
	}
	if _, err := call(t, a, "test.echo", nil); !errors.Is(err, errs.Unavailable) {
		t.Errorf("call after Close: %v, want errs.Unavailable", err)
	}
	if got := health(b); got.Status != "failed" {
		t.Errorf("health after Close: %+v, want failed", got)
	}
	if _, err := h.Load(context.Background(), filepath.Join(dir, "a")); !errors.Is(err, errs.Unavailable) {
		t.Errorf("Load after Close: %v, want errs.Unavailable", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRestartWithoutACapability: a plugin that restarts into a version that
// no longer fills a capability gets no more calls of it, also in the window
// before the workspace's registry has read its new description (OnRestart
// runs after the new process is live). Before, the first call after the
// restart still reached the new process, which never offered it.
func TestRestartWithoutACapability(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	marker := filepath.Join(t.TempDir(), "drop-echo")
	restarted, release := make(chan struct{}), make(chan struct{})
	h := newHost(t, plugins.HostOptions{
		Env: []string{"BAS_TESTPLUGIN_DROP=test.echo:" + marker},
		OnRestart: func(string) { // the registry's Refresh would run here
			close(restarted)
			<-release
		},
	})
	defer close(release)
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	mustCall(t, p, "test.echo", map[string]int{"n": 1})

	// The next start leaves test.echo out; crash into it.
	writeFile(t, marker, "", 0o600)
	if _, err := call(t, p, "test.crash", map[string]string{"marker": filepath.Join(t.TempDir(), "crashed")}); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("crash: %v, want errs.Unavailable", err)
	}
	testwait.Recv(t, restarted, "the plugin restarted")

	_, err := call(t, p, "test.echo", map[string]int{"n": 2})
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("test.echo after the restart: %v, want errs.Unavailable", err)
	}
	contains(t, "error", err.Error(), "plugin plugin.test does not provide test.echo (its process provides test.pid, ")
	if slices.Contains(p.Info().Capabilities, "test.echo") {
		t.Errorf("Info still lists test.echo: %v", p.Info().Capabilities)
	}
	mustCall(t, p, "test.pid", nil) // what it still fills is served
}
