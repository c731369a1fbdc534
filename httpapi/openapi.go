package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/bas-platform/bas/internal/schema"
	invopop "github.com/invopop/jsonschema"
)

// The OpenAPI 3.1 document of /api/v1 is generated from the route table:
// each route's method, path, app and permission, and the contract declared
// beside it (h.handle(...).In(T{}).Out(201, U{})), whose Go types are the
// ones the handler decodes and encodes. Request schemas are the schemas
// Ctx.Decode validates with (schema.Reflect, opened unless the type is
// strict); response schemas are reflected the same way from the types the
// handler writes, then made to say what encoding/json writes (see
// nullable). Error responses follow from the route: authenticated routes
// can answer 401, 403, 429 and 503; a path with parameters 404; a change
// (POST, PUT, PATCH) 409 and 422 (a POST's Idempotency-Key among the
// reasons); a DELETE 409 (the resource is in use); a body 400 (it broke
// off), 413, 415 and 422; an upload 503 (too many at once); a public POST
// 429; a list or a query 422. Route.Errors adds what a handler gives beyond
// those.

// maxPage is the largest ?limit= of a list (request.Page).
const maxPage = 200

// contract is what a route takes and answers, declared beside it.
type contract struct {
	in     any        // a value of the JSON request body's type
	upload string     // the multipart form field of an uploaded file
	fields []string   // the other (text) fields of the form
	outs   []response // the success responses
	items  any        // a value of a paged list's item type
	query  []string   // query parameters besides limit and cursor
	errors []int      // error statuses beyond the derived ones
}

// response is one declared success response.
type response struct {
	status      int
	body        any    // nil: no body (or a file, see contentType)
	contentType string // set for a file response
}

// In declares the JSON request body: v is a value of the type the handler
// decodes (Ctx.Decode), e.g. docs.DocTypeIn{}.
func (r *Route) In(v any) *Route {
	r.in = v
	return r
}

// Out declares a success response with status and a JSON body of v's type
// (nil for none, as 204).
func (r *Route) Out(status int, v any) *Route {
	r.outs = append(r.outs, response{status: status, body: v})
	return r
}

// List declares a paged list (Ctx.Page, Ctx.List): 200 with a JSON array of
// item's type, the limit and cursor parameters and the X-Next-Cursor header.
func (r *Route) List(item any) *Route {
	r.items = item
	return r
}

// Query declares query parameters (strings) the handler reads, besides
// limit and cursor.
func (r *Route) Query(names ...string) *Route {
	r.query = append(r.query, names...)
	return r
}

// Upload declares a multipart/form-data request carrying a file in field and
// the text fields named by fields; the route then takes that body kind (up
// to the upload limit) instead of JSON.
func (r *Route) Upload(field string, fields ...string) *Route {
	r.upload, r.fields, r.multipart = field, fields, true
	return r
}

// File declares a success response whose body is a file of contentType
// ("*/*" when it varies with the file).
func (r *Route) File(status int, contentType string) *Route {
	r.outs = append(r.outs, response{status: status, contentType: contentType})
	return r
}

// Errors declares error statuses the handler gives beyond those the
// document derives from the route.
func (r *Route) Errors(statuses ...int) *Route {
	r.errors = append(r.errors, statuses...)
	return r
}

// OpenAPI returns the OpenAPI 3.1 document of the handler's routes, as
// indented JSON. GET /api/v1/openapi.json serves it.
func (h *Handler) OpenAPI() []byte {
	h.docMu.Lock()
	defer h.docMu.Unlock()
	if h.doc == nil {
		h.doc = buildOpenAPI(h.routes, h.opts.BasePath)
	}
	return h.doc
}

// handleOpenAPI serves GET /v1/openapi.json.
func (h *Handler) handleOpenAPI(c *request) error {
	return c.raw(http.StatusOK, h.OpenAPI())
}

// errorStatuses are the error responses the document declares, with their
// component names.
var errorResponses = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusConflict:              "Conflict",
	http.StatusRequestEntityTooLarge: "TooLarge",
	http.StatusUnsupportedMediaType:  "UnsupportedMediaType",
	http.StatusUnprocessableEntity:   "ValidationError",
	http.StatusTooManyRequests:       "RateLimited",
	http.StatusServiceUnavailable:    "Unavailable",
}

