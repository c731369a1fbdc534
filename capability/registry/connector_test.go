package registry_test

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestWebhook(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	type seen struct {
		Call      capability.Call
		Idem      string
		Auth      string
		SignedOK  bool
		Capabilty string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			if r.Header.Get("Authorization") != "Bearer tok" {
				w.WriteHeader(http.StatusUnauthorized)
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		var c capability.Call
		_ = json.Unmarshal(body, &c)
		sig := strings.TrimPrefix(r.Header.Get("X-Bas-Signature"), "sha256=")
		want := registry.Sign(secret, r.Header.Get("X-Bas-Timestamp"), body)
		got <- seen{c, r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"),
			hmac.Equal([]byte(sig), []byte(want)), r.Header.Get("X-Bas-Capability")}
		var args struct{ Channel string }
		_ = json.Unmarshal(c.Args, &args)
		switch args.Channel {
		case "#ok":
			_, _ = w.Write([]byte(`{"message_id":"m-1"}`))
		case "#invalid":
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(`{"detail":"channel is archived"}`))
		case "#missing":
			w.WriteHeader(http.StatusNotFound)
		case "#slow-down":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "#down":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("upstream down"))
		case "#garbage":
			_, _ = w.Write([]byte("<html>"))
		case "#hang":
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)

	wh, err := registry.NewWebhook(registry.WebhookConfig{
		ID: "connector.ops-hook", Name: "Ops hook", URL: srv.URL + "/call", HealthURL: srv.URL + "/health",
		Capabilities: []string{"chat.message.send"}, Secret: secret,
		Header: http.Header{"Authorization": {"Bearer tok"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	reg := registry.New(registry.Config{Store: st, CallTimeout: 2 * time.Second})
	if err := reg.Register(wh); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(channel string) (json.RawMessage, error) {
		return reg.Call(ctx, call("ten_a", "chat.message.send", `{"channel":"`+channel+`","text":"hi"}`))
	}

	out, err := send("#ok")
	if err != nil || string(out) != `{"message_id":"m-1"}` {
		t.Fatalf("Call = %s, %v", out, err)
	}
	want := seen{call("ten_a", "chat.message.send", `{"channel":"#ok","text":"hi"}`), "run_1/step/1", "Bearer tok", true, "chat.message.send"}
	if diff := cmp.Diff(want, testwait.Recv(t, got, "the webhook received the call")); diff != "" {
		t.Errorf("the webhook received (-want +got):\n%s", diff)
	}

	for _, test := range []struct {
		channel string
		kind    error
		part    string
	}{
		{"#invalid", errs.Invalid, "answered 422: channel is archived"},
		{"#missing", errs.NotFound, "answered 404"},
		{"#slow-down", errs.RateLimited, "answered 429"},
		{"#down", errs.Unavailable, "answered 502: upstream down"},
		{"#garbage", nil, "not JSON"},
		{"#hang", capability.ErrTimeout, "did not answer chat.message.send within 2s"},
	} {
		_, err := send(test.channel)
		testwait.Recv(t, got, test.channel+": the webhook received the call")
		if err == nil || (test.kind != nil && !errors.Is(err, test.kind)) || !strings.Contains(err.Error(), test.part) {
			t.Errorf("%s: Call error = %v, want %v saying %q", test.channel, err, test.kind, test.part)
		}
		if test.channel == "#slow-down" {
			var rl *errs.RateLimit
			if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
				t.Errorf("retry after = %+v", rl)
			}
		}
	}

	conns := reg.Connections(ctx)
	if len(conns) != 1 || conns[0].Status != "connected" || conns[0].Kind != capability.KindConnector {
		t.Errorf("Connections = %+v", conns)
	}

	if _, err := registry.NewWebhook(registry.WebhookConfig{URL: "ftp://x", Capabilities: []string{"sms.send"}}); err == nil {
		t.Error("NewWebhook accepted an ftp URL")
	}
	if _, err := registry.NewWebhook(registry.WebhookConfig{URL: "https://example.com/hook"}); err == nil {
		t.Error("NewWebhook accepted no capabilities")
	}
	bad, err := registry.NewWebhook(registry.WebhookConfig{URL: srv.URL, HealthURL: srv.URL + "/health", Capabilities: []string{"sms.send"}})
	if err != nil {
		t.Fatal(err)
	}
	if h := bad.Health(ctx); h.Status != "failed" || h.Detail != "health check answered 401" {
		t.Errorf("Health without credentials = %+v", h)
	}
}
