package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/httpapi/console"
)

// server is a workspace in memory with the API at /api and the console at
// /, wired as examples/server wires them.
type server struct {
	ws    *bas.Workspace
	srv   *httptest.Server
	clock *bas.FakeClock
}

func newServer(t testing.TB, dev bool) *server {
	t.Helper()
	clk := bas.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	api := httpapi.New(ws, httpapi.Options{DevLogin: dev})
	mux := http.NewServeMux()
	mux.Handle(api.BasePath()+"/", api)
	mux.Handle("/", console.New(api, console.Options{APIBase: api.BasePath(), DevLogin: dev}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &server{ws: ws, srv: srv, clock: clk}
}

// browser is an HTTP client with a cookie jar, as a browser would be.
func (s *server) browser(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (s *server) do(t testing.TB, c *http.Client, method, path, body string, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

// consoleHdr is what the console's script sends with every change.
var consoleHdr = []string{"X-Console", "1"}

func TestPagesAssetsAndHeaders(t *testing.T) {
	t.Parallel()
	s := newServer(t, false)
	c := s.browser(t)
	for _, test := range []struct {
		name, path string
		status     int
		ctype      string
	}{
		{"root", "/", 200, "text/html; charset=utf-8"},
		{"inbox", "/inbox", 200, "text/html; charset=utf-8"},
		{"run page", "/runs/run_123", 200, "text/html; charset=utf-8"},
		{"document page", "/documents/doc_1", 200, "text/html; charset=utf-8"},
		{"cockpit", "/cockpit", 200, "text/html; charset=utf-8"},
		{"crm board", "/crm", 200, "text/html; charset=utf-8"},
		{"invoices", "/invoices", 200, "text/html; charset=utf-8"},
		{"invoice page", "/invoices/inv_1", 200, "text/html; charset=utf-8"},
		{"boards", "/boards", 200, "text/html; charset=utf-8"},
		{"board page", "/boards/brd_1", 200, "text/html; charset=utf-8"},
		{"script", "/console/assets/app.js", 200, "text/javascript; charset=utf-8"},
		{"style", "/console/assets/app.css", 200, "text/css; charset=utf-8"},
		{"unknown page", "/nowhere", 404, "application/json"},
		{"unknown asset", "/console/assets/nope.js", 404, "application/json"},
		{"index as asset", "/console/assets/index.html", 404, "application/json"},
	} {
		t.Run(test.name, func(t *testing.T) {
			r := s.do(t, c, "GET", test.path, "")
			got := []string{http.StatusText(r.status), r.header.Get("Content-Type"), r.header.Get("Content-Security-Policy"), r.header.Get("X-Content-Type-Options")}
			want := []string{http.StatusText(test.status), test.ctype, console.ContentSecurityPolicy, "nosniff"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", test.path, diff)
			}
		})
	}
	page := s.do(t, c, "GET", "/", "")
	if bytes.Contains(page.body, []byte("<script>")) || bytes.Contains(page.body, []byte("style=")) || bytes.Contains(page.body, []byte("http")) {
		t.Errorf("the page has inline script or style, or a third-party origin:\n%s", page.body)
	}
	if r := s.do(t, c, "POST", "/inbox", "{}", consoleHdr...); r.status != 405 {
		t.Errorf("POST /inbox = %d, want 405", r.status)
	}
}

func TestDevLoginCookieAndProxy(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	c := s.browser(t)

	r := s.do(t, c, "GET", "/console/session", "")
	if diff := cmp.Diff(`{"signed_in":false,"dev_login":true,"me":null}`, strings.TrimSpace(string(r.body))); diff != "" {
		t.Errorf("signed-out session (-want +got):\n%s", diff)
	}
	if r := s.do(t, c, "GET", "/console/proxy/v1/auth/me", ""); r.status != 401 {
		t.Errorf("proxy without a cookie = %d, want 401", r.status)
	}
	// A sign-in without the console's header is refused (a cross-site form
	// cannot send it), and so is one from another origin.
	if r := s.do(t, c, "POST", "/console/session/dev-login", "{}"); r.status != 403 {
		t.Errorf("dev-login without X-Console = %d %s, want 403", r.status, r.body)
	}
	if r := s.do(t, c, "POST", "/console/session/dev-login", "{}", "X-Console", "1", "Origin", "https://evil.example"); r.status != 403 {
		t.Errorf("dev-login from another origin = %d, want 403", r.status)
	}

	r = s.do(t, c, "POST", "/console/session/dev-login", "{}", consoleHdr...)
	if r.status != 200 {
		t.Fatalf("dev-login = %d %s", r.status, r.body)
	}
	var me struct {
		UserID      string   `json:"user_id"`
		Permissions []string `json:"permissions"`
	}
	if err := json.Unmarshal(r.body, &me); err != nil || me.UserID != "usr_demo" || len(me.Permissions) == 0 {
		t.Errorf("dev-login answered %s (%v)", r.body, err)
	}
	if bytes.Contains(r.body, []byte("bass_")) {
		t.Errorf("the sign-in answer shows the token to the page: %s", r.body)
	}
	setCookie := r.header.Get("Set-Cookie")
	for _, part := range []string{console.CookieName + "=bass_", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(setCookie, part) {
			t.Errorf("Set-Cookie %q lacks %q", setCookie, part)
		}
	}

	// The proxy calls the API with the cookie's token.
	if r := s.do(t, c, "GET", "/console/proxy/v1/auth/me", ""); r.status != 200 || !bytes.Contains(r.body, []byte(`"usr_demo"`)) {
		t.Errorf("proxied me = %d %s", r.status, r.body)
	}
	body := `{"name":"Review","trigger":{"type":"manual"},"steps":[{"key":"check","type":"human_task","config":{"title":"Check it"}}]}`
	if r := s.do(t, c, "POST", "/console/proxy/v1/processes", body); r.status != 403 {
		t.Errorf("proxied POST without X-Console = %d, want 403", r.status)
	}
	if r := s.do(t, c, "POST", "/console/proxy/v1/processes", body, consoleHdr...); r.status != 201 {
		t.Errorf("proxied POST = %d %s", r.status, r.body)
	}
	// Only the API's own paths are proxied.
	if r := s.do(t, c, "GET", "/console/proxy/healthz", ""); r.status != 404 {
		t.Errorf("proxy outside /v1 = %d, want 404", r.status)
	}

	r = s.do(t, c, "GET", "/console/session", "")
	if !bytes.Contains(r.body, []byte(`"signed_in":true`)) {
		t.Errorf("session after sign-in: %s", r.body)
	}

	// Sign out ends the session at the API, not only in the browser.
	cookie := c.Jar.Cookies(mustURL(t, s.srv.URL))[0].Value
	if r := s.do(t, c, "POST", "/console/session/logout", "", consoleHdr...); r.status != 204 {
		t.Errorf("logout = %d", r.status)
	}
	if r := s.do(t, http.DefaultClient, "GET", "/api/v1/auth/me", "", "Authorization", "Bearer "+cookie); r.status != 401 {
		t.Errorf("the session token still works after sign-out: %d", r.status)
	}
	if r := s.do(t, c, "GET", "/console/proxy/v1/auth/me", ""); r.status != 401 {
		t.Errorf("proxy after sign-out = %d, want 401", r.status)
	}
}

func TestDevLoginOff(t *testing.T) {
	t.Parallel()
	s := newServer(t, false)
	c := s.browser(t)
	if r := s.do(t, c, "POST", "/console/session/dev-login", "{}", consoleHdr...); r.status != 404 {
		t.Errorf("dev-login when off = %d, want 404", r.status)
	}
	r := s.do(t, c, "GET", "/console/session", "")
	if !bytes.Contains(r.body, []byte(`"dev_login":false`)) {
		t.Errorf("session: %s", r.body)
	}
}

func TestAPIKeySignInAndPermissions(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	admin := s.browser(t)
	s.do(t, admin, "POST", "/console/session/dev-login", "{}", consoleHdr...)
	r := s.do(t, http.DefaultClient, "POST", "/api/v1/api-keys", `{"name":"viewer","roles":["viewer"]}`, "Authorization", "Bearer "+s.token(t, admin))
	if r.status != 201 {
		t.Fatalf("create key = %d %s", r.status, r.body)
	}
	var key struct{ Secret string }
	_ = json.Unmarshal(r.body, &key)

	for _, test := range []struct {
		name, body string
		status     int
	}{
		{"empty", `{}`, 422},
		{"blank", `{"key":"  "}`, 422},
		{"unknown key", `{"key":"bask_nope"}`, 401},
		{"too large", `{"key":"` + strings.Repeat("x", 16<<10) + `"}`, 413},
	} {
		t.Run(test.name, func(t *testing.T) {
			c := s.browser(t)
			if r := s.do(t, c, "POST", "/console/session/key", test.body, consoleHdr...); r.status != test.status {
				t.Errorf("key sign-in = %d %s, want %d", r.status, r.body, test.status)
			}
			if cs := c.Jar.Cookies(mustURL(t, s.srv.URL)); len(cs) != 0 {
				t.Errorf("a failed sign-in set a cookie: %v", cs)
			}
		})
	}

	viewer := s.browser(t)
	r = s.do(t, viewer, "POST", "/console/session/key", `{"key":"`+key.Secret+`"}`, consoleHdr...)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"processes.read"`)) || bytes.Contains(r.body, []byte(`"approvals.decide"`)) {
		t.Fatalf("viewer sign-in = %d %s", r.status, r.body)
	}
	// The console holds no more rights than the person: the API refuses.
	r = s.do(t, viewer, "POST", "/console/proxy/v1/approvals/apr_x/approve", `{}`, consoleHdr...)
	if r.status != 403 || !strings.Contains(string(r.body), "approvals.decide") {
		t.Errorf("viewer approve = %d %s, want 403", r.status, r.body)
	}
	// Signing out with a key forgets it in the browser; the key lives on.
	if r := s.do(t, viewer, "POST", "/console/session/logout", "", consoleHdr...); r.status != 204 {
		t.Errorf("logout = %d", r.status)
	}
	if r := s.do(t, http.DefaultClient, "GET", "/api/v1/auth/me", "", "Authorization", "Bearer "+key.Secret); r.status != 200 {
		t.Errorf("the key stopped working after a console sign-out: %d", r.status)
	}
}

func TestEmailAndCodeSignIn(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	admin := s.browser(t)
	s.do(t, admin, "POST", "/console/session/dev-login", "{}", consoleHdr...)

	c := s.browser(t)
	if r := s.do(t, c, "POST", "/console/session/email", `{"email":"demo@example.com"}`, consoleHdr...); r.status != 202 {
		t.Fatalf("email = %d %s", r.status, r.body)
	}
	r := s.do(t, http.DefaultClient, "GET", "/api/v1/outbox", "", "Authorization", "Bearer "+s.token(t, admin))
	var msgs []struct{ Body string }
	_ = json.Unmarshal(r.body, &msgs)
	if len(msgs) == 0 {
		t.Fatalf("no sign-in mail: %s", r.body)
	}
	code := ""
	for _, f := range strings.Fields(msgs[0].Body) {
		f = strings.Trim(f, ".:,")
		if len(f) == 8 && strings.Trim(f, "0123456789") == "" {
			code = f
		}
	}
	if r := s.do(t, c, "POST", "/console/session/code", `{"email":"demo@example.com","code":"00000000"}`, consoleHdr...); r.status != 401 {
		t.Errorf("wrong code = %d, want 401", r.status)
	}
	if r := s.do(t, c, "POST", "/console/session/code", `{"email":"demo@example.com","code":"`+code+`"}`, consoleHdr...); r.status != 200 {
		t.Fatalf("code sign-in = %d %s (mail %q)", r.status, r.body, msgs[0].Body)
	}
	if r := s.do(t, c, "GET", "/console/proxy/v1/auth/me", ""); r.status != 200 {
		t.Errorf("me after code sign-in = %d", r.status)
	}
}

func TestInlineFile(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	c := s.browser(t)
	s.do(t, c, "POST", "/console/session/dev-login", "{}", consoleHdr...)
	r := s.do(t, c, "POST", "/console/proxy/v1/docs/types/from-template", `{"template_id":"receipt"}`, consoleHdr...)
	var typ struct{ ID string }
	_ = json.Unmarshal(r.body, &typ)
	id := uploadText(t, s, c, typ.ID, "Merchant: Corner shop\nDate: 2026-01-02\nTotal: 12.50\n")
	for _, test := range []struct {
		name, query, disposition string
	}{
		{"download", "", "attachment"},
		{"inline", "?inline=1", "inline"},
	} {
		t.Run(test.name, func(t *testing.T) {
			r := s.do(t, c, "GET", "/console/proxy/v1/docs/documents/"+id+"/file"+test.query, "")
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Disposition"), test.disposition) || r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("file%s = %d, Content-Disposition %q", test.query, r.status, r.header.Get("Content-Disposition"))
			}
		})
	}
}

// uploadText uploads text as a document of type typeID through the proxy.
func uploadText(t testing.TB, s *server, c *http.Client, typeID, text string) string {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("type_id", typeID)
	fw, _ := w.CreateFormFile("file", "doc.txt")
	_, _ = fw.Write([]byte(text))
	_ = w.Close()
	req, _ := http.NewRequest("POST", s.srv.URL+"/console/proxy/v1/docs/documents", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-Console", "1")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var d struct{ ID string }
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 || json.Unmarshal(b, &d) != nil {
		t.Fatalf("upload = %d %s", res.StatusCode, b)
	}
	return d.ID
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// token is the API token in c's console cookie.
func (s *server) token(t testing.TB, c *http.Client) string {
	t.Helper()
	for _, ck := range c.Jar.Cookies(mustURL(t, s.srv.URL)) {
		if ck.Name == console.CookieName {
			return ck.Value
		}
	}
	t.Fatal("no console cookie")
	return ""
}

func TestProxyRefusesRoutesThatAnswerWithSecrets(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	c := s.browser(t)
	s.do(t, c, "POST", "/console/session/dev-login", "{}", consoleHdr...)
	for _, test := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/api-keys", `{"name":"x"}`, 403},
		{"GET", "/v1/api-keys", "", 200},
		{"POST", "/v1/invitations", `{"email":"a@example.com","roles":["member"]}`, 403},
		{"GET", "/v1/invitations", "", 200},
		{"POST", "/v1/invitations/basi_x/accept", `{}`, 403},
		{"POST", "/v1/webhooks", `{"url":"https://example.com/hook","events":["task.created"]}`, 403},
		{"GET", "/v1/outbox", "", 403},
		{"POST", "/v1/auth/dev-login", `{}`, 403},
		{"POST", "/v1/auth/code", `{}`, 403},
		{"POST", "/v1/auth/logout", ``, 403},
		{"GET", "/v1/auth/me", "", 200},
	} {
		t.Run(test.method+" "+test.path, func(t *testing.T) {
			r := s.do(t, c, test.method, "/console/proxy"+test.path, test.body, consoleHdr...)
			if r.status != test.status {
				t.Errorf("%s %s through the proxy = %d %s, want %d", test.method, test.path, r.status, r.body, test.status)
			}
		})
	}
	// Still signed in: the refused logout did nothing.
	if r := s.do(t, c, "GET", "/console/proxy/v1/auth/me", ""); r.status != 200 {
		t.Errorf("me = %d", r.status)
	}
}