// openapiGen builds one document.
type openapiGen struct {
	names map[reflect.Type]string // component name of each named struct type
	used  map[string]reflect.Type
	defs  map[string]json.RawMessage // definitions of recursive types
	outs  map[reflect.Type]bool      // types the handlers write
}

// buildOpenAPI builds the document of routes served under basePath.
func buildOpenAPI(routes []*Route, basePath string) []byte {
	g := &openapiGen{names: map[reflect.Type]string{}, used: map[string]reflect.Type{},
		defs: map[string]json.RawMessage{}, outs: map[reflect.Type]bool{}}
	g.nameTypes(routes)
	paths := map[string]map[string]any{}
	opIDs := map[string]bool{}
	tags := map[string]bool{}
	for _, rt := range routes {
		p := openapiPath(rt.Path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		op := g.operation(rt, opIDs)
		tags[op["tags"].([]string)[0]] = true
		paths[p][strings.ToLower(rt.Method)] = op
	}
	tagList := make([]map[string]string, 0, len(tags))
	for _, t := range slices.Sorted(mapsKeys(tags)) {
		tagList = append(tagList, map[string]string{"name": t})
	}
	server := basePath
	if server == "" {
		server = "/"
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "bas API",
			"version": "v1",
			"description": "The /api/v1 surface of a bas workspace, generated from its route table. " +
				"Errors carry {\"detail\": string}; a 422 carries {\"detail\": [{loc, msg, type}]} " +
				"with every violation. Lists are pages: ?limit= (1..200, default 50) and ?cursor= " +
				"from the X-Next-Cursor header of the previous page, absent on the last one. " +
				"A POST with an Idempotency-Key header runs at most once per key.",
		},
		"servers":    []map[string]string{{"url": server}},
		"tags":       tagList,
		"paths":      paths,
		"security":   []map[string][]string{{"bearer": {}}},
		"components": g.components(),
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		// Every part is a map, a slice, a string or reflected schema.
		panic(fmt.Sprintf("httpapi: encode OpenAPI document: %v", err))
	}
	return append(out, '\n')
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// nameTypes gives every named struct type the routes use a component name:
// its Go name, prefixed with its package's name where two packages share a
// name.
func (g *openapiGen) nameTypes(routes []*Route) {
	seen := map[reflect.Type]bool{}
	var all []reflect.Type
	add := func(v any) {
		if v == nil {
			return
		}
		t := namedElem(reflect.TypeOf(v))
		if t != nil && !seen[t] {
			seen[t] = true
			all = append(all, t)
		}
	}
	for _, rt := range routes {
		add(rt.in)
		add(rt.items)
		for _, o := range rt.outs {
			add(o.body)
		}
	}
	for _, rt := range routes {
		for _, v := range append([]any{rt.items}, outBodies(rt)...) {
			if v != nil {
				if t := namedElem(reflect.TypeOf(v)); t != nil {
					g.outs[t] = true
				}
			}
		}
	}
	count := map[string]int{}
	for _, t := range all {
		count[typeName(t)]++
	}
	for _, t := range all {
		n := typeName(t)
		if count[n] > 1 {
			pkg := t.PkgPath()
			pkg = pkg[strings.LastIndex(pkg, "/")+1:]
			n = exportName(pkg) + n
		}
		g.names[t] = n
		g.used[n] = t
	}
}

// namedElem returns the named struct type v's type is or holds (through
// pointers, slices and arrays), or nil.
func namedElem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Name() == "" {
		return nil
	}
	return t
}

// typeName is t's Go name made a valid component name.
func typeName(t reflect.Type) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return r
		}
		return -1
	}, t.Name())
}

