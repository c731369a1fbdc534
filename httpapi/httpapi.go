// Package httpapi serves a workspace's /api/v1 surface as an http.Handler
// that mounts on any mux under a base path the host chooses.
//
// Every route is declared in one table with the app it belongs to and the
// permission it needs (see Route); authentication, the app limit of a key,
// the permission check, idempotency keys and rate limits are applied in one
// place for every route, so a new route cannot forget them.
//
// Conventions (api.md section 1): JSON bodies of at most 1 MiB, 422 with
// every violation at once, errors as {"detail": ...}, lists as JSON arrays
// paged with ?limit= and ?cursor= and the X-Next-Cursor header.
package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/jsonkeys"
	"github.com/julienschmidt/httprouter"
)

// Options configure New.
type Options struct {
	// BasePath is where the API is mounted. Defaults to "/api".
	BasePath string
	// Logger receives access logs and internal errors. Defaults to the
	// workspace's logger.
	Logger *slog.Logger
	// DevLogin enables POST /v1/auth/dev-login, which creates tenants and
	// admins on demand. Never enable it in production.
	DevLogin bool
	// MaxBodyBytes bounds JSON bodies. Defaults to 1 MiB.
	MaxBodyBytes int64
	// MaxUploadBytes bounds file uploads. Defaults to the workspace's
	// limit (bas.Options.MaxUploadBytes, 25 MiB unless set), which it
	// cannot raise.
	MaxUploadBytes int64
	// RateLimit is the number of requests a person may make per second
	// (with a burst of the same size), counted per tenant and person: the
	// sessions and API keys of one person share one budget. 0, the
	// default, turns it off.
	RateLimit float64
	// PublicRateLimit bounds the public POST routes (sign-in email and
	// code, invitation accept, dev login) per client address: requests a
	// minute, with a burst of the same size. Defaults to 60; a negative
	// value turns it off.
	PublicRateLimit float64
	// AddressRateLimit bounds sign-in emails and code tries per email
	// address, and accepts per invitation: requests an hour, with a burst
	// of the same size. Defaults to 10; a negative value turns it off.
	AddressRateLimit float64
	// MaxConcurrentUploads bounds the uploads the handler reads at once
	// (each may hold MaxUploadBytes and its extraction in memory); one
	// beyond is a 503 with Retry-After. Defaults to 4.
	MaxConcurrentUploads int
	// Failpoints are test hooks, empty (and free) unless built with the
	// failpoints tag.
	Failpoints Failpoints
	// MaxStreamsPerPerson bounds the GET /v1/stream a person (all their
	// sessions and keys) holds open at once; one more is a 429 with
	// Retry-After. Defaults to 16.
	MaxStreamsPerPerson int
	// StreamHeartbeat is how often GET /v1/stream sends a comment line
	// when no event comes, which keeps proxies from closing it and checks
	// that the caller's credential still works. Defaults to 15 seconds.
	StreamHeartbeat time.Duration
}

