package plugins_test

// Chaos tests: the chaos plugin (plugins/internal/chaosplugin) panics,
// exits in the middle of a call, hangs, answers late, floods its output
// and fails its handshake on purpose, and the host must survive each.

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/plugins"
	"github.com/bas-platform/bas/plugins/plugintest"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	gocmp "github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// chaosPlugin links the chaos plugin into a directory of its own and
// returns its path and the file it logs each start's pid to.
func chaosPlugin(t *testing.T) (path, startLog string) {
	t.Helper()
	dir := t.TempDir()
	return plugintest.Link(t, bins.Path(t, "chaos"), dir, "chaos"), filepath.Join(dir, "starts")
}

// starts returns the pids of the chaos plugin's processes, in start order.
func starts(t *testing.T, startLog string) []int {
	t.Helper()
	b, err := os.ReadFile(startLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("start log %q: %v", b, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// chaosCall calls chaos.call with args.
func chaosCall(p capability.Provider, args string) (map[string]any, error) {
	out, err := p.Call(context.Background(), capability.Call{Tenant: "t1", Capability: "chaos.call",
		Args: json.RawMessage(args), IdempotencyKey: "run/step/1"})
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// noneAlive fails the test if a process of pids still runs.
func noneAlive(t *testing.T, what string, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if plugintest.Alive(pid) {
			t.Errorf("%s: plugin process %d still runs", what, pid)
		}
	}
}

func TestChaosCalls(t *testing.T) {
	t.Parallel()
	// Calls that must answer get a deadline a loaded machine under the
	// race detector meets; only the cases about the deadline have 300ms.
	const timeout, deadline = 30 * time.Second, 300 * time.Millisecond
	for _, test := range []struct {
		name    string
		timeout time.Duration // of calls; 0: 30s
		args    string
		wantErr []string // "" parts: the call answers
		kind    error    // of the error
		restart bool     // the process is replaced
	}{
		{name: "answers", args: `{"do": "ok"}`},
		{name: "panics in the call", args: `{"do": "panic"}`,
			wantErr: []string{"plugin plugin.chaos", "provider panicked in chaos.call", "chaos plugin panics in a call"}},
		{name: "panics on its own goroutine", args: `{"do": "panic-goroutine"}`, kind: errs.Unavailable, restart: true,
			wantErr: []string{"plugin plugin.chaos exited or lost its connection during call chaos.call; it is restarting"}},
		{name: "exits mid-call", args: `{"do": "exit"}`, kind: errs.Unavailable, restart: true,
			wantErr: []string{"plugin plugin.chaos exited or lost its connection during call chaos.call; it is restarting"}},
		{name: "hangs past the deadline", timeout: deadline, args: `{"do": "hang"}`, kind: errs.Unavailable,
			wantErr: []string{"plugin plugin.chaos: call chaos.call timed out after 300ms"}},
		{name: "answers after the deadline", timeout: deadline, args: `{"do": "late", "millis": 1500}`, kind: errs.Unavailable,
			wantErr: []string{"plugin plugin.chaos: call chaos.call timed out after 300ms"}},
		{name: "answers late within the deadline", args: `{"do": "late", "millis": 400}`},
		{name: "floods stdout and stderr with lines", timeout: time.Minute, args: `{"do": "flood", "lines": 20000, "bytes": 200}`},
		{name: "floods one 4 MiB line", timeout: time.Minute, args: `{"do": "flood", "lines": 4096}`},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			path, startLog := chaosPlugin(t)
			timeout := cmp.Or(test.timeout, timeout)
			h := &testHost{Host: plugins.NewHost(plugins.HostOptions{CallTimeout: timeout, Logger: discardLogger(),
				RestartBackoffMin: 5 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond,
				Env: []string{"BAS_CHAOS_LOG=" + startLog}})}
			defer h.Close()
			p := h.load(t, path)
			first := starts(t, startLog)

			_, err := chaosCall(p, test.args)
			if test.wantErr == nil {
				if err != nil {
					t.Fatalf("call: %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("the call answered; want an error")
				}
				contains(t, "error", err.Error(), test.wantErr...)
				if k := errs.Kind(err); k != test.kind {
					t.Errorf("error kind %v, want %v (%v)", k, test.kind, err)
				}
			}

			// The host survives: the next call answers (after the restart,
			// which the call waits for within its deadline).
			var got map[string]any
			testwait.Until(t, "a call answers again", func() bool {
				got, err = chaosCall(p, `{"do": "ok"}`)
				return err == nil
			})
			pids := starts(t, startLog)
			if test.restart {
				if len(pids) != 2 || int(got["pid"].(float64)) != pids[1] {
					t.Errorf("starts %v, answered by pid %v; want a second process answering", pids, got["pid"])
				}
				noneAlive(t, "after the crash", first)
			} else if diff := gocmp.Diff(first, pids); diff != "" {
				t.Errorf("the plugin restarted (-want +got pids):\n%s", diff)
			}
			// A health query has the calls' deadline too: one of 300ms may
			// miss it on a loaded machine, the next meets it.
			testwait.Until(t, "health says connected", func() bool {
				return gocmp.Equal(capability.Health{Status: "connected"}, health(p))
			})

			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			noneAlive(t, "after Close", starts(t, startLog))
		})
	}
}

func TestChaosBadStarts(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		mode string
		want []string // parts of the load error; none: it loads
	}{
		{"bad-cookie", []string{"handshake failed (not a bas plugin?): the process ended with exit status 1",
			`its stderr ends "This binary is a plugin. These are not meant to be executed directly.`}},
		{"bad-version", []string{"handshake failed (not a bas plugin?)", "incompatible API version with plugin. Plugin version: 99, Client versions: [1]"}},
		{"garbage", []string{"handshake failed (not a bas plugin?)", "hello, I am not a plugin"}},
		{"exit", []string{"handshake failed (not a bas plugin?): the process ended with exit status 4"}},
		{"flood-stderr", nil},
	} {
		t.Run(test.mode, func(t *testing.T) {
			t.Parallel()
			path, startLog := chaosPlugin(t)
			h := plugins.NewHost(plugins.HostOptions{Logger: discardLogger(), StartTimeout: 2 * time.Second,
				Env: []string{"BAS_CHAOS_LOG=" + startLog, "BAS_CHAOS_START=" + test.mode}})
			defer h.Close()
			p, err := h.Load(context.Background(), path)
			if test.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if _, err := chaosCall(p, `{}`); err != nil {
					t.Errorf("call: %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("loaded; want a handshake failure")
				}
				contains(t, "Load error", err.Error(), test.want...)
				if got := h.Failed(); len(got) != 1 || health(got[0]).Status != "failed" {
					t.Errorf("Failed() = %v, want the chaos plugin, failed", got)
				}
				// A process that failed its handshake is not left behind.
				noneAlive(t, "after the failed load", starts(t, startLog))
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			noneAlive(t, "after Close", starts(t, startLog))
		})
	}
}

// TestChaosFloodIsBounded: a plugin that writes 20,000 lines to each of
// stdout and stderr at once gets the first 1,000 of each (and what the
// rate lets through) into the host's log, and a record that it is being
// dropped.
func TestChaosFloodIsBounded(t *testing.T) {
	t.Parallel()
	path, _ := chaosPlugin(t)
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) // the rate stands still
	h := newHost(t, plugins.HostOptions{Clock: fc, HealthInterval: time.Hour})
	p := h.load(t, path)
	if _, err := chaosCall(p, `{"do": "flood", "lines": 20000, "bytes": 100}`); err != nil {
		t.Fatal(err)
	}
	// count counts the records of msg about stdout or stderr.
	count := func(msg string) (n int) {
		h.log.mu.Lock()
		defer h.log.mu.Unlock()
		for _, r := range h.log.recs {
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "stream" && r.Message == msg {
					n++
				}
				return true
			})
		}
		return n
	}
	testwait.Until(t, "both streams are cut off", func() bool { return count("plugin output dropped") == 2 })
	if n := count("plugin output"); n != 2000 {
		t.Errorf("%d lines of output logged, want 2000 (1000 per stream)", n)
	}

	// The plugin's log lines (JSON on its own stderr, relayed by
	// go-plugin) have a budget of their own.
	if _, err := chaosCall(p, `{"do": "flood-log", "lines": 20000}`); err != nil {
		t.Fatal(err)
	}
	logged := func() (n int, dropped bool) {
		h.log.mu.Lock()
		defer h.log.mu.Unlock()
		for _, r := range h.log.recs {
			switch {
			case strings.Contains(r.Message, "chaos log line"):
				n++
			case r.Message == "plugin output dropped":
				dropped = true
			}
		}
		return n, dropped
	}
	testwait.Until(t, "the log lines arrive", func() bool { n, _ := logged(); return n > 0 })
	mustCall := func() {
		if _, err := chaosCall(p, `{}`); err != nil {
			t.Fatal(err)
		}
	}
	mustCall() // the flood is over on the plugin's side; go-plugin may still relay it
	testwait.Until(t, "the log lines stop", func() bool {
		a, _ := logged()
		mustCall()
		b, _ := logged()
		return a == b
	})
	if n, dropped := logged(); n > maxLogBurst || !dropped {
		t.Errorf("%d of 20000 log lines logged (dropped told: %v), want at most %d", n, dropped, maxLogBurst)
	}
}