func exportName(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// schemaOf returns the schema of values of t: a reference for a named
// struct, an array of references, or the inlined schema.
func (g *openapiGen) schemaOf(t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n, ok := g.names[t]; ok {
		return map[string]string{"$ref": "#/components/schemas/" + n}
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		if namedElem(t) != nil {
			return map[string]any{"type": "array", "items": g.schemaOf(t.Elem())}
		}
	}
	return reflected(reflect.New(t).Elem().Interface(), g.defs)
}

// reflected is the schema of v's type as Ctx.Decode validates it: reflected,
// and opened unless the type is strict; without "$schema", which the
// document's dialect gives. A recursive type, which schema.Reflect cannot
// inline, is reflected with references: its definitions go to defs and its
// references point into the components.
func reflected(v any, defs map[string]json.RawMessage) json.RawMessage {
	raw, ok := inlined(v)
	if !ok {
		raw = referenced(v, defs)
	}
	if _, isStrict := v.(strict); !isStrict {
		if _, isStrict := reflect.New(reflect.TypeOf(v)).Interface().(strict); !isStrict {
			raw = schema.Open(raw)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw
	}
	delete(m, "$schema")
	out, _ := json.Marshal(noTrueSchemas(m))
	return out
}

// noTrueSchemas writes the schema true (any value) as {}, which means the
// same and which OpenAPI tools written for 3.0 also read.
func noTrueSchemas(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	sub := func(v any) any {
		if b, ok := v.(bool); ok && b {
			return map[string]any{}
		}
		return noTrueSchemas(v)
	}
	for k, v := range m {
		switch k {
		case "properties", "patternProperties", "$defs":
			if ps, ok := v.(map[string]any); ok {
				for n, p := range ps {
					ps[n] = sub(p)
				}
			}
		case "items", "not":
			m[k] = sub(v)
		case "additionalProperties":
			if _, ok := v.(bool); !ok {
				m[k] = noTrueSchemas(v)
			}
		case "oneOf", "anyOf", "allOf", "prefixItems":
			if xs, ok := v.([]any); ok {
				for i, x := range xs {
					xs[i] = sub(x)
				}
			}
		}
	}
	return m
}

// inlined is schema.Reflect(v), or false when v's type is recursive.
func inlined(v any) (raw json.RawMessage, ok bool) {
	defer func() {
		if recover() != nil {
			raw, ok = nil, false
		}
	}()
	return schema.Reflect(v), true
}

// referenced reflects v's type with its struct types as definitions, moved
// to defs (as components) and referenced from there.
func referenced(v any, defs map[string]json.RawMessage) json.RawMessage {
	r := invopop.Reflector{RequiredFromJSONSchemaTags: true, ExpandedStruct: true, Anonymous: true}
	s := r.Reflect(v)
	out, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("httpapi: reflect %T: %v", v, err))
	}
	out = bytes.ReplaceAll(out, []byte(`"#/$defs/`), []byte(`"#/components/schemas/`))
	var m map[string]json.RawMessage
	_ = json.Unmarshal(out, &m)
	var ds map[string]json.RawMessage
	_ = json.Unmarshal(m["$defs"], &ds)
	structs := map[string]reflect.Type{}
	reachable(reflect.TypeOf(v), structs)
	for n, d := range ds {
		d = schema.Open(d)
		if t, ok := structs[n]; ok {
			// Definitions are only made for the types the handlers write.
			d = nullable(t, d)
		}
		var ds any
		if json.Unmarshal(d, &ds) == nil {
			d, _ = json.Marshal(noTrueSchemas(ds))
		}
		defs[n] = d
	}
	delete(m, "$defs")
	out, _ = json.Marshal(m)
	return schema.Open(out)
}

func outBodies(rt *Route) []any {
	var out []any
	for _, o := range rt.outs {
		out = append(out, o.body)
	}
	return out
}

// nullable makes t's schema say what encoding/json writes, at any depth:
// the fields it always writes are required, and those of them it can write
// as null (pointers, slices, maps, interfaces) take null. Request schemas
// stay as Ctx.Decode validates.
func nullable(t reflect.Type, raw json.RawMessage) json.RawMessage {
	var s any
	if err := json.Unmarshal(raw, &s); err != nil {
		return raw
	}
	markNull(t, s)
	out, err := json.Marshal(s)
	if err != nil {
		return raw
	}
	return out
}

