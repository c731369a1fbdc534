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
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestExampleProvider(t *testing.T) {
	t.Parallel()
	acme, _ := binaries(t)
	h := newHost(t, plugins.HostOptions{Env: []string{"BAS_PO_CSV=" + sampleCSV(t)}})
	p := h.load(t, acme)

	wantInfo := capability.Info{
		ID:           "plugin.acme-erp",
		Name:         "ACME ERP",
		Kind:         capability.KindPlugin,
		Capabilities: []string{"erp.purchase_order.get"},
		App: &capability.App{
			ID:           "acme-erp",
			Name:         "ACME ERP",
			Events:       capability.Events{Emits: []string{"erp.purchase_order.looked_up"}},
			Capabilities: []string{"erp.purchase_order.get"},
		},
	}
	if diff := cmp.Diff(wantInfo, p.Info(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
	caps := p.Capabilities()
	if len(caps) != 1 || caps[0].ID != "erp.purchase_order.get" || !json.Valid(caps[0].Args) || !json.Valid(caps[0].Result) {
		t.Errorf("Capabilities = %+v, want erp.purchase_order.get with its schemas", caps)
	}
	if diff := cmp.Diff(capability.Health{Status: "connected"}, health(p)); diff != "" {
		t.Errorf("Health (-want +got):\n%s", diff)
	}

	type line struct {
		SKU         string `json:"sku"`
		Description string `json:"description"`
		Quantity    int64  `json:"quantity"`
		UnitCents   int64  `json:"unit_cents"`
	}
	type order struct {
		Number     string `json:"number"`
		Supplier   string `json:"supplier"`
		Currency   string `json:"currency"`
		TotalCents int64  `json:"total_cents"`
		Lines      []line `json:"lines"`
		Status     string `json:"status"`
	}
	for _, test := range []struct {
		name   string
		number string
		want   order
	}{
		{"three lines", "PO-1001", order{
			Number: "PO-1001", Supplier: "Northwind Traders", Currency: "EUR", Status: "open",
			TotalCents: 4*12900 + 2*45000 + 4*2450,
			Lines: []line{
				{"NW-CHAIR-01", "Ergonomic office chair", 4, 12900},
				{"NW-DESK-02", "Standing desk", 2, 45000},
				{"NW-LAMP-07", "Desk lamp", 4, 2450},
			},
		}},
		{"one line", "PO-1004", order{
			Number: "PO-1004", Supplier: "Tailspin Logistics", Currency: "GBP", Status: "cancelled",
			TotalCents: 35000, Lines: []line{{"TL-PALLET-01", "Pallet delivery", 1, 35000}},
		}},
	} {
		t.Run(test.name, func(t *testing.T) {
			out := mustCall(t, p, "erp.purchase_order.get", map[string]string{"number": test.number})
			var got order
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			ev := h.sink.next(t)
			var data map[string]any
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			gotEv := struct {
				Tenant, Name string
				Data         map[string]any
			}{ev.Tenant, ev.Name, data}
			wantEv := struct {
				Tenant, Name string
				Data         map[string]any
			}{"t1", "erp.purchase_order.looked_up", map[string]any{
				"number": test.want.Number, "supplier": test.want.Supplier,
				"currency": test.want.Currency, "total_cents": float64(test.want.TotalCents),
			}}
			if diff := cmp.Diff(wantEv, gotEv); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("unknown number", func(t *testing.T) {
		_, err := call(t, p, "erp.purchase_order.get", map[string]string{"number": "PO-9999"})
		if !errors.Is(err, errs.NotFound) {
			t.Fatalf("err = %v, want errs.NotFound", err)
		}
		if got, want := errs.PublicMessage(err), "purchase order PO-9999 not found"; got != want {
			t.Errorf("public message = %q, want %q", got, want)
		}
	})
	t.Run("missing number", func(t *testing.T) {
		_, err := call(t, p, "erp.purchase_order.get", map[string]string{})
		want := []errs.Violation{{Loc: []any{"args", "number"}, Msg: "a purchase order number is required", Type: "missing"}}
		if diff := cmp.Diff(want, errs.Violations(err)); !errors.Is(err, errs.Invalid) || diff != "" {
			t.Errorf("err = %v, violations (-want +got):\n%s", err, diff)
		}
	})
}

func TestExampleProviderCSVNextToBinary(t *testing.T) {
	t.Parallel()
	acme, _ := binaries(t)
	for _, test := range []struct {
		name       string
		csv        bool
		wantHealth string
		wantErr    error
	}{
		{"csv present", true, "connected", nil},
		{"csv missing", false, "failed", errs.Unavailable},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			plugintest.Link(t, acme, dir, "acme-erp")
			if test.csv {
				b, err := os.ReadFile(sampleCSV(t))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, "purchase_orders.csv"), string(b), 0o644)
			}
			h := newHost(t, plugins.HostOptions{})
			loaded, loadErrs := h.LoadDir(context.Background(), dir)
			if len(loaded) != 1 || len(loadErrs) != 0 {
				t.Fatalf("LoadDir = %d providers, errors %v; want 1 and none", len(loaded), loadErrs)
			}
			hl := health(loaded[0])
			if hl.Status != test.wantHealth {
				t.Errorf("Health = %+v, want status %s", hl, test.wantHealth)
			}
			if !test.csv {
				contains(t, "health detail", hl.Detail, "purchase_orders.csv")
			}
			_, err := call(t, loaded[0], "erp.purchase_order.get", map[string]string{"number": "PO-1002"})
			if test.wantErr == nil && err != nil || test.wantErr != nil && !errors.Is(err, test.wantErr) {
				t.Errorf("call err = %v, want %v", err, test.wantErr)
			}
		})
	}
}

func TestErrorsKeepTheirKinds(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))

	for _, test := range []struct {
		kind       string
		wantKind   error
		wantPublic string
		wantViol   []errs.Violation
		wantRetry  time.Duration
		wantMsg    string
	}{
		{kind: "not_found", wantKind: errs.NotFound, wantPublic: "purchase order PO-9 not found",
			wantMsg: "plugin plugin.test: purchase order PO-9 not found"},
		{kind: "invalid", wantKind: errs.Invalid, wantViol: []errs.Violation{
			{Loc: []any{"args", "lines", 0, "quantity"}, Msg: "must be at least 1", Type: "greater_than_equal"},
			{Loc: []any{"args", "number"}, Msg: "is required", Type: "missing"},
		}, wantMsg: "args.lines.0.quantity: must be at least 1"},
		{kind: "rate_limited", wantKind: errs.RateLimited, wantRetry: 7 * time.Second, wantMsg: "rate limited"},
		{kind: "unavailable", wantKind: errs.Unavailable, wantMsg: "lookup: erp is down"},
		{kind: "plain", wantMsg: "plugin plugin.test: plain failure"},
	} {
		t.Run(test.kind, func(t *testing.T) {
			_, err := call(t, p, "test.fail", map[string]string{"kind": test.kind})
			if err == nil {
				t.Fatal("no error")
			}
			if got := errs.Kind(err); got != test.wantKind {
				t.Errorf("kind of %v = %v, want %v", err, got, test.wantKind)
			}
			if got := errs.PublicMessage(err); got != test.wantPublic {
				t.Errorf("public message = %q, want %q", got, test.wantPublic)
			}
			if diff := cmp.Diff(test.wantViol, errs.Violations(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			var rl *errs.RateLimit
			if errors.As(err, &rl) != (test.wantRetry > 0) || rl != nil && rl.RetryAfter != test.wantRetry {
				t.Errorf("rate limit = %+v, want retry after %s", rl, test.wantRetry)
			}
			contains(t, "message", err.Error(), test.wantMsg)
		})
	}

	t.Run("panic", func(t *testing.T) {
		_, err := call(t, p, "test.panic", nil)
		contains(t, "message", errString(err), "provider panicked in test.panic", "panics on purpose")
		mustCall(t, p, "test.echo", map[string]int{"still": 1})
	})
	t.Run("arguments not JSON", func(t *testing.T) {
		_, err := p.Call(context.Background(), capability.Call{Tenant: "t1", Capability: "test.echo", Args: json.RawMessage(`{"a":`)})
		if !errors.Is(err, errs.Invalid) {
			t.Errorf("err = %v, want errs.Invalid", err)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestEvents(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))

	mustCall(t, p, "test.emit", map[string]any{"tenant": "t1", "name": "test.happened", "data": map[string]int{"n": 1}})
	ev := h.sink.next(t)
	if diff := cmp.Diff(capability.Event{Tenant: "t1", Name: "test.happened", Data: json.RawMessage(`{"n":1}`)}, ev); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}

	for _, test := range []struct {
		name     string
		args     map[string]any
		wantViol []errs.Violation
	}{
		{"undeclared event", map[string]any{"tenant": "t1", "name": "test.secret"}, []errs.Violation{{
			Loc: []any{"event", "name"}, Type: "value_error",
			Msg: "app testapp does not declare the event test.secret (it emits test.happened)",
		}}},
		{"no tenant", map[string]any{"name": "test.happened"}, []errs.Violation{{
			Loc: []any{"event", "tenant"}, Type: "missing", Msg: "an event needs the tenant it belongs to",
		}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := call(t, p, "test.emit", test.args)
			if !errors.Is(err, errs.Invalid) {
				t.Fatalf("err = %v, want errs.Invalid", err)
			}
			if diff := cmp.Diff(test.wantViol, errs.Violations(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	select {
	case ev := <-h.sink.ch:
		t.Errorf("a rejected event reached the sink: %+v", ev)
	default:
	}
}

// TestEventsOnlyIntoTenantsThatUseThePlugin: a plugin's event lands in the
// tenant of a call it is serving, or in a tenant HostOptions.Uses says uses
// it; any other tenant is refused with ErrForbidden and a warning in the
// host's log. Before, a plugin serving one tenant's call could emit into
// any other tenant (here t9 and t3), whose processes the event started.
func TestEventsOnlyIntoTenantsThatUseThePlugin(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	var mu sync.Mutex
	var asked []string // "tenant provider", as Uses was asked
	uses := func(_ context.Context, tenant, provider string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, tenant+" "+provider)
		if tenant == "t-store-down" {
			return false, errors.New("the store is down")
		}
		return tenant == "t2", nil
	}
	withUses := newHost(t, plugins.HostOptions{Uses: uses})
	alone := newHost(t, plugins.HostOptions{}) // no Uses: only the calls' tenants
	// listens: t5's processes start on the event the plugin's app declares.
	listening := newHost(t, plugins.HostOptions{Listens: func(_ context.Context, tenant, event string) (bool, error) {
		return tenant == "t5" && event == "test.happened", nil
	}})
	pWith := withUses.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	pAlone := alone.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	pListening := listening.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))
	for _, test := range []struct {
		name     string
		h        *testHost
		tenant   string // the event's; the call is t1's
		wantKind error  // nil: the event lands
	}{
		{"the call's own tenant", withUses, "t1", nil},
		{"a tenant that uses the plugin", withUses, "t2", nil},
		{"a tenant that does not", withUses, "t9", errs.Forbidden},
		{"the check fails", withUses, "t-store-down", errs.Unavailable},
		{"no Uses: the call's own tenant", alone, "t1", nil},
		{"no Uses: any other tenant", alone, "t3", errs.Forbidden},
		{"a tenant listening for the declared event", listening, "t5", nil},
		{"a tenant not listening", listening, "t6", errs.Forbidden},
	} {
		t.Run(test.name, func(t *testing.T) {
			p := map[*testHost]*plugins.Plugin{withUses: pWith, alone: pAlone, listening: pListening}[test.h]
			_, err := call(t, p, "test.emit", map[string]any{"tenant": test.tenant, "name": "test.happened", "data": map[string]string{"case": test.name}})
			if test.wantKind == nil {
				if err != nil {
					t.Fatalf("emit into %s: %v", test.tenant, err)
				}
				want := capability.Event{Tenant: test.tenant, Name: "test.happened", Data: json.RawMessage(`{"case":"` + test.name + `"}`)}
				if diff := cmp.Diff(want, test.h.sink.next(t)); diff != "" {
					t.Errorf("event (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, test.wantKind) {
				t.Fatalf("emit into %s: %v, want %v", test.tenant, err, test.wantKind)
			}
			if test.wantKind == errs.Forbidden {
				contains(t, "error", errs.PublicMessage(err), "tenant "+test.tenant+" does not use plugin plugin.test")
			}
			if !test.h.log.has("tenant", test.tenant) {
				t.Errorf("the host logged no refusal naming tenant %s", test.tenant)
			}
			select {
			case ev := <-test.h.sink.ch:
				t.Errorf("a refused event reached the sink: %+v", ev)
			default:
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	// Uses is asked only when the plugin serves no call of the tenant.
	if diff := cmp.Diff([]string{"t2 plugin.test", "t9 plugin.test", "t-store-down plugin.test"}, asked); diff != "" {
		t.Errorf("Uses asked (-want +got):\n%s", diff)
	}
}

// TestEventsFromACallLandInItsTenant: an event emitted with a call's
// context lands in that call's tenant only (or in a tenant that uses the
// plugin), also while the plugin serves another tenant's call at the same
// time: the call's token comes back with the event. An event emitted
// outside a call's context may land in any tenant whose call the plugin is
// serving. Before, a plugin serving t1 and t2 at once could emit from t1's
// call into t2.
func TestEventsFromACallLandInItsTenant(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	h := newHost(t, plugins.HostOptions{})
	p := h.load(t, plugintest.Link(t, bin, t.TempDir(), "test"))

	began := filepath.Join(t.TempDir(), "began")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(ctx, capability.Call{Tenant: "t2", Capability: "test.slow",
			Args: json.RawMessage(`{"millis": 60000, "marker": "` + began + `"}`)})
		done <- err
	}()
	testwait.Until(t, "t2's call has begun", func() bool {
		_, err := os.Stat(began)
		return err == nil
	})
	emit := func(detached bool) error {
		_, err := call(t, p, "test.emit", map[string]any{"tenant": "t2", "name": "test.happened", "detached": detached})
		return err
	}
	// From t1's call (call gives every call tenant t1), into t2:
	if err := emit(false); !errors.Is(err, errs.Forbidden) {
		t.Errorf("with t1's call's context, while t2's call is served: %v, want errs.Forbidden", err)
	}
	if err := emit(true); err != nil {
		t.Errorf("outside a call's context, while t2's call is served: %v", err)
	} else if ev := h.sink.next(t); ev.Tenant != "t2" {
		t.Errorf("event = %+v, want t2's", ev)
	}
	cancel()
	testwait.Recv(t, done, "t2's call ended")
	if err := emit(true); !errors.Is(err, errs.Forbidden) {
		t.Errorf("outside a call's context, once t2's call ended: %v, want errs.Forbidden", err)
	}
	select {
	case ev := <-h.sink.ch:
		t.Errorf("a refused event reached the sink: %+v", ev)
	default:
	}
}

func TestLoadDir(t *testing.T) {
	t.Parallel()
	acme, bin := binaries(t)
	dir := t.TempDir()
	plugintest.Link(t, acme, dir, "acme-erp")
	plugintest.Link(t, bin, dir, "testplugin")
	writeFile(t, filepath.Join(dir, "not-a-plugin"), "#!/bin/sh\necho hello\n", 0o755)
	writeFile(t, filepath.Join(dir, "README.txt"), "not executable\n", 0o644)
	writeFile(t, filepath.Join(dir, ".hidden"), "#!/bin/sh\necho hidden\n", 0o755)
	if err := os.Mkdir(filepath.Join(dir, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	plugintest.Link(t, bin, filepath.Join(dir, "nested"), "deeper")
	if err := os.Symlink(filepath.Join(dir, "testplugin"), filepath.Join(dir, "z-link")); err != nil {
		t.Fatal(err)
	}

	h := newHost(t, plugins.HostOptions{Env: []string{"BAS_PO_CSV=" + sampleCSV(t)}})
	loaded, loadErrs := h.LoadDir(context.Background(), dir)

	var ids []string
	for _, p := range loaded {
		ids = append(ids, p.Info().ID)
		if got := health(p).Status; got != "connected" {
			t.Errorf("%s: health %s, want connected", p.Info().ID, got)
		}
	}
	if diff := cmp.Diff([]string{"plugin.acme-erp", "plugin.testplugin", "plugin.z-link"}, ids); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if len(loadErrs) != 1 {
		t.Fatalf("errors = %v, want one (not-a-plugin)", loadErrs)
	}
	contains(t, "load error", loadErrs[0].Error(), "not-a-plugin", "handshake failed", "hello")

	failed := h.Failed()
	if len(failed) != 1 {
		t.Fatalf("Failed = %d providers, want 1", len(failed))
	}
	if diff := cmp.Diff(capability.Info{ID: "plugin.not-a-plugin", Name: "not-a-plugin", Kind: capability.KindPlugin}, failed[0].Info()); diff != "" {
		t.Errorf("failed info (-want +got):\n%s", diff)
	}
	hl := health(failed[0])
	if hl.Status != "failed" || !strings.HasPrefix(hl.Detail, "handshake failed") {
		t.Errorf("failed health = %+v, want failed: handshake failed ...", hl)
	}
	if _, err := call(t, failed[0], "test.echo", nil); !errors.Is(err, errs.Unavailable) {
		t.Errorf("call to a failed plugin: %v, want errs.Unavailable", err)
	}
	mustCall(t, loaded[0], "erp.purchase_order.get", map[string]string{"number": "PO-1003"})

	_, errsAgain := h.LoadDir(context.Background(), dir)
	if len(errsAgain) != 4 || !errors.Is(errsAgain[0], errs.Conflict) {
		t.Errorf("second LoadDir errors = %v, want three conflicts and the failed plugin again", errsAgain)
	}

	_, missing := h.LoadDir(context.Background(), filepath.Join(dir, "nope"))
	if len(missing) != 1 {
		t.Errorf("LoadDir of a missing dir: %v, want one error", missing)
	}
}

func TestLoadFailures(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	dir := t.TempDir()
	good := plugintest.Link(t, bin, dir, "good")
	plugintest.Link(t, bin, dir, "tampered")
	plugintest.Link(t, bin, dir, "badconfig")
	writeFile(t, filepath.Join(dir, "plain"), "data\n", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256Hex(t, bin)
	h := newHost(t, plugins.HostOptions{Checksums: map[string]string{
		good:        sum,                      // by path
		"tampered":  strings.Repeat("ab", 32), // by name
		"badconfig": "xyz",
	}})
	gp := h.load(t, good)
	if gp.Info().ID != "plugin.good" {
		t.Errorf("good plugin id = %s", gp.Info().ID)
	}

	for _, test := range []struct {
		name       string
		file       string
		wantKind   error
		wantDetail string
	}{
		{"missing binary", "missing", errs.NotFound, "not found"},
		{"bad checksum", "tampered", nil, "bad checksum: the binary's sha256 does not match the configured checksum"},
		{"bad checksum configuration", "badconfig", errs.Invalid, `bad checksum configuration: "xyz" (key "badconfig") is not a sha256 in hex`},
		{"not executable", "plain", errs.Invalid, "not executable (mode -rw-r--r--)"},
		{"directory", "adir", errs.Invalid, "is a directory, not an executable"},
		{"already loaded", "good", errs.Conflict, ""},
	} {
		t.Run(test.name, func(t *testing.T) {
			path := filepath.Join(dir, test.file)
			_, err := h.Load(context.Background(), path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if test.wantKind != nil && !errors.Is(err, test.wantKind) {
				t.Errorf("err = %v, want kind %v", err, test.wantKind)
			}
			contains(t, "error", err.Error(), path)
			if test.wantDetail == "" {
				return
			}
			contains(t, "error", err.Error(), test.wantDetail)
			i := slices.IndexFunc(h.Failed(), func(p capability.Provider) bool { return p.(*plugins.Plugin).Path() == path })
			if i < 0 {
				t.Fatalf("%s not listed by Failed", path)
			}
			if diff := cmp.Diff(capability.Health{Status: "failed", Detail: test.wantDetail}, health(h.Failed()[i])); diff != "" {
				t.Errorf("health (-want +got):\n%s", diff)
			}
		})
	}
	// The failures did not disturb the plugin that loaded.
	mustCall(t, gp, "test.echo", nil)

	// A plugin that failed to load can be loaded again once it is fixed.
	missing := plugintest.Link(t, bin, dir, "missing")
	mustCall(t, h.load(t, missing), "test.echo", nil)
	if slices.ContainsFunc(h.Failed(), func(p capability.Provider) bool { return p.(*plugins.Plugin).Path() == missing }) {
		t.Errorf("%s still listed by Failed after it loaded", missing)
	}
}

func TestDuplicateProviderID(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	dir := t.TempDir()
	h := newHost(t, plugins.HostOptions{Env: []string{"BAS_TESTPLUGIN_ID=plugin.same"}})
	first := h.load(t, plugintest.Link(t, bin, dir, "one"))
	_, err := h.Load(context.Background(), plugintest.Link(t, bin, dir, "two"))
	if !errors.Is(err, errs.Conflict) {
		t.Fatalf("err = %v, want errs.Conflict", err)
	}
	contains(t, "error", err.Error(), "provider id plugin.same is already used by the plugin at "+filepath.Join(dir, "one"))
	mustCall(t, first, "test.echo", nil)
}

// TestStopEndsOnePlugin stops one loaded plugin: its process exits, its
// calls and health say why, the host does not restart it, and the other
// plugin runs on.
func TestStopEndsOnePlugin(t *testing.T) {
	t.Parallel()
	_, bin := binaries(t)
	dir := t.TempDir()
	h := newHost(t, plugins.HostOptions{})
	stopped := h.load(t, plugintest.Link(t, bin, dir, "stopped"))
	other := h.load(t, plugintest.Link(t, bin, dir, "other"))
	pid := pidOf(t, stopped)
	stopped.Stop("not registered: provider id taken")
	stopped.Stop("a second reason is ignored")
	testwait.Until(t, "the stopped plugin's process exits", func() bool { return !plugintest.Alive(pid) })
	_, err := stopped.Call(context.Background(), capability.Call{Tenant: "ten_a", Capability: "test.echo", Args: json.RawMessage(`{}`)})
	if !errors.Is(err, errs.Unavailable) {
		t.Errorf("call after Stop: %v, want errs.Unavailable", err)
	}
	if hl := stopped.Health(context.Background()); hl.Status != plugins.StatusFailed || hl.Detail != "not registered: provider id taken" {
		t.Errorf("health after Stop = %+v", hl)
	}
	mustCall(t, other, "test.echo", nil)
}
