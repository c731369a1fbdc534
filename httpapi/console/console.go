// Package console is a web console for the people in the loop: the inbox of
// human tasks, pending approvals and documents in review, runs and their
// timelines, processes, the document review, the cockpit, and read-mostly
// pages of the CRM (the pipeline board), invoices and boards.
//
// A Handler serves a small front end embedded with go:embed (HTML, CSS and
// plain JavaScript; no Node toolchain) on the same origin as the API. The
// host mounts it beside the API:
//
//	api := httpapi.New(ws, httpapi.Options{})
//	mux := http.NewServeMux()
//	mux.Handle(api.BasePath()+"/", api)
//	mux.Handle("/", console.New(api, console.Options{APIBase: api.BasePath()}))
//
// # The credential
//
// The console's own sign-in routes (development login, email and code, a
// pasted API key) obtain the person's API token and keep it in a cookie
// that is HttpOnly, SameSite=Strict, Path=/ and Secure over TLS: a script
// injected through a record's text cannot read it. The page never sees
// the token; it calls /console/proxy/v1/..., which the Handler forwards
// in-process to the API with the cookie's token as the bearer, so every
// call is made with the person's own rights and the API decides every
// permission. The console only hides what /v1/auth/me says the person may
// not do.
//
// Requests that change something (any method but GET and HEAD) must carry
// the header X-Console: 1, which a cross-site form cannot send, and an
// Origin, when present, must be the console's own: with the SameSite
// cookie that closes the door to cross-site request forgery.
//
// # Content-Security-Policy
//
// Every page and asset is served with a strict policy: scripts, styles,
// images, frames and connections from the console's own origin only, no
// inline script or style, no third-party origin. Every record field is put
// into the page as text (DOM textContent), never as markup.
package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// CookieName is the name of the cookie that holds the person's API token.
const CookieName = "bas_console"

// ContentSecurityPolicy is the policy every console page and asset is
// served with.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self'"

// Options configures a Handler.
type Options struct {
	// APIBase is the path the API is mounted under on the same origin.
	// Defaults to "/api".
	APIBase string
	// DevLogin offers the development login on the sign-in page; set it
	// when the API's development login is on (httpapi.Options.DevLogin).
	// Defaults to false.
	DevLogin bool
	// Logger receives errors the console meets. Defaults to slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.APIBase == "" {
		o.APIBase = "/api"
	}
	o.APIBase = "/" + strings.Trim(o.APIBase, "/")
	if o.APIBase == "/" {
		o.APIBase = ""
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Handler serves the console. Mount it at the root of the origin that
// serves the API (it answers every path the API does not).
type Handler struct {
	api    http.Handler
	opts   Options
	static fs.FS
	index  []byte
}

// New returns the console for api, the API handler (an *httpapi.Handler)
// mounted at opts.APIBase on the same origin.
func New(api http.Handler, opts Options) *Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		panic(err)
	}
	return &Handler{api: api, opts: opts.withDefaults(), static: static, index: index}
}

// isPage reports whether first, a path's first segment, is a page the
// front end routes itself; each answers with the page shell.
func isPage(first string) bool {
	switch first {
	case "", "inbox", "signin", "runs", "processes", "documents", "cockpit", "crm", "invoices", "boards":
		return true
	}
	return false
}

// ServeHTTP serves the console: its pages, its assets, its sign-in routes
// under /console/session and the API proxy under /console/proxy/v1/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/console/proxy/"):
		h.proxy(w, r, strings.TrimPrefix(p, "/console/proxy"))
		return
	case strings.HasPrefix(p, "/console/session"):
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("Cache-Control", "no-store")
		h.session(w, r, strings.TrimPrefix(p, "/console/session"))
		return
	}
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Frame-Options", "SAMEORIGIN")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		writeDetail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if name, ok := strings.CutPrefix(p, "/console/assets/"); ok {
		h.asset(w, r, name)
		return
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if !isPage(first) {
		writeDetail(w, http.StatusNotFound, "page not found")
		return
	}
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	_, _ = w.Write(h.index)
}