// markNull walks t and its schema s together.
func markNull(t reflect.Type, s any) {
	m, ok := s.(map[string]any)
	if !ok || m["$ref"] != nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if items := m["items"]; items != nil {
			markNull(t.Elem(), items)
		}
	case reflect.Map:
		if ap := m["additionalProperties"]; ap != nil {
			markNull(t.Elem(), ap)
		}
	case reflect.Struct:
		if props, _ := m["properties"].(map[string]any); props != nil {
			// A type with its own encoding may leave fields out.
			custom := t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
			markFields(t, m, props, !custom)
		}
	}
}

// markFields marks the fields of struct t in its object schema m: a field
// encoding/json always writes (no omitempty or omitzero) is required, and
// nullable when it is a pointer, slice, map or interface.
func markFields(t reflect.Type, m, props map[string]any, required bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				markFields(et, m, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p, ok := props[name]
		if !ok {
			continue
		}
		always := !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,")
		if always {
			req, _ := m["required"].([]any)
			if required && !slices.Contains(req, any(name)) {
				m["required"] = append(req, name)
			}
			switch ft.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
				addNull(p)
			}
		}
		markNull(ft, p)
	}
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// addNull lets schema s also take null (a schema of no type takes it
// already).
func addNull(s any) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	switch typ := m["type"].(type) {
	case string:
		m["type"] = []any{typ, "null"}
	case []any:
		if !slices.Contains(typ, any("null")) {
			m["type"] = append(typ, "null")
		}
	}
}

// reachable records the named struct types t reaches, by name.
func reachable(t reflect.Type, seen map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	if t.Name() != "" {
		if _, ok := seen[t.Name()]; ok {
			return
		}
		seen[t.Name()] = t
	}
	for i := range t.NumField() {
		reachable(t.Field(i).Type, seen)
	}
}

// operation builds the operation of rt.
func (g *openapiGen) operation(rt *Route, opIDs map[string]bool) map[string]any {
	tag := rt.App
	if tag == "" {
		tag = "system"
	}
	id := operationID(rt, opIDs)
	op := map[string]any{
		"operationId": id,
		"summary":     summary(id),
		"tags":        []string{tag},
	}
	var desc []string
	if rt.Public {
		op["security"] = []any{}
		desc = append(desc, "Needs no authentication.")
	} else if rt.Perm != "" {
		desc = append(desc, "Needs the permission "+rt.Perm+".")
		op["x-bas-permission"] = rt.Perm
	}
	if rt.App != "" {
		op["x-bas-app"] = rt.App
	}
	if len(desc) > 0 {
		op["description"] = strings.Join(desc, " ")
	}
	var params []any
	for _, seg := range segments(rt.Path) {
		if isParam(seg) {
			params = append(params, map[string]any{"name": seg[1:], "in": "path", "required": true,
				"schema": map[string]string{"type": "string"}})
		}
	}
	if rt.items != nil {
		params = append(params,
			map[string]any{"name": "limit", "in": "query", "description": "Page size, 1 to 200 (default 50).",
				"schema": map[string]any{"type": "integer", "minimum": 1, "maximum": maxPage, "default": 50}},
			map[string]any{"name": "cursor", "in": "query",
				"description": "The X-Next-Cursor of the previous page.",
				"schema":      map[string]string{"type": "string"}})
	}
	for _, q := range rt.query {
		if isIDFilter(q) {
			params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string", "maxLength": maxFilterID}})
			continue
		}
		params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]string{"type": "string"}})
	}
	if rt.Method == http.MethodPost {
		params = append(params, map[string]string{"$ref": "#/components/parameters/IdempotencyKey"})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	switch {
	case rt.in != nil:
		op["requestBody"] = map[string]any{"content": map[string]any{
			"application/json": map[string]any{"schema": g.schemaOf(reflect.TypeOf(rt.in))}}}
	case rt.upload != "":
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"multipart/form-data": map[string]any{"schema": map[string]any{
				"type":       "object",
				"required":   []string{rt.upload},
				"properties": g.formFields(rt),
			}}}}
	}
	op["responses"] = g.responses(rt)
	return op
}

// formFields is the properties of rt's upload form.
func (g *openapiGen) formFields(rt *Route) map[string]any {
	props := map[string]any{rt.upload: map[string]string{"type": "string", "format": "binary",
		"contentMediaType": "application/octet-stream"}}
	for _, f := range rt.fields {
		props[f] = map[string]string{"type": "string"}
	}
	return props
}

