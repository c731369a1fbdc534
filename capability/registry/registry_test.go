package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

type testBundle struct {
	reg   *registry.Registry
	store store.Store
	clock *clock.Fake
}

func openStore(t testing.TB) store.Store {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func setup(t testing.TB, providers ...capability.Provider) *testBundle {
	t.Helper()
	b := &testBundle{store: openStore(t), clock: clock.NewFake(t0)}
	b.reg = registry.New(registry.Config{Store: b.store, Clock: b.clock})
	for _, p := range providers {
		if err := b.reg.Register(p); err != nil {
			t.Fatalf("register %s: %v", p.Info().ID, err)
		}
	}
	return b
}

// provider is an in-process provider whose answer is a function.
type provider struct {
	info  capability.Info
	fn    func(ctx context.Context, call capability.Call) (json.RawMessage, error)
	calls atomic.Int64
	last  atomic.Pointer[capability.Call]
}

func newProvider(id string, kind capability.Kind, caps ...string) *provider {
	return &provider{info: capability.Info{ID: id, Name: "Provider " + id, Kind: kind, Capabilities: caps}}
}

// vouching is a provider that says its results match the catalog.
type vouching struct{ *provider }

func (vouching) ResultsMatchCatalog() {}

// answering sets a fixed result.
func (p *provider) answering(result string) *provider {
	p.fn = func(context.Context, capability.Call) (json.RawMessage, error) { return json.RawMessage(result), nil }
	return p
}

func (p *provider) Info() capability.Info { return p.info }

func (p *provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	p.calls.Add(1)
	p.last.Store(&call)
	if p.fn == nil {
		return json.RawMessage(`{"message_id":"msg_1","status":"queued"}`), nil
	}
	return p.fn(ctx, call)
}

// healthy is a provider with its own health.
type healthy struct {
	*provider
	health func(ctx context.Context) capability.Health
}

func (h *healthy) Health(ctx context.Context) capability.Health { return h.health(ctx) }

// describing is a provider that brings capabilities of its own.
type describing struct {
	*provider
	caps []capability.Capability
}

func (d *describing) Capabilities() []capability.Capability { return d.caps }

const emailOK = `{"to":"ann@example.com","subject":"Hello","body":"Hi Ann"}`

func call(tenant, capID, args string) capability.Call {
	return capability.Call{Tenant: tenant, Capability: capID, Args: json.RawMessage(args), IdempotencyKey: "run_1/step/1"}
}

func TestStandardCatalog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	catalog := b.reg.Catalog()
	if len(catalog) < 35 {
		t.Errorf("the catalog has %d capabilities, want at least 35", len(catalog))
	}
	for i, c := range catalog {
		if i > 0 && catalog[i-1].ID >= c.ID {
			t.Errorf("catalog not sorted: %s before %s", catalog[i-1].ID, c.ID)
		}
		if c.Name == "" || c.Description == "" {
			t.Errorf("%s: name and description are required", c.ID)
		}
		for what, raw := range map[string]json.RawMessage{"args": c.Args, "result": c.Result} {
			var s map[string]any
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Errorf("%s: %s schema is not JSON: %v", c.ID, what, err)
				continue
			}
			if s["type"] != "object" && s["$ref"] == nil {
				t.Errorf("%s: %s schema is not an object schema: %s", c.ID, what, raw)
			}
		}
		got, ok := b.reg.Capability(c.ID)
		if !ok || got.ID != c.ID {
			t.Errorf("Capability(%q) = %v, %v", c.ID, got.ID, ok)
		}
	}
	for _, id := range []string{"task.create", "email.send", "document.extract", "document.validate", "document.approve",
		"crm.company.create", "crm.contact.create", "crm.deal.create", "crm.deal.update", "crm.activity.log",
		"invoice.create", "invoice.finalize", "invoice.send", "invoice.void", "payment.request",
		"board.item.create", "board.item.move", "board.item.update", "decision.evaluate", "approval.request",
		"erp.purchase_order.get", "erp.supplier.get", "ledger.post", "chat.message.send", "crm.contact.lookup",
		"storage.file.put", "calendar.event.create", "sms.send", "esign.request"} {
		if _, ok := b.reg.Capability(id); !ok {
			t.Errorf("the catalog lacks %s", id)
		}
	}
	if _, ok := b.reg.Capability("nope.nothing"); ok {
		t.Error("Capability(nope.nothing) found something")
	}
}

