package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// capProvider is an in-process provider for the capability tests.
type capProvider struct {
	info   capability.Info
	health *capability.Health
}

func (p *capProvider) Info() capability.Info { return p.info }

func (p *capProvider) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return json.RawMessage(`{"message_id":"m1","status":"sent"}`), nil
}

// capHealthy adds a health check.
type capHealthy struct{ *capProvider }

func (p capHealthy) Health(context.Context) capability.Health { return *p.health }

type capBundle struct {
	t      *testing.T
	ws     *bas.Workspace
	srv    *httptest.Server
	admin  string // admin session token of tenant ten_caps
	member string // member session token of tenant ten_caps
	other  string // admin of tenant ten_other
}

func capSetup(t *testing.T, plugins ...string) *capBundle {
	t.Helper()
	ctx := context.Background()
	erpA := &capProvider{info: capability.Info{ID: "plugin.erp-a", Name: "ERP A", Kind: capability.KindPlugin,
		Capabilities: []string{"erp.purchase_order.get", "sms.send"}}}
	erpB := capHealthy{&capProvider{info: capability.Info{ID: "plugin.erp-b", Name: "ERP B", Kind: capability.KindPlugin,
		Capabilities: []string{"erp.purchase_order.get"}},
		health: &capability.Health{Status: "failed", Detail: "exited with status 1"}}}
	logger := slog.New(slog.DiscardHandler)
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: logger})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	ws, err := bas.Open(ctx, bas.Options{Store: st, Logger: logger, Providers: []bas.Provider{erpA, erpB},
		Plugins: plugins})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	srv := httptest.NewServer(conform(t, httpapi.New(ws, httpapi.Options{DevLogin: true})))
	t.Cleanup(srv.Close)
	b := &capBundle{t: t, ws: ws, srv: srv}
	login := func(tenant, user, role string) string {
		var sess struct{ Token string }
		b.do("", "POST", "/v1/auth/dev-login",
			`{"tenant_id":"`+tenant+`","user_id":"`+user+`","email":"`+user+`@example.com","roles":["`+role+`"]}`, 201, &sess)
		if sess.Token == "" {
			t.Fatalf("dev-login %s/%s gave no token", tenant, user)
		}
		return sess.Token
	}
	b.admin = login("ten_caps", "usr_admin", "admin")
	b.member = login("ten_caps", "usr_member", "member")
	b.other = login("ten_other", "usr_other", "admin")
	return b
}

// do sends a request and checks its status; it decodes the body into out
// when out is not nil, and returns the response.
func (b *capBundle) do(token, method, path, body string, status int, out any) *http.Response {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL+"/api"+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		if len(raw) > 600 {
			raw = append(raw[:600], "..."...)
		}
		b.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return resp
}

func findCapability(list []httpapi.CapabilityOut, id string) *httpapi.CapabilityOut {
	for i := range list {
		if list[i].ID == id {
			return &list[i]
		}
	}
	return nil
}