// responses builds the responses of rt: the declared successes and the
// errors the route can give.
func (g *openapiGen) responses(rt *Route) map[string]any {
	res := map[string]any{}
	for _, o := range rt.outs {
		r := map[string]any{"description": http.StatusText(o.status)}
		switch {
		case o.contentType != "":
			r["content"] = map[string]any{o.contentType: map[string]any{
				"schema": map[string]string{"type": "string", "format": "binary"}}}
		case o.body != nil:
			r["content"] = map[string]any{"application/json": map[string]any{
				"schema": g.schemaOf(reflect.TypeOf(o.body))}}
		}
		if o.status == http.StatusCreated || o.status == http.StatusAccepted {
			r["headers"] = map[string]any{"Location": map[string]any{
				"description": "The created resource, or the change waiting for a second person (202).",
				"schema":      map[string]string{"type": "string"}}}
		}
		res[strconv.Itoa(o.status)] = r
	}
	if rt.items != nil {
		res["200"] = map[string]any{
			"description": "A page, as a JSON array.",
			"headers":     map[string]any{"X-Next-Cursor": map[string]string{"$ref": "#/components/headers/XNextCursor"}},
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type": "array", "items": g.schemaOf(reflect.TypeOf(rt.items))}}},
		}
	}
	errs := map[int]bool{}
	for _, s := range rt.errors {
		errs[s] = true
	}
	if !rt.Public {
		errs[http.StatusUnauthorized], errs[http.StatusForbidden], errs[http.StatusTooManyRequests] = true, true, true
		errs[http.StatusServiceUnavailable] = true
	}
	if strings.ContainsAny(rt.Path, ":*") {
		errs[http.StatusNotFound] = true
	}
	switch rt.Method {
	case http.MethodGet:
		errs[http.StatusUnprocessableEntity] = true // a query it does not take (limit on a list that is not paged)
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		errs[http.StatusConflict], errs[http.StatusUnprocessableEntity] = true, true
		// Every write reads its body, if only to refuse one it does not take.
		errs[http.StatusBadRequest], errs[http.StatusRequestEntityTooLarge] = true, true
	case http.MethodDelete:
		errs[http.StatusConflict] = true
	}
	if rt.in != nil || rt.upload != "" {
		errs[http.StatusRequestEntityTooLarge], errs[http.StatusUnprocessableEntity] = true, true
		errs[http.StatusUnsupportedMediaType], errs[http.StatusBadRequest] = true, true
	}
	if rt.Public && rt.Method == http.MethodPost {
		errs[http.StatusTooManyRequests] = true // limited per client address (and email or invitation)
	}
	if rt.upload != "" {
		errs[http.StatusServiceUnavailable] = true // too many uploads at once
	}
	if rt.items != nil || len(rt.query) > 0 {
		errs[http.StatusUnprocessableEntity] = true
	}
	for s := range errs {
		name, ok := errorResponses[s]
		if !ok {
			name = "Error"
		}
		res[strconv.Itoa(s)] = map[string]string{"$ref": "#/components/responses/" + name}
	}
	return res
}

// operationID is the route's handler name without "handle", lower-cased
// first ("docTypeCreate"); a handler serving two routes gets the method
// appended for the second.
func operationID(rt *Route, used map[string]bool) string {
	name := ""
	if rt.fn != nil {
		name = runtime.FuncForPC(reflect.ValueOf(rt.fn).Pointer()).Name()
		name = name[strings.LastIndex(name, ".")+1:]
		name = strings.TrimSuffix(name, "-fm")
		name = strings.TrimPrefix(name, "handle")
	}
	if name == "" || !unicode.IsUpper(rune(name[0])) {
		name = exportName(strings.ToLower(rt.Method)) + strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
			return '_'
		}, rt.Path)
	}
	id := strings.ToLower(name[:1]) + name[1:]
	if used[id] {
		id += exportName(strings.ToLower(rt.Method))
	}
	for base, n := id, 2; used[id]; n++ {
		id = base + strconv.Itoa(n)
	}
	used[id] = true
	return id
}