func TestArgumentValidation(t *testing.T) {
	t.Parallel()
	type v struct {
		Loc  []any
		Type string
	}
	for _, test := range []struct {
		name string
		cap  string
		args string
		want []v // nil: valid
	}{
		{"email one address", "email.send", emailOK, nil},
		{"email a list", "email.send", `{"to":["a@example.com","b@example.com"],"subject":"s","body":"b","cc":"c@example.com"}`, nil},
		{"email missing everything", "email.send", `{}`, []v{
			{[]any{"args", "body"}, "missing"}, {[]any{"args", "subject"}, "missing"}, {[]any{"args", "to"}, "missing"}}},
		{"email no args at all", "email.send", ``, []v{
			{[]any{"args", "body"}, "missing"}, {[]any{"args", "subject"}, "missing"}, {[]any{"args", "to"}, "missing"}}},
		{"email bad address", "email.send", `{"to":"not-an-address","subject":"s","body":"b"}`, []v{{[]any{"args", "to"}, "value_error"}}},
		{"email unknown field", "email.send", `{"to":"a@example.com","subject":"s","body":"b","bcc":"x@example.com"}`, []v{
			{[]any{"args", "bcc"}, "extra_forbidden"}}},
		{"email empty subject", "email.send", `{"to":"a@example.com","subject":"","body":"b"}`, []v{
			{[]any{"args", "subject"}, "string_too_short"}}},
		{"task ok", "task.create", `{"title":"Check invoice","actions":["approve","reject"],"fields":[{"key":"note","label":"Note"}],"due_hours":24}`, nil},
		{"task bad field key", "task.create", `{"title":"t","fields":[{"key":"Bad Key","label":"Note"}]}`, []v{
			{[]any{"args", "fields", 0, "key"}, "string_pattern_mismatch"}}},
		{"task due hours zero", "task.create", `{"title":"t","due_hours":0}`, []v{{[]any{"args", "due_hours"}, "greater_than_equal"}}},
		{"po ok", "erp.purchase_order.get", `{"number":"PO-1001"}`, nil},
		{"po wrong type", "erp.purchase_order.get", `{"number":1001}`, []v{{[]any{"args", "number"}, "type_error"}}},
		{"ledger one line", "ledger.post", `{"date":"2025-03-01","currency":"EUR","lines":[{"account":"4000","debit_cents":100}]}`, []v{
			{[]any{"args", "lines"}, "too_short"}}},
		{"ledger bad currency and date", "ledger.post", `{"date":"March 1","currency":"eur","lines":[{"account":"1"},{"account":"2"}]}`, []v{
			{[]any{"args", "currency"}, "string_pattern_mismatch"}, {[]any{"args", "date"}, "value_error"}}},
		{"sms bad number", "sms.send", `{"to":"0612345678","text":"hi"}`, []v{{[]any{"args", "to"}, "string_pattern_mismatch"}}},
		{"invoice line quantity", "invoice.create", `{"customer_id":"cus_1","lines":[{"description":"x","quantity":0,"unit_amount_cents":100}]}`, []v{
			{[]any{"args", "lines", 0, "quantity"}, "greater_than_equal"}}},
		{"lookup needs one of", "crm.contact.lookup", `{}`, []v{{[]any{"args", "email"}, "missing"}}},
		{"lookup by company", "crm.contact.lookup", `{"company":"Acme"}`, nil},
		{"file from a document", "storage.file.put", `{"path":"/in/inv.pdf","document_id":"doc_1"}`, nil},
		{"file from two sources", "storage.file.put", `{"path":"/in/inv.pdf","document_id":"doc_1","content_base64":"aGk="}`, []v{{[]any{"args"}, "value_error"}}},
		{"decision ok", "decision.evaluate", `{"name":"credit_limit","input":{"amount_cents":100}}`, nil},
		{"args not an object", "chat.message.send", `["general","hi"]`, []v{{[]any{"args"}, "type_error"}}},
		{"args not JSON", "chat.message.send", `{"channel":`, []v{{[]any{"args"}, "json_invalid"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider("builtin.any", capability.KindBuiltin, test.cap).answering(`{}`)
			b := setup(t, p)
			// The same arguments again get the same answer (valid ones
			// are remembered, invalid ones checked each time).
			_, err := b.reg.Call(context.Background(), call("ten_a", test.cap, test.args))
			if errs.Violations(err) == nil || test.want != nil {
				_, err = b.reg.Call(context.Background(), call("ten_a", test.cap, test.args))
			}
			if test.want == nil {
				if errs.Violations(err) != nil {
					t.Fatalf("Call: unexpected violations %v", err)
				}
				if p.calls.Load() != 2 {
					t.Fatalf("the provider was called %d times, want 2", p.calls.Load())
				}
				return
			}
			if !errors.Is(err, errs.Invalid) {
				t.Fatalf("Call error = %v, want errs.Invalid", err)
			}
			var got []v
			for _, x := range errs.Violations(err) {
				if x.Msg == "" {
					t.Errorf("violation at %v has no message", x.Loc)
				}
				got = append(got, v{x.Loc, x.Type})
			}
			sortV := cmpopts.SortSlices(func(a, b v) bool { return fmt.Sprint(a.Loc) < fmt.Sprint(b.Loc) })
			if diff := cmp.Diff(test.want, got, sortV); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if n := p.calls.Load(); n != 0 {
				t.Errorf("the provider saw invalid arguments (%d calls)", n)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		p    capability.Provider
		want string // part of the error; "" for success
	}{
		{"ok", newProvider("builtin.email", capability.KindBuiltin, "email.send"), ""},
		{"empty id", newProvider("", capability.KindBuiltin, "email.send"), "non-empty"},
		{"spaces", newProvider(" x ", capability.KindBuiltin), "non-empty"},
		{"long id", newProvider(strings.Repeat("x", 81), capability.KindPlugin), "longer than 80"},
		{"bad kind", newProvider("x", "magic", "email.send"), "kind"},
		{"unknown capability", newProvider("x", capability.KindPlugin, "acme.thing"), "neither in the catalog"},
		{"described capability", &describing{provider: newProvider("plugin.acme", capability.KindPlugin, "acme.thing"),
			caps: []capability.Capability{{ID: "acme.thing", Name: "Thing", Args: json.RawMessage(`{"type":"object"}`),
				Result: json.RawMessage(`{"type":"object"}`)}}}, ""},
		{"described without schema", &describing{provider: newProvider("plugin.acme", capability.KindPlugin, "acme.thing"),
			caps: []capability.Capability{{ID: "acme.thing", Name: "Thing"}}}, "without its argument schema"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			err := b.reg.Register(test.p)
			switch {
			case test.want == "" && err != nil:
				t.Fatalf("Register: %v", err)
			case test.want != "" && (err == nil || !strings.Contains(err.Error(), test.want)):
				t.Fatalf("Register error = %v, want one saying %q", err, test.want)
			case test.want != "":
				if len(b.reg.Providers()) != 0 {
					t.Errorf("a refused provider was registered")
				}
			}
		})
	}

	t.Run("duplicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, newProvider("builtin.email", capability.KindBuiltin, "email.send"))
		err := b.reg.Register(newProvider("builtin.email", capability.KindBuiltin, "email.send"))
		if err == nil || !strings.Contains(err.Error(), "already registered") {
			t.Fatalf("second Register = %v, want already registered", err)
		}
	})

	t.Run("describer lifecycle", func(t *testing.T) {
		t.Parallel()
		d := &describing{provider: newProvider("plugin.acme", capability.KindPlugin, "acme.widget.get").answering(`{"id":"w1"}`),
			caps: []capability.Capability{{ID: "acme.widget.get", Name: "Read a widget", Description: "Reads a widget.",
				Args:   json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`),
				Result: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}}}
		b := setup(t, d)
		if _, ok := b.reg.Capability("acme.widget.get"); !ok {
			t.Fatal("the described capability is not in the catalog")
		}
		if _, err := b.reg.Call(context.Background(), call("ten_a", "acme.widget.get", `{}`)); !errors.Is(err, errs.Invalid) {
			t.Errorf("Call without id = %v, want Invalid from the described schema", err)
		}
		if out, err := b.reg.Call(context.Background(), call("ten_a", "acme.widget.get", `{"id":"w1"}`)); err != nil || string(out) != `{"id":"w1"}` {
			t.Errorf("Call = %s, %v", out, err)
		}
		if !b.reg.Unregister("plugin.acme") {
			t.Fatal("Unregister reported nothing removed")
		}
		if _, ok := b.reg.Capability("acme.widget.get"); ok {
			t.Error("the described capability outlived its provider")
		}
		if b.reg.Unregister("plugin.acme") {
			t.Error("second Unregister reported a removal")
		}
	})

	t.Run("refresh", func(t *testing.T) {
		t.Parallel()
		p := newProvider("plugin.erp", capability.KindPlugin)
		b := setup(t, p)
		if got := b.reg.ProvidersFor("erp.purchase_order.get"); len(got) != 0 {
			t.Fatalf("ProvidersFor before refresh = %v", got)
		}
		p.info.Capabilities = []string{"erp.purchase_order.get"}
		if err := b.reg.Refresh("plugin.erp"); err != nil {
			t.Fatalf("Refresh: %v", err)
		}
		if got := b.reg.ProvidersFor("erp.purchase_order.get"); len(got) != 1 || got[0].ID != "plugin.erp" {
			t.Fatalf("ProvidersFor after refresh = %v", got)
		}
		if err := b.reg.Refresh("plugin.none"); !errors.Is(err, errs.NotFound) {
			t.Errorf("Refresh of an unknown provider = %v, want NotFound", err)
		}
	})
}

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	email := newProvider("builtin.email", capability.KindBuiltin, "email.send")
	relay := newProvider("plugin.relay", capability.KindPlugin, "email.send", "chat.message.send")
	erp := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get")
	declared := registry.DeclaredConnectors()
	b := setup(t, append([]capability.Provider{email, relay, erp}, declared...)...)

	for _, test := range []struct {
		name, tenant, cap string
		bind              string // provider to bind first
		want              string // provider id, or "error: <part of message>"
	}{
		{"the only provider is the default", "ten_a", "erp.purchase_order.get", "", "plugin.erp"},
		{"one available among coming connectors", "ten_a", "chat.message.send", "", "plugin.relay"},
		{"several and no binding", "ten_a", "email.send", "", "error: several providers fill email.send (builtin.email, plugin.relay)"},
		{"binding wins", "ten_b", "email.send", "plugin.relay", "plugin.relay"},
		{"another tenant's binding does not count", "ten_c", "email.send", "", "error: bind one"},
		{"only coming connectors", "ten_a", "ledger.post", "", "error: no provider is bound to ledger.post (coming:"},
		{"nothing at all", "ten_a", "document.extract", "", "error: no provider is bound to document.extract"},
		{"unknown capability", "ten_a", "nope.nothing", "", "error: unknown capability"},
	} {
		if test.bind != "" {
			if err := b.reg.Bind(ctx, test.tenant, test.cap, test.bind, "usr_1"); err != nil {
				t.Fatalf("%s: Bind: %v", test.name, err)
			}
		}
		p, err := b.reg.Resolve(ctx, test.tenant, test.cap)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
			if test.cap == "nope.nothing" {
				if !errors.Is(err, errs.Invalid) {
					t.Errorf("%s: %v is not errs.Invalid", test.name, err)
				}
			} else if !errors.Is(err, errs.Unavailable) {
				t.Errorf("%s: %v is not errs.Unavailable", test.name, err)
			}
		} else {
			got = p.Info().ID
		}
		if !strings.HasPrefix(test.want, "error: ") && got != test.want ||
			strings.HasPrefix(test.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(test.want, "error: ")) {
			t.Errorf("%s: Resolve = %q, want %q", test.name, got, test.want)
		}
	}

	// A binding that names a provider which went away fails clearly, and
	// comes back with it.
	if err := b.reg.Bind(ctx, "ten_d", "erp.purchase_order.get", "plugin.erp", "usr_1"); err != nil {
		t.Fatal(err)
	}
	b.reg.Unregister("plugin.erp")
	if _, err := b.reg.Resolve(ctx, "ten_d", "erp.purchase_order.get"); !errors.Is(err, errs.Unavailable) ||
		!strings.Contains(err.Error(), "bound to provider plugin.erp, which is not registered") {
		t.Errorf("Resolve with a vanished provider = %v", err)
	}
	if err := b.reg.Register(erp); err != nil {
		t.Fatal(err)
	}
	if p, err := b.reg.Resolve(ctx, "ten_d", "erp.purchase_order.get"); err != nil || p != erp {
		t.Errorf("Resolve after the provider came back = %v, %v", p, err)
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	po := `{"number":"PO-1","supplier":"Acme","currency":"EUR","total_cents":1000,"lines":[{"sku":"A","description":"a","quantity":1,"unit_cents":1000}],"status":"open"}`

	t.Run("passes the call through", func(t *testing.T) {
		t.Parallel()
		p := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get").answering(po)
		b := setup(t, p)
		out, err := b.reg.Call(ctx, call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`))
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		var got capability.PurchaseOrder
		if err := json.Unmarshal(out, &got); err != nil || got.Number != "PO-1" || got.Lines[0].SKU != "A" {
			t.Fatalf("result = %s (%v)", out, err)
		}
		want := call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`)
		if diff := cmp.Diff(want, *p.last.Load()); diff != "" {
			t.Errorf("the provider got (-want +got):\n%s", diff)
		}
	})

	t.Run("malformed output", func(t *testing.T) {
		t.Parallel()
		for _, out := range []string{`{"number":"PO-1"}`, `null`, `"PO-1"`, `{"number":"PO-1",`} {
			p := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get").answering(out)
			b := setup(t, p)
			_, err := b.reg.Call(ctx, call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`))
			if !errors.Is(err, capability.ErrMalformedOutput) ||
				!strings.Contains(err.Error(), "provider plugin.erp returned malformed output") {
				t.Errorf("output %s: Call error = %v, want malformed output naming the provider", out, err)
			}
		}
	})

	t.Run("a provider that vouches for its results is not checked again", func(t *testing.T) {
		t.Parallel()
		p := vouching{newProvider("builtin.erp", capability.KindBuiltin, "erp.purchase_order.get").answering(`{"number":"PO-1"}`)}
		b := setup(t, p)
		if _, err := b.reg.Call(ctx, call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`)); err != nil {
			t.Fatalf("Call: %v", err)
		}
	})

	t.Run("a plugin that says it vouches for its results is checked", func(t *testing.T) {
		t.Parallel()
		p := vouching{newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get").answering(`{"number":"PO-1"}`)}
		b := setup(t, p)
		if _, err := b.reg.Call(ctx, call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`)); !errors.Is(err, capability.ErrMalformedOutput) {
			t.Errorf("Call error = %v, want malformed output", err)
		}
	})

	t.Run("results may carry more fields", func(t *testing.T) {
		t.Parallel()
		more := strings.Replace(po, `"status":"open"`, `"status":"open","buyer":"Bob","lines_total":1`, 1)
		p := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get").answering(more)
		b := setup(t, p)
		if _, err := b.reg.Call(ctx, call("ten_a", "erp.purchase_order.get", `{"number":"PO-1"}`)); err != nil {
			t.Fatalf("Call: %v", err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		p := newProvider("plugin.slow", capability.KindPlugin, "chat.message.send")
		p.fn = func(ctx context.Context, _ capability.Call) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		st := openStore(t)
		reg := registry.New(registry.Config{Store: st, CallTimeout: 20 * time.Millisecond})
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
		_, err := reg.Call(ctx, call("ten_a", "chat.message.send", `{"channel":"#ops","text":"hi"}`))
		if !errors.Is(err, capability.ErrTimeout) || !errors.Is(err, errs.Unavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Call error = %v, want a timeout", err)
		}
		if msg := errs.PublicMessage(err); msg != "provider plugin.slow did not answer chat.message.send within 20ms" {
			t.Errorf("message = %q", msg)
		}
		// The caller's own, earlier deadline wins: the message gives what
		// was left of it when the call began, or says it had passed (a
		// loaded machine may take that long to get there).
		callerSays := regexp.MustCompile(`^provider plugin\.slow did not answer chat\.message\.send (within [1-9][0-9]*ms, the caller's deadline|before the caller's deadline)$`)
		for _, d := range []time.Duration{10 * time.Millisecond, time.Nanosecond} {
			cctx, cancel := context.WithTimeout(ctx, d)
			_, err = reg.Call(cctx, call("ten_a", "chat.message.send", `{"channel":"#ops","text":"hi"}`))
			cancel()
			if !errors.Is(err, capability.ErrTimeout) || !callerSays.MatchString(errs.PublicMessage(err)) {
				t.Errorf("Call with a deadline %v away = %v", d, err)
			}
		}
	})

	t.Run("provider errors keep their kind", func(t *testing.T) {
		t.Parallel()
		p := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get")
		p.fn = func(context.Context, capability.Call) (json.RawMessage, error) {
			return nil, errs.NotFoundf("purchase order PO-9 not found")
		}
		b := setup(t, p)
		_, err := b.reg.Call(ctx, call("ten_a", "erp.purchase_order.get", `{"number":"PO-9"}`))
		if !errors.Is(err, errs.NotFound) || errs.PublicMessage(err) != "purchase order PO-9 not found" ||
			!strings.Contains(err.Error(), "provider plugin.erp") {
			t.Errorf("Call error = %v", err)
		}
	})

	t.Run("a panic is an error", func(t *testing.T) {
		t.Parallel()
		p := newProvider("builtin.boom", capability.KindBuiltin, "chat.message.send")
		p.fn = func(context.Context, capability.Call) (json.RawMessage, error) { panic("boom") }
		b := setup(t, p)
		_, err := b.reg.Call(ctx, call("ten_a", "chat.message.send", `{"channel":"#ops","text":"hi"}`))
		if err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Errorf("Call error = %v, want a panic error", err)
		}
	})

	t.Run("unknown capability", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.reg.Call(ctx, call("ten_a", "nope.nothing", `{}`))
		if !errors.Is(err, errs.Invalid) {
			t.Errorf("Call error = %v, want Invalid", err)
		}
	})

	t.Run("coming connector", func(t *testing.T) {
		t.Parallel()
		b := setup(t, registry.DeclaredConnectors()...)
		slack, ok := b.reg.Provider("connector.slack")
		if !ok {
			t.Fatal("no connector.slack")
		}
		_, err := slack.Call(ctx, call("ten_a", "chat.message.send", `{"channel":"#ops","text":"hi"}`))
		if !errors.Is(err, errs.Unavailable) || errs.PublicMessage(err) != "connector Slack is coming" {
			t.Errorf("coming connector Call = %v", err)
		}
	})
}

