package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tableResolver answers from a table; other hosts resolve to a public
// address.
type tableResolver map[string]string

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// newWebhookServer is newTestServer with workspace options of its own.
func newWebhookServer(t *testing.T, opts bas.Options) *testServer {
	t.Helper()
	logs := &logBuffer{}
	clk := bas.NewFakeClock(testStart)
	opts.InMemory, opts.Clock = true, clk
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ws, err := bas.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, httpapi.Options{DevLogin: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: logs}
}

type webhookOut struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Description    string   `json:"description"`
	Active         bool     `json:"active"`
	Secret         *string  `json:"secret"`
	DisabledReason *string  `json:"disabled_reason"`
}

func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	// Hosts resolve to a public address but for the intranet names.
	s := newWebhookServer(t, bas.Options{WebhookResolver: tableResolver{"intranet.example": "10.0.0.7", "meta.example": "169.254.169.254"}})
	admin := s.devLogin(t, `{}`)
	tok := admin.Token

	// The address guard: 422 at body.url, nothing created.
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://[::1]/hook", "http://169.254.169.254/latest", "ftp://hooks.example.com/",
		"https://intranet.example/hook", "http://meta.example/latest"} {
		var e struct {
			Detail []struct {
				Loc  []any  `json:"loc"`
				Type string `json:"type"`
			} `json:"detail"`
		}
		s.do(t, "POST", "/v1/webhooks", tok, map[string]any{"url": u, "events": []string{"*"}}).want(t, 422).decode(t, &e)
		if len(e.Detail) != 1 || !cmp.Equal(e.Detail[0].Loc, []any{"body", "url"}) || e.Detail[0].Type != "value_error" {
			t.Errorf("%s: detail %+v, want one value_error at body.url", u, e.Detail)
		}
	}
	// Bounds, all violations at once.
	r := s.do(t, "POST", "/v1/webhooks", tok, map[string]any{"url": "", "events": []string{}, "description": strings.Repeat("d", 501)}).want(t, 422)
	for _, want := range []string{`"url"`, `"events"`, `"description"`} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("422 %s does not name %s", r.Body, want)
		}
	}
	var list []webhookOut
	s.do(t, "GET", "/v1/webhooks", tok, nil).want(t, 200).decode(t, &list)
	if len(list) != 0 {
		t.Fatalf("refused webhooks were created: %+v", list)
	}

	// Create: 201, Location, the secret once.
	var created webhookOut
	r = s.do(t, "POST", "/v1/webhooks", tok, map[string]any{"url": "https://hooks.example.com/bas", "events": []string{"invoicing.*", "crm.deal.won"},
		"description": strings.Repeat("d", 500)}).want(t, 201)
	r.decode(t, &created)
	if created.Secret == nil || !strings.HasPrefix(*created.Secret, "whsec_") || !created.Active {
		t.Fatalf("created = %+v; want active with a whsec_ secret", created)
	}
	if loc := r.Header.Get("Location"); !strings.HasSuffix(loc, "/v1/webhooks/"+created.ID) {
		t.Errorf("Location %q", loc)
	}
	var got webhookOut
	r = s.do(t, "GET", "/v1/webhooks/"+created.ID, tok, nil).want(t, 200)
	r.decode(t, &got)
	if got.Secret != nil || strings.Contains(string(r.Body), *created.Secret) {
		t.Errorf("GET shows the secret: %s", r.Body)
	}
	s.do(t, "PATCH", "/v1/webhooks/"+created.ID, tok, map[string]any{"url": "http://10.0.0.1/x"}).want(t, 422)
	s.do(t, "PATCH", "/v1/webhooks/"+created.ID, tok, map[string]any{"active": false, "events": []string{"*"}}).want(t, 200).decode(t, &got)
	if got.Active || !cmp.Equal(got.Events, []string{"*"}) || got.URL != "https://hooks.example.com/bas" {
		t.Errorf("patched = %+v", got)
	}
	var deliveries []map[string]any
	s.do(t, "GET", "/v1/webhooks/"+created.ID+"/deliveries", tok, nil).want(t, 200).decode(t, &deliveries)
	if len(deliveries) != 0 {
		t.Errorf("deliveries = %v, want none", deliveries)
	}

	// Another workspace sees none of it.
	other := s.devLogin(t, `{"tenant_id": "other", "email": "o@example.com"}`)
	s.do(t, "GET", "/v1/webhooks/"+created.ID, other.Token, nil).want(t, 404)
	s.do(t, "PATCH", "/v1/webhooks/"+created.ID, other.Token, map[string]any{"active": true}).want(t, 404)
	s.do(t, "GET", "/v1/webhooks/"+created.ID+"/deliveries", other.Token, nil).want(t, 404)
	s.do(t, "DELETE", "/v1/webhooks/"+created.ID, other.Token, nil).want(t, 404)
	s.do(t, "GET", "/v1/webhooks", other.Token, nil).want(t, 200).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("another workspace lists %+v", list)
	}
	// A member without automation.manage may not.
	member := s.devLogin(t, `{"email": "mem@example.com", "roles": ["member"]}`)
	s.do(t, "GET", "/v1/webhooks", member.Token, nil).want(t, 403)

	s.do(t, "DELETE", "/v1/webhooks/"+created.ID, tok, nil).want(t, 204)
	s.do(t, "DELETE", "/v1/webhooks/"+created.ID, tok, nil).want(t, 404)
}