func (o Options) withDefaults(ws workspace) Options {
	if o.BasePath == "" {
		o.BasePath = "/api"
	}
	o.BasePath = "/" + strings.Trim(o.BasePath, "/")
	if o.BasePath == "/" {
		o.BasePath = ""
	}
	if o.Logger == nil {
		o.Logger = ws.Logger()
	}
	if o.PublicRateLimit == 0 {
		o.PublicRateLimit = 60
	}
	if o.AddressRateLimit == 0 {
		o.AddressRateLimit = 10
	}
	if o.MaxConcurrentUploads <= 0 {
		o.MaxConcurrentUploads = 4
	}
	if o.MaxStreamsPerPerson <= 0 {
		o.MaxStreamsPerPerson = 16
	}
	if o.StreamHeartbeat <= 0 {
		o.StreamHeartbeat = 15 * time.Second
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if max := ws.Docs().MaxUploadBytes(); o.MaxUploadBytes <= 0 || o.MaxUploadBytes > max {
		o.MaxUploadBytes = max
	}
	return o
}

// Handler is the API. It is safe for concurrent use.
type Handler struct {
	ws     workspace
	opts   Options
	log    *slog.Logger
	routes []*Route

	main    *httprouter.Router
	static  *httprouter.Router
	statics []*Route // routes served by static, matched before main

	schemas    sync.Map // reflect.Type -> *inputSchema
	keys       jsonkeys.Checker
	limiter    *limiter      // per tenant and person
	public     *limiter      // public POST routes, per client address
	address    *limiter      // sign-in per email address, accept per invitation
	uploads    chan struct{} // a slot per upload being served
	idemClaims *idemClaims   // the workspace's, shared by its Handlers
	idemFilter *idemFilter   // the workspace's; nil on a cluster node
	streams    streamSlots   // open GET /v1/stream per person

	docMu sync.Mutex
	doc   []byte // the OpenAPI document, built on first use

	responseBufs sync.Pool // buffers of responses being sealed (see appendSealed)
}

// New returns the API of ws.
func New(ws *bas.Workspace, opts Options) *Handler {
	w := newWorkspace(ws)
	opts = opts.withDefaults(w)
	idem := idemSharedOf(ws)
	h := &Handler{ws: w, opts: opts, log: opts.Logger, idemClaims: &idem.claims, idemFilter: idem.filter}
	h.uploads = make(chan struct{}, opts.MaxConcurrentUploads)
	h.limiter = newLimiter(opts.RateLimit, opts.RateLimit, ws.Clock(), "")
	h.public = newLimiter(opts.PublicRateLimit/60, opts.PublicRateLimit, ws.Clock(),
		"too many sign-in requests from this address; retry later")
	h.address = newLimiter(opts.AddressRateLimit/3600, opts.AddressRateLimit, ws.Clock(),
		"too many requests for this email address or invitation; retry later")
	h.registerRoutes()
	h.build()
	return h
}

// Routes returns the route table: every method and path (relative to the
// base path) with its app and permission.
func (h *Handler) Routes() []Route {
	out := make([]Route, len(h.routes))
	for i, r := range h.routes {
		out[i] = *r
	}
	return out
}

// BasePath returns the path the API is mounted under.
func (h *Handler) BasePath() string { return h.opts.BasePath }

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r)
}

// build puts each route in one of two routers. httprouter panics when a
// static segment and a :param share a position for one method
// ("/v1/processes/step-types" beside "/v1/processes/:id"), so such static
// routes go to a second router that the front handler tries first, by
// matching the request path against their patterns.
func (h *Handler) build() {
	h.docMu.Lock()
	h.doc = nil
	h.docMu.Unlock()
	h.main = newRouter(h)
	h.static = newRouter(h)
	for _, r := range h.routes {
		if h.shadowsParam(r) {
			h.statics = append(h.statics, r)
			h.static.Handle(r.Method, h.opts.BasePath+r.Path, h.wrap(r))
			continue
		}
		h.main.Handle(r.Method, h.opts.BasePath+r.Path, h.wrap(r))
	}
}

// shadowsParam reports whether r has a static segment where another route of
// the same method, matching r up to there, has a parameter.
func (h *Handler) shadowsParam(r *Route) bool {
	rs := segments(r.Path)
	for _, o := range h.routes {
		if o == r || o.Method != r.Method {
			continue
		}
		os := segments(o.Path)
		for i := 0; i < len(rs) && i < len(os); i++ {
			rp, op := isParam(rs[i]), isParam(os[i])
			if !rp && op {
				return true
			}
			if rp != op || (!rp && rs[i] != os[i]) {
				break
			}
		}
	}
	return false
}

// matchesStatic reports whether path (relative to the base) fits one of the
// static-router patterns.
func (h *Handler) matchesStatic(path string) bool {
	for _, r := range h.statics {
		if matchesPattern(r.Path, path) {
			return true
		}
	}
	return false
}

// matchesPattern reports whether path has pattern's segments, a parameter
// segment of pattern matching any one segment. It runs on every request, so
// it walks both strings in place instead of splitting them.
func matchesPattern(pattern, path string) bool {
	pattern, path = strings.Trim(pattern, "/"), strings.Trim(path, "/")
	for {
		rs, rrest, rmore := strings.Cut(pattern, "/")
		ps, prest, pmore := strings.Cut(path, "/")
		if !isParam(rs) && rs != ps {
			return false
		}
		if rmore != pmore {
			return false
		}
		if !rmore {
			return true
		}
		pattern, path = rrest, prest
	}
}

func segments(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }

func isParam(seg string) bool { return strings.HasPrefix(seg, ":") || strings.HasPrefix(seg, "*") }

func newRouter(h *Handler) *httprouter.Router {
	rt := httprouter.New()
	rt.RedirectTrailingSlash = false
	rt.RedirectFixedPath = false
	rt.HandleMethodNotAllowed = true
	rt.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeDetail(w, http.StatusNotFound, "no such endpoint")
	})
	rt.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeDetail(w, http.StatusMethodNotAllowed, "method not allowed")
	})
	rt.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
		h.recovered(w, r, v)
	}
	return rt
}
