package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestOpenAPIGolden checks GET /api/v1/openapi.json, served without
// authentication, against testdata/openapi.json (go test -run
// TestOpenAPIGolden -update rewrites it after a route changes). The server
// has DevLogin on, so the golden document, and the client generated from
// it, has every route.
func TestOpenAPIGolden(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	r := s.do(t, "GET", "/v1/openapi.json", "", nil).want(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	golden := filepath.Join("testdata", "openapi.json")
	if *update {
		if err := os.WriteFile(golden, r.Body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if d := cmp.Diff(string(want), string(r.Body)); d != "" {
		t.Errorf("document differs from %s (-want +got); run with -update if the change is meant:\n%s", golden, d)
	}
}

// TestOpenAPIValid loads the document with kin-openapi and validates it as
// OpenAPI 3.1.
func TestOpenAPIValid(t *testing.T) {
	s := newTestServer(t, httpapi.Options{})
	doc := loadOpenAPI(t, s.h.OpenAPI())
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if n := len(doc.Paths.Map()); n < 90 {
		t.Errorf("%d paths, want the whole surface", n)
	}
}

// TestOpenAPIEveryRoute checks that every route of the table is in the
// document with a success response and the errors its declaration implies:
// a route added without In/Out/List beside it fails here.
func TestOpenAPIEveryRoute(t *testing.T) {
	s := newTestServer(t, httpapi.Options{})
	doc := loadOpenAPI(t, s.h.OpenAPI())
	ids := map[string]bool{}
	for _, rt := range s.h.Routes() {
		path := regexp.MustCompile(`:(\w+)`).ReplaceAllString(rt.Path, "{$1}")
		op := doc.Paths.Find(path).GetOperation(rt.Method)
		if op == nil {
			t.Errorf("%s %s: not in the document", rt.Method, rt.Path)
			continue
		}
		if ids[op.OperationID] {
			t.Errorf("%s %s: operationId %q used twice", rt.Method, rt.Path, op.OperationID)
		}
		ids[op.OperationID] = true
		var got []string
		for code := range op.Responses.Map() {
			got = append(got, code)
		}
		has := func(code string) bool { return op.Responses.Value(code) != nil }
		if !has("200") && !has("201") && !has("202") && !has("204") {
			t.Errorf("%s %s: no success response declared (add .Out, .List or .File to the route)", rt.Method, rt.Path)
		}
		var want []string
		if !rt.Public {
			want = append(want, "401", "403", "429")
			if op.Security != nil && len(*op.Security) == 0 {
				t.Errorf("%s %s: public security on an authenticated route", rt.Method, rt.Path)
			}
		}
		if strings.Contains(rt.Path, ":") {
			want = append(want, "404")
		}
		if rt.Method == "POST" {
			want = append(want, "409", "422")
			if !hasParam(op, "Idempotency-Key") {
				t.Errorf("%s %s: no Idempotency-Key parameter", rt.Method, rt.Path)
			}
		}
		if op.RequestBody != nil && op.RequestBody.Value.Content.Get("application/json") != nil {
			want = append(want, "413", "415", "422")
		}
		for _, code := range want {
			if !has(code) {
				t.Errorf("%s %s: %s not declared (declared %v)", rt.Method, rt.Path, code, got)
			}
		}
		if has("429") && op.Responses.Value("429").Value.Headers["Retry-After"] == nil {
			t.Errorf("%s %s: 429 without Retry-After", rt.Method, rt.Path)
		}
		if hasParam(op, "cursor") && op.Responses.Value("200").Value.Headers["X-Next-Cursor"] == nil {
			t.Errorf("%s %s: a list without X-Next-Cursor", rt.Method, rt.Path)
		}
	}
}

func hasParam(op *openapi3.Operation, name string) bool {
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.Name == name {
			return true
		}
	}
	return false
}

// TestOpenAPIConformanceCatchesUndeclared checks the conformance check
// itself: a status or a body the document does not declare is reported.
func TestOpenAPIConformanceCatchesUndeclared(t *testing.T) {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	doc := loadOpenAPI(t, s.h.OpenAPI())
	c := &conformance{doc: doc, raw: s.h.OpenAPI(), routes: openAPIRoutes(doc)}
	req, _ := http.NewRequest("GET", "/api/v1/crm/companies/co_1", nil)
	admin := s.devLogin(t, `{}`)
	company := s.do(t, "POST", "/v1/crm/companies", admin.Token, `{"name": "Acme"}`).want(t, http.StatusCreated).Body
	for _, tc := range []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"declared", 200, string(company), true},
		{"undeclared status", 418, `{"detail": "teapot"}`, false},
		{"body of the wrong shape", 200, `{"id": 7}`, false},
		{"error without detail", 404, `{"error": "gone"}`, false},
		{"a required field missing", 200, `{"name": "Acme"}`, false},
		{"null where the field is not nullable", 200, `{"id": "co_1", "name": null}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/json"}}
			err := c.check(req, tc.status, h, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Errorf("check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// openAPIDocs caches the checks of documents by route table: every test
// server checks its responses against its handler's document.
var openAPIDocs sync.Map // [32]byte -> *conformance

func loadOpenAPI(t *testing.T, raw []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("OpenAPI document is not valid: %v", err)
	}
	return doc
}

// conformance checks responses against an OpenAPI document: the status
// must be declared for the operation (and its headers match, by
// kin-openapi), the content type be one the response declares, and the body
// match the declared schema, by a JSON Schema 2020-12 validator reading the
// document itself (kin-openapi falls back to its OpenAPI 3.0 rules for
// schemas with references).
type conformance struct {
	doc    *openapi3.T
	raw    []byte
	routes []openAPIRoute

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by JSON pointer into the document
	comp    *jsonschema.Compiler
}

// schemaAt compiles the schema at pointer (a fragment, "/paths/...") of
// the document, once.
func (c *conformance) schemaAt(pointer string) (*jsonschema.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.schemas[pointer]; ok {
		return s, nil
	}
	if c.comp == nil {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.raw))
		if err != nil {
			return nil, err
		}
		c.comp = jsonschema.NewCompiler()
		c.comp.DefaultDraft(jsonschema.Draft2020)
		if err := c.comp.AddResource("openapi.json", doc); err != nil {
			return nil, err
		}
		c.schemas = map[string]*jsonschema.Schema{}
	}
	s, err := c.comp.Compile("openapi.json#" + pointer)
	if err != nil {
		return nil, err
	}
	c.schemas[pointer] = s
	return s, nil
}

// checkBody checks the content type and body of a response of status to
// the operation rt against what the document declares.
func (c *conformance) checkBody(rt *routers.Route, status int, header http.Header, body []byte) error {
	code := strconv.Itoa(status)
	ref := rt.Operation.Responses.Value(code)
	if ref == nil {
		return fmt.Errorf("status %d not declared", status)
	}
	pointer := "/paths/" + escapePointer(rt.Path) + "/" + strings.ToLower(rt.Method) + "/responses/" + code
	if ref.Ref != "" {
		pointer = strings.TrimPrefix(ref.Ref, "#")
	}
	content := ref.Value.Content
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("a body where the document declares none")
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if content.Get(mt) == nil {
		return fmt.Errorf("content type %q not declared", header.Get("Content-Type"))
	}
	if mt != "application/json" {
		return nil
	}
	s, err := c.schemaAt(pointer + "/content/" + escapePointer("application/json") + "/schema")
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return s.Validate(v)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

type openAPIRoute struct {
	method string
	re     *regexp.Regexp
	names  []string
	route  *routers.Route
}

func openAPIRoutes(doc *openapi3.T) []openAPIRoute {
	base := doc.Servers[0].URL
	var out []openAPIRoute
	for path, item := range doc.Paths.Map() {
		var names []string
		segs := strings.Split(path, "/")
		for i, seg := range segs {
			if strings.HasPrefix(seg, "{") {
				names = append(names, strings.Trim(seg, "{}"))
				segs[i] = `([^/]+)`
				continue
			}
			segs[i] = regexp.QuoteMeta(seg)
		}
		pat := strings.Join(segs, "/")
		re := regexp.MustCompile("^" + strings.TrimSuffix(base, "/") + pat + "$")
		for method, op := range item.Operations() {
			out = append(out, openAPIRoute{method: method, re: re, names: names, route: &routers.Route{
				Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}})
		}
	}
	// Static segments win over parameters ("/v1/use-cases/register" over
	// "/v1/use-cases/{id}"), as in the server's router.
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].names) < len(out[j].names) })
	return out
}

// check validates one response to req.
func (c *conformance) check(req *http.Request, status int, header http.Header, body []byte) error {
	for _, rt := range c.routes {
		if rt.method != req.Method {
			continue
		}
		m := rt.re.FindStringSubmatch(req.URL.Path)
		if m == nil {
			continue
		}
		if !declaresSuccess(rt.route.Operation) {
			return nil // a route a test declared (HandleForTest), not part of the API
		}
		params := map[string]string{}
		for i, n := range rt.names {
			params[n] = m[i+1]
		}
		if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: rt.route},
			Status:                 status,
			Header:                 header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
				ExcludeResponseBody: true},
		}); err != nil {
			return err
		}
		return c.checkBody(rt.route, status, header, body)
	}
	return nil // not an operation of the document (a 404 or 405 of the router)
}

func declaresSuccess(op *openapi3.Operation) bool {
	for code := range op.Responses.Map() {
		if strings.HasPrefix(code, "2") {
			return true
		}
	}
	return false
}

// conformanceOf returns the check of h's document, loaded once per route
// table: handlers declaring the same routes (by method, path and
// publicness) in one test binary have the same document, so it is built
// once for them.
func conformanceOf(h *httpapi.Handler) (*conformance, error) {
	var key strings.Builder
	for _, rt := range h.Routes() {
		fmt.Fprintf(&key, "%s %s %v\n", rt.Method, rt.Path, rt.Public)
	}
	sum := sha256.Sum256([]byte(key.String()))
	if c, ok := openAPIDocs.Load(sum); ok {
		return c.(*conformance), nil
	}
	raw := h.OpenAPI()
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("invalid OpenAPI document: %w", err)
	}
	c, _ := openAPIDocs.LoadOrStore(sum, &conformance{doc: doc, raw: raw, routes: openAPIRoutes(doc)})
	return c.(*conformance), nil
}

// conform wraps h so that every response it gives is checked against h's
// OpenAPI document: an undeclared status or a body that does not match the
// declared schema fails t. Benchmarks measure the handler alone.
func conform(t testing.TB, h *httpapi.Handler) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		c, err := conformanceOf(h)
		if err != nil {
			t.Errorf("OpenAPI document: %v", err)
			return
		}
		if err := c.check(r, rec.status, w.Header(), rec.body.Bytes()); err != nil {
			body := rec.body.String()
			if len(body) > 600 {
				body = body[:600] + "..."
			}
			t.Errorf("%s %s: response %d does not conform to the OpenAPI document: %v\nbody: %s",
				r.Method, r.URL.Path, rec.status, err, body)
		}
	})
}

// teeWriter keeps a copy of the status and body written.
type teeWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.wrote = true
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Flush lets streaming responses through.
func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// The OpenAPI document describes every route of the handler; it is also
// served, without authentication, at GET {base}/v1/openapi.json.
func ExampleHandler_OpenAPI() {
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.Close()
	h := httpapi.New(ws, httpapi.Options{})
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			OperationID string   `json:"operationId"`
			Tags        []string `json:"tags"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(h.OpenAPI(), &doc); err != nil {
		fmt.Println(err)
		return
	}
	op := doc.Paths["/v1/crm/companies/{id}"]["get"]
	fmt.Println(doc.OpenAPI, op.OperationID, op.Tags)
	// Output: 3.1.0 companyGet [crm]
}

// BenchmarkOpenAPIBuild measures generating the document from the route
// table (done once per handler, on the first request for it).
func BenchmarkOpenAPIBuild(b *testing.B) {
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	h := httpapi.New(ws, httpapi.Options{})
	for b.Loop() {
		h.BuildOpenAPIForTest()
	}
}