func TestWebhookDeliveredFromAnEventNothingElseHears(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := newWebhookServer(t, bas.Options{WebhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Metrics: reg})
	admin := s.devLogin(t, `{}`)
	type hit struct {
		event, delivery, signature string
		body                       []byte
	}
	hits := make(chan hit, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hits <- hit{r.Header.Get("Bas-Event"), r.Header.Get("Bas-Delivery"), r.Header.Get("Bas-Signature"), body}
	}))
	defer recv.Close()
	var created webhookOut
	s.do(t, "POST", "/v1/webhooks", admin.Token, map[string]any{"url": recv.URL + "/hook", "events": []string{"acme.*"}}).want(t, 201).decode(t, &created)

	// No process listens to acme.order.created: the subscription does.
	var ev struct {
		EventID string `json:"event_id"`
	}
	s.do(t, "POST", "/v1/events", admin.Token, map[string]any{"name": "acme.order.created", "data": map[string]any{"number": "PO-1"}}).
		want(t, 202).decode(t, &ev)
	h := testwait.Recv(t, hits, "acme.order.created was delivered")
	var payload struct {
		ID, Tenant, Name string
		Data             map[string]any
	}
	if err := json.Unmarshal(h.body, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.ID != ev.EventID || payload.Name != "acme.order.created" || payload.Tenant != admin.TenantID || payload.Data["number"] != "PO-1" || h.event != payload.Name {
		t.Errorf("payload %s, event header %s; want event %s", h.body, h.event, ev.EventID)
	}
	ts, _, _ := strings.Cut(strings.TrimPrefix(h.signature, "t="), ",")
	if want := "t=" + ts + ",v1="; !strings.HasPrefix(h.signature, want) || h.signature != signFor(*created.Secret, ts, h.body) {
		t.Errorf("Bas-Signature %q does not verify", h.signature)
	}
	// Redeliver: a new delivery of the same event.
	var again map[string]any
	s.do(t, "POST", "/v1/webhooks/"+created.ID+"/deliveries/"+h.delivery+"/redeliver", admin.Token, nil).want(t, 202).decode(t, &again)
	if again["redelivery_of"] != h.delivery || again["event_id"] != ev.EventID {
		t.Errorf("redelivery %v", again)
	}
	h2 := testwait.Recv(t, hits, "the redelivery was delivered")
	if h2.delivery != again["id"] || string(h2.body) != string(h.body) {
		t.Errorf("redelivered %s %s, want delivery %v with the same body", h2.delivery, h2.body, again["id"])
	}
	s.do(t, "POST", "/v1/webhooks/"+created.ID+"/deliveries/whd_nope/redeliver", admin.Token, nil).want(t, 404)
	// An event it does not name is not delivered; the next one is.
	s.do(t, "POST", "/v1/events", admin.Token, map[string]any{"name": "other.thing"}).want(t, 202)
	s.do(t, "POST", "/v1/events", admin.Token, map[string]any{"name": "acme.order.paid"}).want(t, 202)
	if h3 := testwait.Recv(t, hits, "acme.order.paid was delivered"); h3.event != "acme.order.paid" {
		t.Errorf("delivered %s, want acme.order.paid only", h3.event)
	}
	// An app's event, written in the app's own transaction, reaches a
	// subscription to its namespace.
	s.do(t, "PATCH", "/v1/webhooks/"+created.ID, admin.Token, map[string]any{"events": []string{"crm.*"}}).want(t, 200)
	s.do(t, "POST", "/v1/crm/companies", admin.Token, map[string]any{"name": "Initech"}).want(t, 201)
	if h4 := testwait.Recv(t, hits, "crm.company.created was delivered"); h4.event != "crm.company.created" || !strings.Contains(string(h4.body), "Initech") {
		t.Errorf("delivered %s %s, want crm.company.created of Initech", h4.event, h4.body)
	}
	// The API's requests are counted by route pattern.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "bas_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var l []string
			for _, p := range m.GetLabel() {
				l = append(l, p.GetValue())
			}
			counted[strings.Join(l, " ")] = m.GetCounter().GetValue()
		}
	}
	for k, want := range map[string]float64{
		"POST /v1/webhooks 201": 1,
		"POST /v1/webhooks/:id/deliveries/:delivery_id/redeliver 202": 1,
		"POST /v1/webhooks/:id/deliveries/:delivery_id/redeliver 404": 1,
		"POST /v1/events 202": 3,
	} {
		if counted[k] != want {
			t.Errorf("bas_http_requests_total{%s} = %v, want %v (all: %v)", k, counted[k], want, counted)
		}
	}
}

func TestRequestSpansAreNamedByRoute(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	s := newWebhookServer(t, bas.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
	admin := s.devLogin(t, `{}`)
	r := s.do(t, "GET", "/v1/webhooks/whk_missing", admin.Token, nil).want(t, 404)
	var got map[string]string
	for _, sp := range exp.GetSpans() {
		if sp.Name != "GET /v1/webhooks/:id" {
			continue
		}
		got = map[string]string{}
		for _, a := range sp.Attributes {
			got[string(a.Key)] = a.Value.Emit()
		}
	}
	want := map[string]string{"http.request.method": "GET", "http.route": "/v1/webhooks/:id", "http.response.status_code": "404",
		"bas.request_id": r.Header.Get("X-Request-Id"), "bas.tenant": admin.TenantID}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("span of GET /v1/webhooks/:id (-want +got):\n%s", diff)
	}
}