func TestCapabilitiesAPI(t *testing.T) {
	t.Parallel()
	b := capSetup(t)

	// The list: every capability with its schemas, providers and binding.
	var list []httpapi.CapabilityOut
	b.do(b.admin, "GET", "/v1/capabilities?limit=200", "", 200, &list)
	if len(list) < 35 {
		t.Fatalf("%d capabilities listed, want at least 35", len(list))
	}
	po := findCapability(list, "erp.purchase_order.get")
	if po == nil {
		t.Fatal("erp.purchase_order.get not listed")
	}
	wantProviders := []httpapi.ProviderRecord{
		{ID: "connector.dynamics365", Name: "Microsoft Dynamics 365", Kind: "connector", Status: "coming"},
		{ID: "connector.netsuite", Name: "NetSuite", Kind: "connector", Status: "coming"},
		{ID: "connector.odoo", Name: "Odoo", Kind: "connector", Status: "coming"},
		{ID: "connector.sap", Name: "SAP", Kind: "connector", Status: "coming"},
		{ID: "connector.xero", Name: "Xero", Kind: "connector", Status: "coming"},
		{ID: "plugin.erp-a", Name: "ERP A", Kind: "plugin", Status: "available"},
		{ID: "plugin.erp-b", Name: "ERP B", Kind: "plugin", Status: "available"},
	}
	if diff := cmp.Diff(wantProviders, po.Providers); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	if po.BoundProvider != nil || po.DefaultProvider != nil || len(po.ArgsSchema) == 0 || len(po.ResultSchema) == 0 {
		t.Errorf("erp.purchase_order.get = %+v", po)
	}
	if sms := findCapability(list, "sms.send"); sms == nil || sms.DefaultProvider == nil || *sms.DefaultProvider != "plugin.erp-a" {
		t.Errorf("sms.send default = %+v", sms)
	}

	// Pages follow each other without repeats.
	var page1, page2 []httpapi.CapabilityOut
	resp := b.do(b.admin, "GET", "/v1/capabilities?limit=10", "", 200, &page1)
	next := resp.Header.Get("X-Next-Cursor")
	if len(page1) != 10 || next == "" {
		t.Fatalf("first page: %d items, cursor %q", len(page1), next)
	}
	b.do(b.admin, "GET", "/v1/capabilities?limit=10&cursor="+next, "", 200, &page2)
	if len(page2) != 10 || page2[0].ID <= page1[9].ID || page2[0].ID != list[10].ID {
		t.Errorf("second page starts at %s after %s", page2[0].ID, page1[9].ID)
	}
	b.do(b.admin, "GET", "/v1/capabilities?cursor=!!!", "", 422, nil)

	// One capability; the static /gaps beside /:id both route.
	var one httpapi.CapabilityOut
	b.do(b.member, "GET", "/v1/capabilities/erp.purchase_order.get", "", 200, &one)
	if one.ID != "erp.purchase_order.get" {
		t.Errorf("GET one = %s", one.ID)
	}
	b.do(b.member, "GET", "/v1/capabilities/nope.nothing", "", 404, nil)
	var gaps []registry.Gap
	b.do(b.member, "GET", "/v1/capabilities/gaps", "", 200, &gaps)

	// Binding: permission, validation, unknown capability, success.
	path := "/v1/capabilities/erp.purchase_order.get/binding"
	var detail struct{ Detail any }
	b.do(b.member, "PUT", path, `{"provider_id":"plugin.erp-b"}`, 403, &detail)
	if detail.Detail != "missing permission capabilities.manage" {
		t.Errorf("403 detail = %v", detail.Detail)
	}
	type violation struct {
		Loc  []any
		Type string
	}
	var bad struct{ Detail []violation }
	b.do(b.admin, "PUT", path, `{}`, 422, &bad)
	if diff := cmp.Diff([]violation{{[]any{"body", "provider_id"}, "missing"}}, bad.Detail); diff != "" {
		t.Errorf("422 without provider_id (-want +got):\n%s", diff)
	}
	b.do(b.admin, "PUT", path, `{"provider_id":"`+strings.Repeat("x", 81)+`"}`, 422, &bad)
	if diff := cmp.Diff([]violation{{[]any{"body", "provider_id"}, "string_too_long"}}, bad.Detail); diff != "" {
		t.Errorf("422 long provider_id (-want +got):\n%s", diff)
	}
	for _, id := range []string{"plugin.nope", "connector.xero"} {
		b.do(b.admin, "PUT", path, `{"provider_id":"`+id+`"}`, 422, &bad)
		if diff := cmp.Diff([]violation{{[]any{"body", "provider_id"}, "value_error"}}, bad.Detail); diff != "" {
			t.Errorf("422 provider %s (-want +got):\n%s", id, diff)
		}
	}
	b.do(b.admin, "PUT", "/v1/capabilities/sms.send/binding", `{"provider_id":"plugin.erp-b"}`, 422, nil)
	b.do(b.admin, "PUT", "/v1/capabilities/nope.nothing/binding", `{"provider_id":"plugin.erp-b"}`, 404, nil)
	var bound httpapi.CapabilityOut
	b.do(b.admin, "PUT", path, `{"provider_id":"plugin.erp-b"}`, 200, &bound)
	if bound.BoundProvider == nil || *bound.BoundProvider != "plugin.erp-b" {
		t.Errorf("after PUT: bound_provider = %v", bound.BoundProvider)
	}
	b.do(b.member, "GET", "/v1/capabilities/erp.purchase_order.get", "", 200, &one)
	if one.BoundProvider == nil || *one.BoundProvider != "plugin.erp-b" {
		t.Errorf("GET after PUT: bound_provider = %v", one.BoundProvider)
	}
	// Another tenant does not see the binding.
	b.do(b.other, "GET", "/v1/capabilities/erp.purchase_order.get", "", 200, &one)
	if one.BoundProvider != nil {
		t.Errorf("ten_other sees ten_caps's binding: %v", *one.BoundProvider)
	}
	if got, _ := b.ws.Capabilities().Bound("ten_caps", "erp.purchase_order.get"); got != "plugin.erp-b" {
		t.Errorf("registry Bound = %q", got)
	}

	// Unbind: 204, then 404.
	b.do(b.member, "DELETE", path, "", 403, nil)
	b.do(b.admin, "DELETE", path, "", 204, nil)
	b.do(b.admin, "DELETE", path, "", 404, nil)
	b.do(b.admin, "DELETE", "/v1/capabilities/nope.nothing/binding", "", 404, nil)
}