// maxLogBurst is the host's burst of a plugin's log lines.
const maxLogBurst = 1000

// TestChaosRestartBackoff crashes the plugin and makes its next three
// starts fail their handshake: the host waits 1s, 2s, 4s then 8s between
// attempts (on its clock), says why in Health, and the fifth start serves.
func TestChaosRestartBackoff(t *testing.T) {
	t.Parallel()
	path, startLog := chaosPlugin(t)
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHost(t, plugins.HostOptions{Clock: fc, RestartBackoffMin: time.Second, RestartBackoffMax: time.Minute,
		HealthInterval: time.Hour,
		Env:            []string{"BAS_CHAOS_LOG=" + startLog, "BAS_CHAOS_START=bad-version", "BAS_CHAOS_START_AT=2-4"}})
	p := h.load(t, path)
	if _, err := chaosCall(p, `{"do": "exit"}`); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("exit call: %v, want errs.Unavailable", err)
	}
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		n := i + 1 // starts so far
		testwait.Until(t, "the supervisor waits to restart", func() bool {
			// The detail is set just before the supervisor sleeps; the
			// health check's timer is gone by then.
			d := health(p).Detail
			return fc.Timers() > 0 && len(starts(t, startLog)) == n &&
				(n == 1 && strings.Contains(d, "(exit status 3); restarting") || n > 1 && strings.Contains(d, "retrying in "+wait.String()))
		})
		fc.Advance(wait - time.Millisecond)
		if got := len(starts(t, startLog)); got != n {
			t.Fatalf("%d starts %s before the backoff of %s ended, want %d", got, wait-time.Millisecond, wait, n)
		}
		fc.Advance(time.Millisecond)
		testwait.Until(t, "the restart is tried", func() bool { return len(starts(t, startLog)) == n+1 })
		if n < 4 {
			testwait.Until(t, "the restart fails", func() bool {
				hl := health(p)
				return hl.Status == "failed" && strings.Contains(hl.Detail, "retrying in "+(2*wait).String())
			})
			contains(t, "detail", health(p).Detail, "restart failed: handshake failed", "Plugin version: 99")
			if _, err := chaosCall(p, `{}`); !errors.Is(err, errs.Unavailable) {
				t.Errorf("call while failed: %v, want errs.Unavailable", err)
			}
		}
	}
	testwait.Until(t, "the fifth start serves", func() bool { return health(p).Status == "connected" })
	out, err := chaosCall(p, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pids := starts(t, startLog)
	if int(out["pid"].(float64)) != pids[4] {
		t.Errorf("answered by pid %v, want the fifth start %d", out["pid"], pids[4])
	}
	noneAlive(t, "the failed starts", pids[:4])
}