func TestBind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	email := newProvider("builtin.email", capability.KindBuiltin, "email.send")
	relay := newProvider("plugin.relay", capability.KindPlugin, "email.send")
	b := setup(t, append([]capability.Provider{email, relay}, registry.DeclaredConnectors()...)...)

	for _, test := range []struct {
		name, cap, provider string
		kind                error
		want                string
	}{
		{"unknown capability", "nope.nothing", "builtin.email", errs.NotFound, "capability nope.nothing not found"},
		{"unknown provider", "email.send", "plugin.nope", errs.Invalid, `unknown provider "plugin.nope"`},
		{"does not provide", "chat.message.send", "builtin.email", errs.Invalid, "provider builtin.email does not provide chat.message.send"},
		{"coming", "chat.message.send", "connector.slack", errs.Invalid, "connector Slack is coming"},
	} {
		err := b.reg.Bind(ctx, "ten_a", test.cap, test.provider, "usr_1")
		if !errors.Is(err, test.kind) || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: Bind = %v, want %v saying %q", test.name, err, test.kind, test.want)
		}
		if vs := errs.Violations(err); test.kind == errs.Invalid &&
			(len(vs) != 1 || fmt.Sprint(vs[0].Loc) != "[body provider_id]") {
			t.Errorf("%s: violations = %v, want one at body.provider_id", test.name, vs)
		}
	}

	if err := b.reg.Bind(ctx, "ten_a", "email.send", "plugin.relay", "usr_1"); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	b.clock.Advance(time.Hour)
	if err := b.reg.Bind(ctx, "ten_a", "email.send", "builtin.email", "usr_2"); err != nil {
		t.Fatalf("Bind again: %v", err)
	}
	if err := b.reg.Bind(ctx, "ten_a", "email.send", "builtin.email", "usr_2"); err != nil {
		t.Fatalf("Bind unchanged: %v", err)
	}
	if got, ok := b.reg.Bound("ten_a", "email.send"); !ok || got != "builtin.email" {
		t.Errorf("Bound = %q, %v", got, ok)
	}
	if _, ok := b.reg.Bound("ten_b", "email.send"); ok {
		t.Error("tenant ten_b sees ten_a's binding")
	}
	want := []registry.Binding{{Capability: "email.send", ProviderID: "builtin.email", BoundAt: t0.Add(time.Hour), BoundBy: "usr_2"}}
	got, err := b.reg.Bindings(ctx, "ten_a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Bindings (-want +got):\n%s", diff)
	}

	// A registry opened later on the same store reads the bindings back.
	fresh := registry.New(registry.Config{Store: b.store})
	if err := fresh.Register(email); err != nil {
		t.Fatal(err)
	}
	if got, ok := fresh.Bound("ten_a", "email.send"); !ok || got != "builtin.email" {
		t.Errorf("a fresh registry: Bound = %q, %v", got, ok)
	}

	// Unbind, and a second Unbind is NotFound.
	b.clock.Advance(time.Hour)
	if err := b.reg.Unbind(ctx, "ten_a", "email.send", "usr_3"); err != nil {
		t.Fatalf("Unbind: %v", err)
	}
	if err := b.reg.Unbind(ctx, "ten_a", "email.send", "usr_3"); !errors.Is(err, errs.NotFound) {
		t.Errorf("second Unbind = %v, want NotFound", err)
	}
	if err := b.reg.Unbind(ctx, "ten_a", "nope.nothing", "usr_3"); !errors.Is(err, errs.NotFound) {
		t.Errorf("Unbind of an unknown capability = %v, want NotFound", err)
	}
	if _, ok := b.reg.Bound("ten_a", "email.send"); ok {
		t.Error("still bound after Unbind")
	}

	// The audit log has every change with before and after.
	var entries []*audit.Entry
	err = b.store.View(ctx, func(r store.Reader) error {
		var err error
		entries, _, err = audit.List(r, "ten_a", audit.Query{Entity: "capability_binding"}, store.Page{Limit: 10})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	type change struct{ Actor, Action, Before, After string }
	var changes []change
	provider := func(raw json.RawMessage) string {
		var b *registry.Binding
		if err := json.Unmarshal(raw, &b); err != nil || b == nil {
			return "none"
		}
		return b.ProviderID
	}
	for _, e := range entries {
		if e.EntityID != "email.send" {
			t.Errorf("audit entity id = %q", e.EntityID)
		}
		changes = append(changes, change{e.Actor, e.Action, provider(e.Before), provider(e.After)})
	}
	wantChanges := []change{ // newest first
		{"usr_3", "capability.unbind", "builtin.email", "none"},
		{"usr_2", "capability.bind", "plugin.relay", "builtin.email"},
		{"usr_1", "capability.bind", "none", "plugin.relay"},
	}
	if diff := cmp.Diff(wantChanges, changes); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

// TestBindingCacheConcurrent binds a capability back and forth while other
// goroutines call it: every call must reach one of the two providers, and
// once the binders stop, every call reaches the last one bound.
func TestBindingCacheConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	answer := func(p *provider) *provider {
		p.fn = func(context.Context, capability.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"message_id":"` + p.info.ID + `","status":"sent"}`), nil
		}
		return p
	}
	one := answer(newProvider("plugin.one", capability.KindPlugin, "email.send"))
	two := answer(newProvider("plugin.two", capability.KindPlugin, "email.send"))
	b := setup(t, one, two)
	const tenants = 3
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		callers sync.WaitGroup
		bad     atomic.Int64
	)
	for i := range tenants {
		tenant := fmt.Sprintf("ten_%d", i)
		callers.Add(2)
		for range 2 {
			go func() {
				defer callers.Done()
				for !stop.Load() {
					out, err := b.reg.Call(ctx, call(tenant, "email.send", emailOK))
					if err != nil {
						// Before the first binding there is no default: two
						// providers fill email.send.
						if !errors.Is(err, errs.Unavailable) {
							bad.Add(1)
							t.Errorf("Call: %v", err)
						}
						continue
					}
					if s := string(out); !strings.Contains(s, "plugin.one") && !strings.Contains(s, "plugin.two") {
						bad.Add(1)
					}
				}
			}()
		}
	}
	last := make([]string, tenants)
	for i := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tenant := fmt.Sprintf("ten_%d", i)
			for n := range 20 {
				id := []string{"plugin.one", "plugin.two"}[n%2]
				if err := b.reg.Bind(ctx, tenant, "email.send", id, "usr_1"); err != nil {
					t.Errorf("Bind: %v", err)
					return
				}
				// What was just bound is what the next call reaches.
				out, err := b.reg.Call(ctx, call(tenant, "email.send", emailOK))
				if err != nil || !strings.Contains(string(out), id) {
					t.Errorf("%s: after binding %s the call reached %s (%v)", tenant, id, out, err)
				}
				last[i] = id
			}
		}()
	}
	testwait.Wait(t, &wg, "the binders returned")
	stop.Store(true)
	testwait.Wait(t, &callers, "the callers stopped")
	if bad.Load() > 0 {
		t.Fatalf("%d calls went wrong", bad.Load())
	}
	fresh := registry.New(registry.Config{Store: b.store})
	for i := range tenants {
		tenant := fmt.Sprintf("ten_%d", i)
		if got, _ := b.reg.Bound(tenant, "email.send"); got != last[i] {
			t.Errorf("%s: Bound = %s, want %s", tenant, got, last[i])
		}
		if got, _ := fresh.Bound(tenant, "email.send"); got != last[i] {
			t.Errorf("%s: the stored binding is %s, want %s", tenant, got, last[i])
		}
	}
}

func TestGaps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	email := newProvider("builtin.email", capability.KindBuiltin, "email.send")
	relay := newProvider("plugin.relay", capability.KindPlugin, "email.send")
	tasks := newProvider("builtin.tasks", capability.KindBuiltin, "task.create")
	b := setup(t, append([]capability.Provider{email, relay, tasks}, registry.DeclaredConnectors()...)...)
	b.reg.SetSystems(func(_ context.Context, tenant string) ([]string, error) {
		if tenant == "ten_xero" {
			return []string{"xero", "MS Teams"}, nil
		}
		return nil, nil
	})
	needed := []string{"task.create", "email.send", "ledger.post", "chat.message.send", "erp.purchase_order.get",
		"document.extract", "acme.widget.get", "esign.request", "task.create", "sms.send"}
	for _, test := range []struct {
		tenant string
		want   map[string]string
	}{
		{"ten_plain", map[string]string{
			// task.create: filled by builtin.tasks; email.send: two providers,
			// a choice to make but not a gap.
			"ledger.post":            "plugin",           // many accounting connectors, none chosen
			"chat.message.send":      "plugin",           // Slack and Teams both would
			"erp.purchase_order.get": "plugin",           // several ERPs
			"document.extract":       "manual",           // a built-in app's, not registered here
			"acme.widget.get":        "plugin",           // not in the catalog
			"esign.request":          "plugin",           // DocuSign and Adobe Sign
			"sms.send":               "connector:twilio", // the only connector for it
		}},
		{"ten_xero", map[string]string{
			"ledger.post":            "connector:xero",
			"chat.message.send":      "connector:teams",
			"erp.purchase_order.get": "connector:xero",
			"document.extract":       "manual",
			"acme.widget.get":        "plugin",
			"esign.request":          "plugin",
			"sms.send":               "connector:twilio",
		}},
	} {
		gaps, err := b.reg.Gaps(ctx, test.tenant, needed)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for i, g := range gaps {
			got[g.Capability] = g.FilledBy
			if g.Note == "" {
				t.Errorf("%s: gap %s has no note", test.tenant, g.Capability)
			}
			if i > 0 && gaps[i-1].Capability >= g.Capability {
				t.Errorf("gaps not sorted")
			}
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%s: gaps (-want +got):\n%s", test.tenant, diff)
		}
	}

	// A binding fills a gap; GapsOf asks NeededBy.
	erp := newProvider("plugin.erp", capability.KindPlugin, "erp.purchase_order.get", "ledger.post")
	erp2 := newProvider("plugin.erp2", capability.KindPlugin, "ledger.post")
	if err := b.reg.Register(erp); err != nil {
		t.Fatal(err)
	}
	if err := b.reg.Register(erp2); err != nil {
		t.Fatal(err)
	}
	b.reg.SetNeededBy(func(context.Context, string) ([]string, error) {
		return []string{"ledger.post", "erp.purchase_order.get", "sms.send"}, nil
	})
	gaps, err := b.reg.GapsOf(ctx, "ten_plain")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]registry.Gap{{Capability: "sms.send", FilledBy: "connector:twilio"}}, gaps,
		cmpopts.IgnoreFields(registry.Gap{}, "Note")); diff != "" {
		t.Errorf("GapsOf (-want +got):\n%s", diff)
	}
	b.reg.SetNeededBy(func(context.Context, string) ([]string, error) { return nil, errors.New("boom") })
	if _, err := b.reg.GapsOf(ctx, "ten_plain"); err == nil {
		t.Error("GapsOf hid NeededBy's error")
	}
}

func TestConnections(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	slow := &healthy{provider: newProvider("plugin.slow", capability.KindPlugin), health: func(ctx context.Context) capability.Health {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return capability.Health{Status: "connected"}
	}}
	down := &healthy{provider: newProvider("plugin.down", capability.KindPlugin), health: func(context.Context) capability.Health {
		return capability.Health{Status: "failed", Detail: "exited with status 2"}
	}}
	starting := &healthy{provider: newProvider("plugin.starting", capability.KindPlugin), health: func(context.Context) capability.Health {
		return capability.Health{Status: "starting", Detail: "restarting after a crash"}
	}}
	st := openStore(t)
	reg := registry.New(registry.Config{Store: st, HealthTimeout: time.Second})
	slack := registry.DeclaredConnectors()[0]
	for _, p := range []capability.Provider{newProvider("builtin.email", capability.KindBuiltin, "email.send"), slow, down, starting,
		registry.Failed("plugin.broken", "broken", capability.KindPlugin, "checksum mismatch"), slack} {
		if err := reg.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	str := func(s string) *string { return &s }
	want := []registry.ConnectionOut{
		{Provider: "builtin.email", Name: "Provider builtin.email", Kind: "builtin", Status: "connected"},
		{Provider: slack.Info().ID, Name: slack.Info().Name, Kind: "connector", Status: "coming",
			Detail: str("the " + slack.Info().Name + " connector is not built yet")},
		{Provider: "plugin.broken", Name: "broken", Kind: "plugin", Status: "failed", Detail: str("checksum mismatch")},
		{Provider: "plugin.down", Name: "Provider plugin.down", Kind: "plugin", Status: "failed", Detail: str("exited with status 2")},
		{Provider: "plugin.slow", Name: "Provider plugin.slow", Kind: "plugin", Status: "failed", Detail: str("health check did not answer within 1s")},
		{Provider: "plugin.starting", Name: "Provider plugin.starting", Kind: "plugin", Status: "starting", Detail: str("restarting after a crash")},
	}
	if diff := cmp.Diff(want, reg.Connections(context.Background())); diff != "" {
		t.Errorf("Connections (-want +got):\n%s", diff)
	}
}

func TestApps(t *testing.T) {
	t.Parallel()
	withApp := newProvider("plugin.acme", capability.KindPlugin)
	withApp.info.App = &capability.App{ID: "acme", Name: "Acme", API: capability.API{Prefix: "/v1/acme"},
		Events: capability.Events{Emits: []string{"acme.widget.created"}}}
	clash := newProvider("plugin.fake-crm", capability.KindPlugin)
	clash.info.App = &capability.App{ID: "crm", Name: "Fake CRM"}
	b := setup(t, withApp, clash)
	apps := b.reg.Apps()
	var ids []string
	for _, a := range apps {
		ids = append(ids, a.ID)
		if a.Events.Emits == nil || a.Events.Consumes == nil || a.Capabilities == nil {
			t.Errorf("app %s has a null list", a.ID)
		}
		if a.API.Prefix == "" {
			t.Errorf("app %s has no API prefix", a.ID)
		}
		for _, c := range a.Capabilities {
			if _, ok := b.reg.Capability(c); !ok {
				t.Errorf("app %s lists unknown capability %s", a.ID, c)
			}
		}
	}
	want := []string{"processes", "tasks", "usecases", "docs", "crm", "invoicing", "boards", "decisions", "automation",
		"capabilities", "access", "acme"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("app ids (-want +got):\n%s", diff)
	}
	for _, a := range apps {
		if a.ID == "crm" && a.Name != "CRM" {
			t.Errorf("a plugin replaced the built-in crm app: %+v", a)
		}
		if a.ID == "docs" && !contains(a.Events.Emits, "docs.document.validated") {
			t.Errorf("docs does not emit docs.document.validated: %v", a.Events.Emits)
		}
		if a.ID == "processes" && !contains(a.Events.Consumes, "docs.document.validated") {
			t.Errorf("processes does not consume docs.document.validated")
		}
	}
	js, _ := json.Marshal(apps[len(apps)-1])
	if want := `{"id":"acme","name":"Acme","api":{"prefix":"/v1/acme"},"events":{"emits":["acme.widget.created"],"consumes":[]},"capabilities":[]}`; string(js) != want {
		t.Errorf("plugin app JSON = %s, want %s", js, want)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
