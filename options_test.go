package bas_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	// A plugin directory with one executable, erp (not a bas plugin: it
	// fails to load, which is logged, and Open goes on), and a file that
	// is not executable.
	dir := t.TempDir()
	erp, notes := filepath.Join(dir, "erp"), filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(erp, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-plugin")
	// A plugin whose name begins with a dot, which PluginDir skips.
	hidden := filepath.Join(dir, ".erp")
	if err := os.WriteFile(hidden, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		name string
		opts bas.Options
		want string // "" opens
	}{
		{"defaults", bas.Options{}, ""},
		{"workers 1024", bas.Options{Workers: 1024}, ""},
		{"workers 1025", bas.Options{Workers: 1025}, "bas: Options.Workers is 1025; use 1 to 1024, or 0 for 2 x GOMAXPROCS"},
		{"workers -1", bas.Options{Workers: -1}, "Options.Workers is -1"},
		{"max attempts 100", bas.Options{MaxAttempts: 100}, ""},
		{"max attempts 101", bas.Options{MaxAttempts: 101}, "Options.MaxAttempts is 101; use 1 to 100, or 0 for 5"},
		{"approval expiry 1m", bas.Options{ApprovalExpiry: time.Minute}, ""},
		{"approval expiry 59s", bas.Options{ApprovalExpiry: 59 * time.Second}, "Options.ApprovalExpiry is 59s; use at least 1m, or 0 for 7 days"},
		{"grace 1ns", bas.Options{Grace: 1}, ""},
		{"grace -1s", bas.Options{Grace: -time.Second}, "Options.Grace is -1s"},
		{"call timeout -1s", bas.Options{CallTimeout: -time.Second}, "Options.CallTimeout is -1s"},
		{"max upload -1", bas.Options{MaxUploadBytes: -1}, "Options.MaxUploadBytes is -1"},
		{"subscribe buffer 1048576", bas.Options{SubscribeBuffer: 1 << 20}, ""},
		{"subscribe buffer 1048577", bas.Options{SubscribeBuffer: 1<<20 + 1}, "Options.SubscribeBuffer is 1048577"},
		{"circuit failures 1", bas.Options{CircuitFailures: 1}, ""},
		{"run cap 1", bas.Options{MaxRunsPerTenant: 1, MaxRunsPerProcess: 1}, ""},
		{"caps 1000000", bas.Options{MaxRunsPerTenant: 1_000_000, MaxRunsPerProcess: 1_000_000, MaxStartingPerTenant: 1_000_000,
			MaxCallsPerTenant: 1_000_000, MaxCallsPerProcess: 1_000_000}, ""},
		{"run cap 1000001", bas.Options{MaxRunsPerTenant: 1_000_001}, "bas: Options.MaxRunsPerTenant is 1000001; use 1 to 1000000, or 0 for no cap"},
		{"process run cap -1", bas.Options{MaxRunsPerProcess: -1}, "bas: Options.MaxRunsPerProcess is -1; use 1 to 1000000, or 0 for no cap"},
		{"start cap 1000001", bas.Options{MaxStartingPerTenant: 1_000_001}, "bas: Options.MaxStartingPerTenant is 1000001"},
		{"fair start cap 1000000", bas.Options{FairStartingPerTenant: 1_000_000}, ""},
		{"fair start cap off", bas.Options{FairStartingPerTenant: -1}, ""},
		{"fair start cap 1000001", bas.Options{FairStartingPerTenant: 1_000_001}, "bas: Options.FairStartingPerTenant is 1000001; use 1 to 1000000, -1 for no cap"},
		{"fair start cap -2", bas.Options{FairStartingPerTenant: -2}, "bas: Options.FairStartingPerTenant is -2"},
		{"call cap -1", bas.Options{MaxCallsPerTenant: -1}, "bas: Options.MaxCallsPerTenant is -1"},
		{"process call cap 1000001", bas.Options{MaxCallsPerProcess: 1_000_001}, "bas: Options.MaxCallsPerProcess is 1000001"},
		{"circuit failures 1000", bas.Options{CircuitFailures: 1000}, ""},
		{"circuit failures 1001", bas.Options{CircuitFailures: 1001}, "bas: Options.CircuitFailures is 1001; use 1 to 1000, or 0 for 5"},
		{"circuit failures -1", bas.Options{CircuitFailures: -1}, "Options.CircuitFailures is -1; use 1 to 1000"},
		{"circuit cool-down 1s", bas.Options{CircuitCoolDown: time.Second}, ""},
		{"circuit cool-down 999ms", bas.Options{CircuitCoolDown: 999 * time.Millisecond}, "bas: Options.CircuitCoolDown is 999ms; use 1s to 24h, or 0 for 30s"},
		{"circuit cool-down 24h", bas.Options{CircuitCoolDown: 24 * time.Hour}, ""},
		{"circuit cool-down 24h0m0.001s", bas.Options{CircuitCoolDown: 24*time.Hour + time.Millisecond}, "Options.CircuitCoolDown is 24h0m0.001s; use 1s to 24h"},
		{"circuit cool-down -1s", bas.Options{CircuitCoolDown: -time.Second}, "Options.CircuitCoolDown is -1s"},
		{"plugin dir missing", bas.Options{PluginDir: "testdata/no-such-dir"},
			`bas: Options.PluginDir is "testdata/no-such-dir"; it cannot be read (no such file or directory); give a directory of plugin executables`},
		{"plugin dir a file", bas.Options{PluginDir: "options_test.go"}, `Options.PluginDir is "options_test.go"; it is not a directory`},
		{"plugin dir", bas.Options{PluginDir: "examples"}, ""},
		{"empty plugin path", bas.Options{Plugins: []string{"a", ""}}, `Options.Plugins[1] is ""`},
		// A plugin path that names no executable was only logged: a typo
		// loaded no plugin.
		{"plugin path missing", bas.Options{Plugins: []string{erp, missing}},
			`bas: Options.Plugins[1] is "` + missing + `"; it cannot be read (no such file or directory); give the path of a plugin executable`},
		{"plugin path a directory", bas.Options{Plugins: []string{dir}},
			`bas: Options.Plugins[0] is "` + dir + `"; it is a directory; give the path of a plugin executable (a directory of plugins is PluginDir)`},
		{"plugin path not executable", bas.Options{Plugins: []string{notes}},
			`bas: Options.Plugins[0] is "` + notes + `"; it is not executable (mode -rw-r--r--)`},
		{"plugin path twice", bas.Options{Plugins: []string{erp, dir + "/./erp"}},
			`bas: Options.Plugins[1] is "` + dir + `/./erp"; Plugins[0] names the same file; list each plugin once`},
		{"plugin path in the plugin dir", bas.Options{PluginDir: dir, Plugins: []string{erp}},
			`bas: Options.Plugins[0] is "` + erp + `"; it is in PluginDir, which loads it already`},
		{"plugin path", bas.Options{Plugins: []string{erp}}, ""},
		// PluginDir skips a file whose name begins with a dot, so listing
		// one loads it once; it was refused as loaded already.
		{"plugin path in the plugin dir, skipped by it", bas.Options{PluginDir: dir, Plugins: []string{hidden}}, ""},
		{"checksum of 63 hex digits", bas.Options{Plugins: []string{erp}, PluginChecksums: map[string]string{"erp": sum[:63]}},
			`Options.PluginChecksums["erp"] is "` + sum[:63] + `"; give the plugin's SHA-256 as 64 hex digits`},
		{"checksum of 64 hex digits", bas.Options{Plugins: []string{erp}, PluginChecksums: map[string]string{"erp": sum}}, ""},
		// A checksum keyed by a name no plugin has left the plugin it was
		// meant for running unchecked.
		{"checksum naming no plugin", bas.Options{Plugins: []string{erp}, PluginChecksums: map[string]string{"epr": sum}},
			`bas: Options.PluginChecksums["epr"] is "` + sum + `"; its key names no plugin in Plugins or PluginDir`},
		{"checksum by path", bas.Options{Plugins: []string{erp}, PluginChecksums: map[string]string{erp: sum}}, ""},
		{"checksum of a plugin dir's file", bas.Options{PluginDir: dir, PluginChecksums: map[string]string{"erp": sum}}, ""},
		{"checksum of a plugin dir's file it skips", bas.Options{PluginDir: dir, PluginChecksums: map[string]string{".erp": sum}},
			`bas: Options.PluginChecksums[".erp"] is "` + sum + `"; its key names no plugin in Plugins or PluginDir`},
		{"checksum of a listed plugin the plugin dir skips", bas.Options{PluginDir: dir, Plugins: []string{hidden}, PluginChecksums: map[string]string{".erp": sum}}, ""},
		{"plugin env without =", bas.Options{PluginEnv: []string{"ERP_URL=https://erp", "ERP_TOKEN"}},
			`bas: Options.PluginEnv[1] is "ERP_TOKEN"; write each variable as "KEY=value"`},
		{"plugin env without a key", bas.Options{PluginEnv: []string{"=x"}}, `bas: Options.PluginEnv[0] is "=x"`},
		{"plugin env", bas.Options{PluginEnv: []string{"ERP_URL=https://erp", "EMPTY="}}, ""},
		// A provider with the outbox's id replaces it: before, one that did
		// not fill email.send opened a workspace no process could email from.
		{"outbox's id without email.send", bas.Options{Providers: []bas.Provider{flaky{}, outbox{"flaky.call"}}},
			`bas: Options.Providers[1] is "builtin.email"; a provider of that id takes the outbox's place, so it must list email.send`},
		{"outbox's id with email.send", bas.Options{Providers: []bas.Provider{outbox{"email.send"}}}, ""},
		{"rate limit", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Key: "args.customer_id", Limit: 10, Per: time.Second}}}, ""},
		{"rate limit without a capability", bas.Options{RateLimits: []bas.RateLimit{{Limit: 1, Per: time.Second}}},
			`bas: Options.RateLimits[0].Capability is ""; give a capability id`},
		{"rate limit of 0", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Limit: 1, Per: time.Second}, {Capability: "crm.", Per: time.Second}}},
			"bas: Options.RateLimits[1].Limit is 0; use 1 to 1000000 calls per Per"},
		{"rate limit per 0", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Limit: 1}}},
			"bas: Options.RateLimits[0].Per is 0s; use a positive duration"},
		// A Capability no id matches limited nothing, silently.
		{"rate limit of a glob", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.*", Limit: 1, Per: time.Second}}},
			`bas: Options.RateLimits[0].Capability is "crm.*"; it matches no capability id a process can call`},
		{"rate limit of a name without a dot", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm", Limit: 1, Per: time.Second}}},
			`bas: Options.RateLimits[0].Capability is "crm"; it matches no capability id`},
		{"rate limit of an upper-case id", bas.Options{RateLimits: []bas.RateLimit{{Capability: "CRM.contact.create", Limit: 1, Per: time.Second}}},
			`bas: Options.RateLimits[0].Capability is "CRM.contact.create"; it matches no capability id`},
		{"rate limit of an id", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.contact.create", Limit: 1, Per: time.Second}}}, ""},
		{"rate limit of a deeper prefix", bas.Options{RateLimits: []bas.RateLimit{{Capability: "erp.purchase_order.", Limit: 1, Per: time.Second}}}, ""},
		{"rate limit key outside args", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Key: "customer_id", Limit: 1, Per: time.Second}}},
			`bas: Options.RateLimits[0].Key is "customer_id"; give a path of the call's arguments (args.customer_id)`},
		// The bounds: a Limit of the cap passes, one over it does not; a
		// Key of args. alone names no argument.
		{"rate limit at the cap", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Limit: 1_000_000, Per: time.Second}}}, ""},
		{"rate limit over the cap", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Limit: 1_000_001, Per: time.Second}}},
			"bas: Options.RateLimits[0].Limit is 1000001; use 1 to 1000000 calls per Per"},
		{"rate limit key of args alone", bas.Options{RateLimits: []bas.RateLimit{{Capability: "crm.", Key: "args.", Limit: 1, Per: time.Second}}},
			`bas: Options.RateLimits[0].Key is "args."; give a path of the call's arguments`},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			opts := test.opts
			opts.InMemory = true
			ws, err := bas.Open(context.Background(), opts)
			if test.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				ws.Close()
				return
			}
			if err == nil {
				ws.Close()
				t.Fatalf("opened; want %q", test.want)
			}
			if !strings.Contains(err.Error(), test.want) || !errors.Is(err, bas.ErrInvalid) {
				t.Errorf("error %q (invalid: %v), want it to say %q", err, errors.Is(err, bas.ErrInvalid), test.want)
			}
		})
	}
}