// summary spells an operation id as words: "docTypeCreate" is "Doc type
// create".
func summary(id string) string {
	var b strings.Builder
	for i, r := range id {
		switch {
		case i == 0:
			b.WriteRune(unicode.ToUpper(r))
		case unicode.IsUpper(r):
			b.WriteByte(' ')
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// openapiPath turns httprouter's ":id" and "*path" into "{id}" and "{path}".
func openapiPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if isParam(s) {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

// components builds the shared schemas, responses, parameters, headers and
// the bearer security scheme.
func (g *openapiGen) components() map[string]any {
	schemas := map[string]any{
		"Error": map[string]any{
			"type": "object", "required": []string{"detail"},
			"properties": map[string]any{"detail": map[string]string{"type": "string"}},
		},
		"Violation": map[string]any{
			"type": "object", "required": []string{"loc", "msg", "type"},
			"properties": map[string]any{
				"loc": map[string]any{"type": "array", "description": "Where: \"body\", \"query\", \"header\" or \"path\", then keys and indexes.",
					"items": map[string]any{"type": []string{"string", "integer"}}},
				"msg":  map[string]string{"type": "string"},
				"type": map[string]string{"type": "string"},
			},
		},
		"ValidationError": map[string]any{
			"type": "object", "required": []string{"detail"},
			"properties": map[string]any{"detail": map[string]any{"type": "array",
				"items": map[string]string{"$ref": "#/components/schemas/Violation"}}},
		},
	}
	names := make([]string, 0, len(g.used))
	for n := range g.used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := g.used[n]
		raw := reflected(reflect.New(t).Elem().Interface(), g.defs)
		if g.outs[t] {
			raw = nullable(t, raw)
		}
		schemas[n] = raw
	}
	for n, d := range g.defs {
		if _, ok := schemas[n]; !ok {
			schemas[n] = d
		}
	}
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]string{"$ref": "#/components/schemas/Error"}}}}
	}
	rl := errResp("Too many requests; retry after Retry-After seconds.")
	rl["headers"] = map[string]any{"Retry-After": map[string]any{"required": true,
		"description": "Seconds to wait before retrying.", "schema": map[string]string{"type": "integer"}}}
	unauth := errResp("Not authenticated: no or an unknown bearer token.")
	unauth["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"schema": map[string]string{"type": "string"}}}
	return map[string]any{
		"schemas": schemas,
		"responses": map[string]any{
			"BadRequest":           errResp("The request body could not be read: it ended early, broke off or stalled."),
			"Unauthorized":         unauth,
			"Forbidden":            errResp("The key is not allowed for the app, or the caller lacks the permission."),
			"NotFound":             errResp("No such resource in the caller's workspace."),
			"Conflict":             errResp("The resource's state forbids the change, or the Idempotency-Key was used for another request or is in flight."),
			"TooLarge":             errResp("The body exceeds the size limit."),
			"UnsupportedMediaType": errResp("The body is not of the media type the operation takes."),
			"RateLimited":          rl,
			"Unavailable":          errResp("The workspace cannot take the request now (it is opening or closing, or a change could not be saved); retry later."),
			"Error":                errResp("An error."),
			"ValidationError": map[string]any{"description": "Every violation of the request, at once.",
				"content": map[string]any{"application/json": map[string]any{
					"schema": map[string]string{"$ref": "#/components/schemas/ValidationError"}}}},
		},
		"parameters": map[string]any{
			"IdempotencyKey": map[string]any{"name": "Idempotency-Key", "in": "header",
				"description": "Runs the POST at most once per key; a retry with the same key and body gets the first response.",
				"schema":      map[string]any{"type": "string", "maxLength": maxIdempotencyKey}},
		},
		"headers": map[string]any{
			"XNextCursor": map[string]any{"description": "The cursor of the next page; absent on the last page.",
				"schema": map[string]string{"type": "string"}},
		},
		"securitySchemes": map[string]any{
			"bearer": map[string]string{"type": "http", "scheme": "bearer",
				"description": "A session token (dev-login, sign-in code, accepted invitation) or an API key secret."},
		},
	}
}
