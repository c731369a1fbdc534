package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/julienschmidt/httprouter"
)

// Route is one entry of the route table.
type Route struct {
	// Method and Path (relative to the base path, httprouter syntax).
	Method string
	Path   string
	// App is the app the route belongs to; a key limited to other apps gets
	// 403. Empty for routes every caller may use (auth, health, apps).
	App string
	// Perm is the permission the caller needs; empty means any
	// authenticated caller.
	Perm string
	// Public routes need no authentication.
	Public bool
	// multipart routes (declared with Upload) take a multipart/form-data
	// body up to the upload limit; every other route takes JSON
	// (application/json, or no Content-Type) up to the JSON limit, and 415
	// for another type.
	multipart bool

	// The route's contract, read by the OpenAPI document (see openapi.go):
	// set with In, Out, List, Query, Upload, File and Errors beside the
	// declaration.
	contract

	fn handlerFunc
}

// Multipart reports whether the route takes a multipart/form-data upload
// (declared with Upload) rather than JSON.
func (r *Route) Multipart() bool { return r.multipart }

// handlerFunc handles one request; the error it returns is written by the
// one error writer.
type handlerFunc func(c *request) error

// handle declares an authenticated route of app needing perm; its contract
// is set on the route it returns.
func (h *Handler) handle(method, path, app, perm string, fn handlerFunc) *Route {
	rt := &Route{Method: method, Path: path, App: app, Perm: perm, fn: fn}
	h.routes = append(h.routes, rt)
	return rt
}

// handlePublic declares a route that needs no authentication.
func (h *Handler) handlePublic(method, path string, fn handlerFunc) *Route {
	rt := &Route{Method: method, Path: path, Public: true, fn: fn}
	h.routes = append(h.routes, rt)
	return rt
}

type ctxKey int

const requestInfoKey ctxKey = iota

// requestInfo is what serve keeps of a request: its id, and the caller's
// tenant a route notes for the access log line written after it. It holds
// the response's status recorder and the values of the headers serve sets,
// so a request costs one allocation for all of them.
type requestInfo struct {
	id, tenant string
	rec        statusRecorder
	headers    [2]string // X-Request-Id, Cache-Control
}

// serve is the outermost layer: request id, access log, panic recovery and
// the choice of router.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &requestInfo{id: r.Header.Get("X-Request-Id")}
	if info.id == "" || len(info.id) > 128 {
		info.id = newRequestID()
	}
	info.headers = [2]string{info.id, "no-store"}
	hdr := w.Header()
	hdr["X-Request-Id"] = info.headers[0:1:1]
	// Responses carry secrets (keys, sessions, invitation tokens) and a
	// tenant's data: no cache keeps any.
	hdr["Cache-Control"] = info.headers[1:2:2]
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey, info))
	rec := &info.rec
	*rec = statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		v := recover()
		if v != nil && v != http.ErrAbortHandler {
			h.recovered(rec, r, v)
		}
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "http",
			slog.String("request_id", info.id),
			slog.String("tenant", info.tenant),
			slog.String("method", r.Method),
			slog.String("path", logPath(r)),
			slog.Int("status", rec.status),
			slog.Int64("bytes", rec.bytes),
			slog.Duration("duration", time.Since(start)))
		if v == http.ErrAbortHandler {
			panic(v) // see recovered
		}
	}()
	rel := strings.TrimPrefix(r.URL.Path, h.opts.BasePath)
	if !endpointPath(rel) {
		writeDetail(rec, http.StatusNotFound, "no such endpoint")
		return
	}
	if len(h.statics) > 0 && h.matchesStatic(rel) {
		h.static.ServeHTTP(rec, r)
		return
	}
	h.main.ServeHTTP(rec, r)
}

// endpointPath reports whether path (relative to the base path) can name
// an endpoint: it has no empty segment (/v1/processes//start, a trailing
// slash) and no "." or ".." segment. Another is no endpoint's, though the
// router would match a parameter to an empty segment, and a mux in front
// would redirect it to its cleaned form, another endpoint.
func endpointPath(path string) bool {
	if len(path) > 1 && (strings.Contains(path, "//") || path[len(path)-1] == '/') {
		return false
	}
	if !strings.Contains(path, "/.") {
		return true
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// newRequestID is a new request id: "req_" and 24 random hex digits.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var id [4 + 2*len(b)]byte
	copy(id[:], "req_")
	hex.Encode(id[4:], b[:])
	return string(id[:])
}

// recovered answers 500 without any detail of the panic, and logs it.
func (h *Handler) recovered(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v) // net/http drops the connection unanswered, as the handler asked
	}
	h.log.Error("panic serving request", "request_id", requestID(r.Context()),
		"method", r.Method, "path", logPath(r), "panic", fmt.Sprint(v))
	if sr, ok := w.(*statusRecorder); ok && sr.wrote {
		return
	}
	writeDetail(w, http.StatusInternalServerError, "internal error")
}