// flaky is a provider whose every call fails as the provider's fault.
type flaky struct{ calls *atomic.Int32 }

func (flaky) Info() capability.Info {
	return capability.Info{ID: "acme.flaky", Name: "Flaky", Kind: capability.KindBuiltin, Capabilities: []string{"flaky.call"}}
}

func (flaky) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "flaky.call", Name: "Flaky call", Description: "Always fails.",
		Args: json.RawMessage(`{"type": "object"}`), Result: json.RawMessage(`{"type": "object"}`)}}
}

func (f flaky) Call(context.Context, capability.Call) (json.RawMessage, error) {
	f.calls.Add(1)
	return nil, bas.ErrUnavailable
}

// outbox is a provider with the built-in outbox's id, filling capability.
type outbox struct{ capability string }

func (o outbox) Info() capability.Info {
	return capability.Info{ID: "builtin.email", Name: "Host mail", Kind: capability.KindBuiltin, Capabilities: []string{o.capability}}
}

func (outbox) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

// TestCircuitOptionsReachTheBreaker opens a workspace whose breaker opens
// after 2 failures for 90s (the defaults are 5 and 30s).
func TestCircuitOptionsReachTheBreaker(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := flaky{calls: &atomic.Int32{}}
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true, Clock: bas.NewFakeClock(start),
		Providers: []bas.Provider{p}, CircuitFailures: 2, CircuitCoolDown: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var last error
	for range 3 {
		_, last = bas.Call[map[string]any](context.Background(), ws, bas.CallParams{Tenant: "t1", Capability: "flaky.call"})
		if !errors.Is(last, bas.ErrUnavailable) {
			t.Fatalf("call: %v, want ErrUnavailable", last)
		}
	}
	if n := p.calls.Load(); n != 2 {
		t.Errorf("the provider was called %d times, want 2 (the third call meets the open circuit)", n)
	}
	want := "is open after 2 consecutive failures; it lets a trial call through at 2025-01-01T00:01:30Z"
	if !strings.Contains(last.Error(), want) {
		t.Errorf("third call: %v, want it to say %q", last, want)
	}
}

// TestOpenTwiceIsConflict opens a second workspace on a directory the first
// still holds: the error is an ErrConflict (the standard library's
// errors.Is sees it) and still says what to do.
func TestOpenTwiceIsConflict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := bas.Open(context.Background(), bas.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := bas.Open(context.Background(), bas.Options{Dir: dir})
	if err == nil {
		second.Close()
		t.Fatal("a second Open of one directory succeeded")
	}
	if !errors.Is(err, bas.ErrConflict) {
		t.Errorf("second Open: %v (kind %v), want ErrConflict", err, bas.Kind(err))
	}
	if want := "close the other first"; !strings.Contains(fmt.Sprintf("%+v", err), want) {
		t.Errorf("second Open: %+v, want it to say %q", err, want)
	}
}