func TestCapabilityGapsAPI(t *testing.T) {
	t.Parallel()
	b := capSetup(t)
	b.ws.Capabilities().SetNeededBy(func(_ context.Context, tenant string) ([]string, error) {
		if tenant != "ten_caps" {
			return nil, nil
		}
		return []string{"sms.send", "ledger.post", "chat.message.send", "esign.request"}, nil
	})
	var gaps []registry.Gap
	b.do(b.member, "GET", "/v1/capabilities/gaps", "", 200, &gaps)
	got := map[string]string{}
	for _, g := range gaps {
		got[g.Capability] = g.FilledBy
	}
	want := map[string]string{"ledger.post": "plugin", "chat.message.send": "plugin", "esign.request": "plugin"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}

	// The workspace profile's systems pick connectors.
	if _, err := wiring.Of(b.ws.Internal()).Access().SetProfile(context.Background(), "ten_caps", "usr_admin",
		json.RawMessage(`{"systems":["Xero","Slack"]}`)); err != nil {
		t.Fatalf("set profile: %v", err)
	}
	b.do(b.member, "GET", "/v1/capabilities/gaps", "", 200, &gaps)
	got = map[string]string{}
	for _, g := range gaps {
		got[g.Capability] = g.FilledBy
	}
	want = map[string]string{"ledger.post": "connector:xero", "chat.message.send": "connector:slack", "esign.request": "plugin"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gaps with a profile (-want +got):\n%s", diff)
	}
	b.do(b.other, "GET", "/v1/capabilities/gaps", "", 200, &gaps)
	if len(gaps) != 0 {
		t.Errorf("ten_other gaps = %v", gaps)
	}

	// Integrations: asked, or the profile's.
	var ins []registry.Integration
	b.do(b.member, "GET", "/v1/integrations?apps=QBO,MS%20Teams,Acme%20ERP", "", 200, &ins)
	var names []string
	for _, in := range ins {
		names = append(names, in.App+"/"+string(in.How))
	}
	if diff := cmp.Diff([]string{"QuickBooks/coming", "Microsoft Teams/coming", "Acme ERP/manual"}, names); diff != "" {
		t.Errorf("integrations (-want +got):\n%s", diff)
	}
	b.do(b.member, "GET", "/v1/integrations", "", 200, &ins)
	if len(ins) != 2 || ins[0].App != "Xero" || ins[1].App != "Slack" {
		t.Errorf("integrations of the profile = %+v", ins)
	}
	b.do(b.other, "GET", "/v1/integrations", "", 200, &ins)
	if len(ins) != 0 {
		t.Errorf("integrations without a profile = %+v", ins)
	}
	b.do(b.member, "GET", "/v1/integrations?apps=", "", 200, &ins)
	if len(ins) != 0 {
		t.Errorf("integrations of an empty list = %+v", ins)
	}
	b.do(b.member, "GET", "/v1/integrations?apps="+strings.Repeat("x,", 101), "", 422, nil)
	b.do(b.member, "GET", "/v1/integrations?apps="+strings.Repeat("x", 201), "", 422, nil)
}