// asset serves one embedded file.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" || name == "index.html" || strings.Contains(name, "..") {
		writeDetail(w, http.StatusNotFound, "asset not found")
		return
	}
	b, err := fs.ReadFile(h.static, name)
	if err != nil {
		writeDetail(w, http.StatusNotFound, "asset not found")
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// sameOrigin refuses changing requests without the console's header or
// from another origin.
func sameOrigin(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	if r.Header.Get("X-Console") != "1" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return true
}

// token is the person's API token from the cookie, "" when signed out.
func token(r *http.Request) string {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// mintsSecret reports whether a route answers with a credential or a
// secret (sign-in routes, new API keys, invitations, webhook secrets, the
// outbox that holds sign-in codes). The proxy refuses them, so that a
// script in the page never holds a credential, not even a new one; the
// console signs in through its own session routes.
func mintsSecret(method, p string) bool {
	switch {
	case strings.HasPrefix(p, "/v1/auth/"):
		return p != "/v1/auth/me"
	case p == "/v1/outbox":
		return true
	case method == http.MethodPost:
		return p == "/v1/api-keys" || p == "/v1/invitations" || p == "/v1/webhooks" ||
			strings.HasSuffix(p, "/accept") || strings.HasSuffix(p, "/redeliver")
	}
	return false
}

// proxy forwards /console/proxy/v1/... to the API with the cookie's token.
// GET .../file?inline=1 answers a PDF or a text file inline, so that the
// browser shows it beside the document's fields.
func (h *Handler) proxy(w http.ResponseWriter, r *http.Request, rest string) {
	if !strings.HasPrefix(rest, "/v1/") {
		writeDetail(w, http.StatusNotFound, "not found")
		return
	}
	if !sameOrigin(r) {
		writeDetail(w, http.StatusForbidden, "cross-site request refused")
		return
	}
	if mintsSecret(r.Method, rest) {
		writeDetail(w, http.StatusForbidden, "the console does not pass on routes that answer with a secret; call the API with a key")
		return
	}
	tok := token(r)
	if tok == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeDetail(w, http.StatusUnauthorized, "not authenticated")
		return
	}
	q := r.URL.Query()
	inline := q.Get("inline") == "1" && strings.HasSuffix(rest, "/file")
	q.Del("inline")
	out := r.Clone(r.Context())
	out.URL = &url.URL{Path: h.opts.APIBase + rest, RawQuery: q.Encode()}
	out.RequestURI = out.URL.RequestURI()
	out.Header = http.Header{}
	// Only these request headers go on to the API (never the cookie).
	for _, k := range [...]string{"Content-Type", "Accept", "Idempotency-Key", "X-Request-Id", "Last-Event-ID"} {
		if v := r.Header.Values(k); len(v) > 0 {
			out.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	out.Header.Set("Authorization", "Bearer "+tok)
	var dst http.ResponseWriter = w
	if inline {
		dst = &inlineWriter{ResponseWriter: w}
	}
	h.api.ServeHTTP(dst, out)
}

// inlineWriter turns an attachment into an inline answer for the file
// types a browser shows safely beside the page (PDF, plain text, CSV).
type inlineWriter struct {
	http.ResponseWriter
	done bool
}

func (iw *inlineWriter) WriteHeader(status int) {
	if !iw.done {
		iw.done = true
		hd := iw.Header()
		ct, _, _ := mime.ParseMediaType(hd.Get("Content-Type"))
		if status == http.StatusOK && (ct == "application/pdf" || ct == "text/plain" || ct == "text/csv") {
			hd.Set("Content-Disposition", "inline")
			if ct == "text/csv" {
				hd.Set("Content-Type", "text/plain; charset=utf-8")
			}
		}
	}
	iw.ResponseWriter.WriteHeader(status)
}

func (iw *inlineWriter) Write(b []byte) (int, error) {
	if !iw.done {
		iw.WriteHeader(http.StatusOK)
	}
	return iw.ResponseWriter.Write(b)
}

// apiResponse is an in-process API answer.
type apiResponse struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (a *apiResponse) Header() http.Header { return a.header }
func (a *apiResponse) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(b)
}
func (a *apiResponse) WriteHeader(s int) {
	if a.status == 0 {
		a.status = s
	}
}

// call makes one API request in-process with tok as the bearer ("" for
// public routes).
func (h *Handler) call(ctx context.Context, method, p, tok string, body []byte) *apiResponse {
	r, _ := http.NewRequestWithContext(ctx, method, h.opts.APIBase+p, bytes.NewReader(body))
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	r.RemoteAddr = "127.0.0.1:0"
	a := &apiResponse{header: http.Header{}}
	h.api.ServeHTTP(a, r)
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a
}

// relay writes an API answer back to the browser as it came.
func relay(w http.ResponseWriter, a *apiResponse) {
	if ct := a.header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if ra := a.header.Get("Retry-After"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body.Bytes())
}

// sessionState is the answer of GET /console/session.
type sessionState struct {
	SignedIn bool            `json:"signed_in"`
	DevLogin bool            `json:"dev_login"`
	Me       json.RawMessage `json:"me"`
}

// maxSessionBody bounds the sign-in bodies.
const maxSessionBody = 16 << 10

// session serves the console's sign-in routes:
//
//	GET  /console/session           {signed_in, dev_login, me}
//	POST /console/session/dev-login DevLoginIn   -> me, sets the cookie
//	POST /console/session/email     {email}      -> the API's 202
//	POST /console/session/code      {email, code} -> me, sets the cookie
//	POST /console/session/key       {key}        -> me, sets the cookie
//	POST /console/session/logout                 -> 204, clears the cookie
func (h *Handler) session(w http.ResponseWriter, r *http.Request, rest string) {
	ctx := r.Context()
	if rest == "" || rest == "/" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			writeDetail(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		st := sessionState{DevLogin: h.opts.DevLogin, Me: json.RawMessage("null")}
		if tok := token(r); tok != "" {
			a := h.call(ctx, http.MethodGet, "/v1/auth/me", tok, nil)
			if a.status == http.StatusOK {
				st.SignedIn, st.Me = true, a.body.Bytes()
			} else if a.status == http.StatusUnauthorized {
				clearCookie(w, r)
			}
		}
		writeJSON(w, http.StatusOK, st)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeDetail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if !sameOrigin(r) {
		writeDetail(w, http.StatusForbidden, "cross-site request refused")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSessionBody+1))
	if err != nil || len(body) > maxSessionBody {
		writeDetail(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	switch rest {
	case "/dev-login":
		if !h.opts.DevLogin {
			writeDetail(w, http.StatusNotFound, "development login is off")
			return
		}
		h.signIn(w, r, h.call(ctx, http.MethodPost, "/v1/auth/dev-login", "", body))
	case "/email":
		relay(w, h.call(ctx, http.MethodPost, "/v1/auth/email", "", body))
	case "/code":
		h.signIn(w, r, h.call(ctx, http.MethodPost, "/v1/auth/code", "", body))
	case "/key":
		var in struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(body, &in); err != nil || strings.TrimSpace(in.Key) == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{
				"loc": []string{"body", "key"}, "msg": "paste an API key", "type": "missing"}}})
			return
		}
		key := strings.TrimSpace(in.Key)
		a := h.call(ctx, http.MethodGet, "/v1/auth/me", key, nil)
		if a.status != http.StatusOK {
			relay(w, a)
			return
		}
		setCookie(w, r, key, time.Time{})
		relay(w, a)
	case "/logout":
		if tok := token(r); tok != "" {
			// A key answers 409 (keys are revoked, not logged out); the
			// cookie goes either way.
			h.call(ctx, http.MethodPost, "/v1/auth/logout", tok, nil)
		}
		clearCookie(w, r)
		w.WriteHeader(http.StatusNoContent)
	default:
		writeDetail(w, http.StatusNotFound, "not found")
	}
}

// signIn turns a session answer of the API into the cookie and answers
// with the person (GET /v1/auth/me); any other answer is relayed.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request, a *apiResponse) {
	if a.status != http.StatusCreated {
		relay(w, a)
		return
	}
	var s struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(a.body.Bytes(), &s); err != nil || s.Token == "" {
		h.opts.Logger.Error("console: session answer without a token", "err", err)
		writeDetail(w, http.StatusInternalServerError, "internal error")
		return
	}
	setCookie(w, r, s.Token, s.ExpiresAt)
	relay(w, h.call(r.Context(), http.MethodGet, "/v1/auth/me", s.Token, nil))
}

func setCookie(w http.ResponseWriter, r *http.Request, tok string, expires time.Time) {
	c := &http.Cookie{Name: CookieName, Value: tok, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if !expires.IsZero() {
		c.Expires = expires
	}
	http.SetCookie(w, c)
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeDetail(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, map[string]string{"detail": detail})
}
