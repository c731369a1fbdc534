package httpapi_test

// Test helpers any httpapi test may use: a workspace in memory behind a
// real HTTP server, requests, development login and API keys.
//
//	s := newTestServer(t, httpapi.Options{DevLogin: true})
//	admin := s.devLogin(t, `{}`)                       // the demo admin
//	key := s.newKey(t, admin.Token, `{"name": "ci", "apps": ["docs"]}`)
//	r := s.do(t, "GET", "/v1/processes", key.Secret, nil)
//	r.want(t, 403)

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
)

// testStart is the time the fake clock of every test server starts at.
var testStart = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// testServer is a workspace on an in-memory Badger store with a fake clock,
// served by httpapi over a real HTTP server. Every log line the workspace
// and the handler write is kept in logs.
type testServer struct {
	ws    *bas.Workspace
	h     *httpapi.Handler
	srv   *httptest.Server
	clock *bas.FakeClock
	logs  *logBuffer
}

// newTestServer starts a test server; opts are the handler's options (set
// DevLogin for POST /v1/auth/dev-login). Everything stops when t ends.
func newTestServer(t testing.TB, opts httpapi.Options) *testServer {
	t.Helper()
	return newTestServerWith(t, opts, nil)
}

// newTestServerWith is newTestServer that lets before change the handler
// (HandleForTest) before it serves.
func newTestServerWith(t testing.TB, opts httpapi.Options, before func(*httpapi.Handler)) *testServer {
	t.Helper()
	logs := &logBuffer{}
	clk := bas.NewFakeClock(testStart)
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true, Clock: clk, WebhookAllow: loopbackOnly,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, opts)
	if before != nil {
		before(h)
	}
	srv := httptest.NewServer(conform(t, h))
	t.Cleanup(srv.Close)
	return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: logs}
}

// testResponse is a finished response with its body read.
type testResponse struct {
	method, path string
	Status       int
	Header       http.Header
	Body         []byte
}

// want fails the test unless the status is status.
func (r *testResponse) want(t testing.TB, status int) *testResponse {
	t.Helper()
	if r.Status != status {
		body := r.Body
		if len(body) > 800 {
			body = append(body[:800:800], "..."...)
		}
		t.Fatalf("%s %s: status %d, want %d: %s", r.method, r.path, r.Status, status, body)
	}
	return r
}

// decode decodes the JSON body into v.
func (r *testResponse) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s %s: decode %s: %v", r.method, r.path, r.Body, err)
	}
}

// detail returns the "detail" of an error body that carries a string.
func (r *testResponse) detail(t testing.TB) string {
	t.Helper()
	var e struct{ Detail string }
	r.decode(t, &e)
	return e.Detail
}

// do sends a request to path (below the base path, e.g. "/v1/members")
// with token as bearer (none when empty). body is nil (none), a string or
// []byte (sent as is) or any other value (sent as JSON). header holds
// name, value pairs.
func (s *testServer) do(t testing.TB, method, path, token string, body any, header ...string) *testResponse {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.srv.URL+s.h.BasePath()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &testResponse{method: method, path: path, Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// testSession is a session as dev-login, code sign-in and accept return it.
type testSession struct {
	Token    string   `json:"token"`
	TenantID string   `json:"tenant_id"`
	UserID   string   `json:"user_id"`
	Email    string   `json:"email"`
	Roles    []string `json:"roles"`
	Apps     []string `json:"apps"`
}

// devLogin signs in with POST /v1/auth/dev-login (the server needs
// Options.DevLogin); body is a DevLoginIn, `{}` for the demo admin.
func (s *testServer) devLogin(t testing.TB, body string) testSession {
	t.Helper()
	var sess testSession
	s.do(t, "POST", "/v1/auth/dev-login", "", body).want(t, http.StatusCreated).decode(t, &sess)
	return sess
}

// testKey is a new API key.
type testKey struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	Prefix string `json:"prefix"`
	Status string `json:"status"`
}

// newKey makes an API key with token's rights; body is an ApiKeyIn.
func (s *testServer) newKey(t testing.TB, token, body string) testKey {
	t.Helper()
	var k testKey
	s.do(t, "POST", "/v1/api-keys", token, body).want(t, http.StatusCreated).decode(t, &k)
	return k
}

// logBuffer collects log output from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything logged so far.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// loopbackOnly lets tests' webhooks reach receivers on this host.
var loopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