func TestConnectionsAPI(t *testing.T) {
	t.Parallel()
	// A plugin that cannot load is still listed, failed with the reason
	// (an executable that is no bas plugin; a path that names no file
	// fails Open).
	broken := filepath.Join(t.TempDir(), "acme-erp")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := capSetup(t, broken)
	var conns []registry.ConnectionOut
	b.do(b.member, "GET", "/v1/connections?limit=200", "", 200, &conns)
	byID := map[string]registry.ConnectionOut{}
	for _, c := range conns {
		byID[c.Provider] = c
	}
	str := func(s string) *string { return &s }
	for _, want := range []registry.ConnectionOut{
		{Provider: "plugin.erp-a", Name: "ERP A", Kind: "plugin", Status: "connected"},
		{Provider: "plugin.erp-b", Name: "ERP B", Kind: "plugin", Status: "failed", Detail: str("exited with status 1")},
		{Provider: "connector.xero", Name: "Xero", Kind: "connector", Status: "coming", Detail: str("the Xero connector is not built yet")},
	} {
		if diff := cmp.Diff(want, byID[want.Provider]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", want.Provider, diff)
		}
	}
	if c := byID["plugin.acme-erp"]; c.Status != "failed" || c.Kind != "plugin" || c.Detail == nil || *c.Detail == "" {
		t.Errorf("the broken plugin's connection = %+v", c)
	}
	// The raw shape: detail is null when there is none.
	resp, err := http.NewRequest("GET", b.srv.URL+"/api/v1/connections?limit=200", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer "+b.member)
	r, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !bytes.Contains(raw, []byte(`{"provider":"plugin.erp-a","name":"ERP A","kind":"plugin","status":"connected","detail":null}`)) {
		t.Errorf("connections JSON = %s", raw)
	}
}

func TestCapabilitiesAppLimit(t *testing.T) {
	t.Parallel()
	b := capSetup(t)
	var key struct{ Secret string }
	b.do(b.admin, "POST", "/v1/api-keys", `{"name":"docs only","roles":["admin"],"apps":["docs"]}`, 201, &key)
	for _, path := range []string{"/v1/capabilities", "/v1/capabilities/gaps", "/v1/integrations", "/v1/connections"} {
		var detail struct{ Detail string }
		b.do(key.Secret, "GET", path, "", 403, &detail)
		if detail.Detail != "key not allowed for app capabilities" {
			t.Errorf("%s: detail %q", path, detail.Detail)
		}
	}
	b.do("", "GET", "/v1/capabilities", "", 401, nil)
}

// TestConnectionsCircuits: a provider whose answers keep failing has its
// circuit for that capability listed in GET /v1/connections; its other
// capability and the other providers show none.
func TestConnectionsCircuits(t *testing.T) {
	t.Parallel()
	b := capSetup(t)
	b.do(b.admin, "PUT", "/v1/capabilities/erp.purchase_order.get/binding", `{"provider_id":"plugin.erp-a"}`, 200, nil)
	// plugin.erp-a answers erp.purchase_order.get with a chat message:
	// malformed output, the provider's fault.
	ctx := context.Background()
	reg := b.ws.Capabilities()
	po := capability.Call{Tenant: "ten_caps", Capability: "erp.purchase_order.get", Args: json.RawMessage(`{"number":"PO-1"}`)}
	start := time.Now()
	for i := range 6 {
		_, err := reg.Call(ctx, po)
		if want := i == 5; errors.Is(err, registry.ErrCircuitOpen) != want {
			t.Fatalf("call %d: %v (want the circuit open: %v)", i+1, err, want)
		}
	}
	if _, err := reg.Call(ctx, capability.Call{Tenant: "ten_caps", Capability: "sms.send",
		Args: json.RawMessage(`{"to":"+31612345678","text":"hi"}`)}); err != nil {
		t.Fatalf("sms.send through the same provider: %v", err)
	}
	var conns []registry.ConnectionOut
	b.do(b.member, "GET", "/v1/connections?limit=200", "", 200, &conns)
	for _, c := range conns {
		if c.Provider != "plugin.erp-a" {
			if c.Circuits != nil {
				t.Errorf("%s circuits = %+v, want none", c.Provider, c.Circuits)
			}
			continue
		}
		if len(c.Circuits) != 1 || c.Circuits[0].RetryAt.Before(start.Add(30*time.Second)) {
			t.Fatalf("plugin.erp-a circuits = %+v, want one opened for 30s", c.Circuits)
		}
		c.Circuits[0].RetryAt = time.Time{}
		want := []registry.CircuitOut{{Capability: "erp.purchase_order.get", State: "open", Failures: 5}}
		if diff := cmp.Diff(want, c.Circuits); diff != "" || c.Status != "connected" {
			t.Errorf("plugin.erp-a status %s, circuits (-want +got):\n%s", c.Status, diff)
		}
	}
}