// requestID is the id of the request ctx serves ("" outside one).
func requestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// wrap turns a route into an httprouter handle: authentication, app limit,
// permission, rate limit and idempotency, then the handler, then the error
// writer.
func (h *Handler) wrap(rt *Route) httprouter.Handle {
	pattern := rt.Path
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		ctx, done := h.ws.HTTPRequest(r.Context(), r.Method, pattern, requestID(r.Context()))
		if ctx != r.Context() { // a span was started
			r = r.WithContext(ctx)
		}
		c := &request{W: w, R: r, Params: ps, h: h, route: rt}
		defer func() {
			status, tenant := http.StatusInternalServerError, "" // a panic answers 500
			if sr, ok := w.(*statusRecorder); ok && sr.wrote {
				status = sr.status
			}
			if c.P != nil {
				tenant = c.P.Tenant
				if info, ok := r.Context().Value(requestInfoKey).(*requestInfo); ok {
					info.tenant = tenant
				}
			}
			done(status, tenant)
		}()
		if err := h.run(c); err != nil {
			h.writeError(c, err)
		}
	}
}

func (h *Handler) run(c *request) error {
	rt := c.route
	if err := checkContentType(c); err != nil {
		return err
	}
	if rt.Public && c.R.Method == http.MethodPost {
		if err := h.public.take(source(c.R)); err != nil {
			return err
		}
	}
	if rt.multipart {
		select {
		case h.uploads <- struct{}{}:
			defer func() { <-h.uploads }()
		default:
			return errors.Mark(&errs.RateLimit{RetryAfter: time.Second,
				Msg: "too many uploads are in progress; retry shortly"}, errs.Unavailable)
		}
	}
	if !rt.Public {
		p, err := h.authenticate(c.R)
		if err != nil {
			return err
		}
		c.P = p
		if rt.App != "" && !p.AllowsApp(rt.App) {
			return errs.Forbiddenf("key not allowed for app %s", rt.App)
		}
		if rt.Perm != "" && !p.Can(rt.Perm) {
			return errs.Forbiddenf("missing permission %s", rt.Perm)
		}
		// An authenticated caller's budget is its tenant's and person's, so
		// that the keys a person makes share one budget.
		if err := h.limiter.take(p.Tenant, p.UserID); err != nil {
			return err
		}
	}
	if vs := queryIDsTooLong(rt, c); len(vs) > 0 {
		return errs.Validation(vs...)
	}
	if c.R.Method == http.MethodPost && c.R.Header.Get("Idempotency-Key") != "" {
		return h.idempotent(c)
	}
	return rt.fn(c)
}

// queryIDsTooLong checks every id filter rt declares (a query parameter
// named *_id) against maxFilterID, as the run list's process_id is: an id
// the workspace made is far shorter, and a longer one is a mistake the
// caller should hear of rather than an empty page.
func queryIDsTooLong(rt *Route, c *request) []errs.Violation {
	if len(rt.query) == 0 || c.R.URL.RawQuery == "" {
		return nil
	}
	var vs []errs.Violation
	q := c.Query()
	for _, name := range rt.query {
		if isIDFilter(name) {
			vs = queryTooLong(vs, name, q.Get(name), maxFilterID)
		}
	}
	return vs
}

// isIDFilter reports whether a declared query parameter filters by an id.
func isIDFilter(name string) bool { return strings.HasSuffix(name, "_id") }

// authenticate reads the bearer token and resolves it to a principal.
func (h *Handler) authenticate(r *http.Request) (*access.Principal, error) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return nil, errs.Unauthenticatedf("not authenticated")
	}
	p, err := h.ws.Authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return nil, err
	}
	if p.DevSession && !h.opts.DevLogin {
		return nil, errs.Unauthenticatedf("this session was made by the development login, which this server does not offer; sign in again")
	}
	return p, nil
}

// statusRecorder remembers the status and size written.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status = code
		s.wrote = true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (a stream
// sets its own write deadlines).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush lets streaming handlers flush through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