// TestChaosLeavesNothingAfterClose puts the plugin through every kind of
// chaos, with calls still in flight, then closes the host: no plugin
// process and no goroutine outlives Close. It is not parallel, so the
// goroutines it counts are its own.
func TestChaosLeavesNothingAfterClose(t *testing.T) {
	path, startLog := chaosPlugin(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	h := plugins.NewHost(plugins.HostOptions{CallTimeout: 200 * time.Millisecond, Logger: discardLogger(),
		RestartBackoffMin: 5 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond, HealthInterval: 50 * time.Millisecond,
		Env: []string{"BAS_CHAOS_LOG=" + startLog}})
	p, err := h.Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"do": "panic"}`, `{"do": "hang"}`, `{"do": "late", "millis": 400}`,
		`{"do": "exit"}`, `{"do": "flood", "lines": 2000, "bytes": 100}`, `{"do": "panic-goroutine"}`} {
		_, _ = chaosCall(p, args)
		testwait.Until(t, "the plugin is back", func() bool { _, err := chaosCall(p, `{}`); return err == nil })
	}
	// Calls in flight when Close comes: hanging ones and late ones.
	inFlight := make(chan error, 4)
	for _, args := range []string{`{"do": "hang"}`, `{"do": "hang"}`, `{"do": "late", "millis": 150}`, `{"do": "late", "millis": 150}`} {
		go func() {
			_, err := p.Call(context.Background(), capability.Call{Tenant: "t1", Capability: "chaos.call", Args: json.RawMessage(args)})
			inFlight <- err
		}()
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		testwait.Recv(t, inFlight, "the calls in flight at Close returned")
	}
	pids := starts(t, startLog)
	// The exit and the goroutine's panic restart it; a health check that
	// misses its 50ms deadline on a loaded machine may restart it again.
	if len(pids) < 3 {
		t.Errorf("starts %v, want at least 3 (the first and two restarts)", pids)
	}
	noneAlive(t, "after Close", pids)
}
