package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/julienschmidt/httprouter"
)

// request is one call of a route as a handler sees it.
type request struct {
	W      http.ResponseWriter
	R      *http.Request
	Params httprouter.Params
	// P is the authenticated caller; nil on public routes.
	P *access.Principal

	h     *Handler
	route *Route
	body  []byte // the raw body once read
	read  bool
	// idem is the keyed request in flight (nil without an
	// Idempotency-Key); secret says the response holds a secret.
	idem   *idemRequest
	secret bool
	// rendered is the response the engine kept with a keyed request's
	// change: answerWith writes it instead of rendering the same answer
	// again. (The engine's goroutine sets it.)
	rendered atomic.Pointer[keptAnswer]
	// paged says the handler read ?limit= and ?cursor= (Page).
	paged bool
	// query is the URL's query once parsed (Query).
	query url.Values
}

// Context returns the request's context.
func (c *request) Context() context.Context { return c.R.Context() }

// Query returns the URL's query parameters, parsed on the first call and
// kept for the request: the dispatch's checks, Page and the handler read
// one parse. The values are shared; a caller that changes them copies
// them first.
func (c *request) Query() url.Values {
	if c.query == nil {
		c.query = c.R.URL.Query()
	}
	return c.query
}

// Tenant returns the caller's tenant.
func (c *request) Tenant() string { return c.P.Tenant }

// Param returns a path parameter.
func (c *request) Param(name string) string { return c.Params.ByName(name) }

// Body reads the request body: at most MaxBodyBytes on a JSON route,
// MaxUploadBytes on an upload route (413 beyond), whatever the
// Content-Type says. A body that breaks off is a 400.
func (c *request) Body() ([]byte, error) {
	if c.read {
		return c.body, nil
	}
	limit := c.h.opts.MaxBodyBytes
	if c.route.multipart {
		limit = c.h.opts.MaxUploadBytes
	}
	b, err := readBody(c.R, limit)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errs.TooLargef("request body exceeds %d bytes", limit)
		}
		return nil, badRequestf("the request body could not be read: it ended early or broke off")
	}
	if int64(len(b)) > limit {
		return nil, errs.TooLargef("request body exceeds %d bytes", limit)
	}
	c.body, c.read = b, true
	return b, nil
}

// maxPresizedBody bounds the buffer readBody sizes from the announced
// length before any of the body came: a caller announcing a large body
// and sending nothing holds no more than this.
const maxPresizedBody = 64 << 10

// readBody reads r's body, up to limit+1 bytes: into a buffer of the
// announced length when there is one within limit and maxPresizedBody
// (the whole body, read once), else growing as it comes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > limit || n > maxPresizedBody {
		return io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	b := make([]byte, n+1)
	if _, err := io.ReadFull(r.Body, b[:n]); err != nil {
		return nil, err
	}
	switch _, err := io.ReadFull(r.Body, b[n:]); {
	case errors.Is(err, io.EOF):
		return b[:n], nil
	case err != nil:
		return nil, err
	}
	// A body longer than announced (a server should not pass one on)
	// keeps coming, to the limit.
	rest, err := io.ReadAll(io.LimitReader(r.Body, limit-n))
	return append(b, rest...), err
}

// validator is implemented by input records with rules a JSON Schema cannot
// say (cross-field checks); it reports every violation, located under "body".
type validator interface {
	Validate() []errs.Violation
}

// strict is implemented by input records that say "no extra properties":
// unknown fields are a 422 extra_forbidden. Other records ignore them.
type strict interface {
	NoExtraProperties()
}

type inputSchema struct {
	v *schema.Validator
}

// Decode reads the JSON body into v: malformed JSON is a 422 json_invalid,
// a duplicate key anywhere, or a key that matches a field of v only when
// case is ignored, is a 422 (keys match exactly); every schema violation of
// v's type is reported at once, then v's own Validate runs. An empty body
// decodes as {}. A record of a hot route decodes its plain form in one
// pass (fastDecoder), with the same result; its Validate runs all the same.
func (c *request) Decode(v any) error {
	if fd, ok := v.(fastDecoder); ok {
		b, err := c.Body()
		if err != nil {
			return err
		}
		if fd.decodeFast(b) {
			return validated(v)
		}
	}
	return c.decodeGeneral(v)
}

// decodeGeneral is Decode without the fast path of a fastDecoder.
func (c *request) decodeGeneral(v any) error {
	b, keyVs, err := c.readJSON(reflect.TypeOf(v))
	if err != nil {
		return err
	}
	s, err := c.h.schemaOf(v)
	if err != nil {
		return err
	}
	if vs := mergeViolations(keyVs, s.v.ValidateJSON(b, "body")); len(vs) > 0 {
		return errs.Validation(vs...)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return decodeViolation(b, err)
	}
	return validated(v)
}

// decodeViolation is the 422 of a body the schema took but json.Unmarshal
// could not decode: a number the schema counts as an integer (1.0, 1e3)
// or one beyond the field's range, for an integer field, is located at
// the field, and says so without Go's words.
func decodeViolation(b []byte, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		return errs.Validation(errs.Violation{Loc: []any{"body"}, Msg: err.Error(), Type: "type_error"})
	}
	loc := jsonPathAt(b, te.Offset)
	if loc == nil {
		loc = []any{"body"}
		if te.Field != "" {
			for _, name := range strings.Split(te.Field, ".") {
				loc = append(loc, name)
			}
		}
	}
	msg := "has the wrong type"
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.HasPrefix(te.Value, "number") {
			msg = "must be an integer in range, written without a fraction or an exponent"
		}
	}
	return errs.Validation(errs.Violation{Loc: loc, Msg: msg, Type: "type_error"})
}

// jsonPathAt is the location (under "body", with the index of each array
// element, as the schema's violations give it) of the value of the JSON
// document b that ends offset bytes in, as json.UnmarshalTypeError's
// Offset says; nil when no scalar value ends there.
func jsonPathAt(b []byte, offset int64) []any {
	type frame struct {
		array   bool
		key     string
		index   int
		wantKey bool
	}
	var stack []frame
	// next moves the innermost container past a value it holds.
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, frame{wantKey: true})
			case '[':
				stack = append(stack, frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				next()
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		if dec.InputOffset() == offset {
			loc := []any{"body"}
			for _, f := range stack {
				if f.array {
					loc = append(loc, f.index)
				} else {
					loc = append(loc, f.key)
				}
			}
			return loc
		}
		next()
	}
}

// validated ends every decoding of a body into v, the fast and the
// general: v's own Validate (a validator) runs and reports every violation,
// under "body" (inBody: a Validate may locate them at v's field names;
// inBodyWithBodyField when v has a field named "body").
func validated(v any) error {
	if vv, ok := v.(validator); ok {
		if vs := vv.Validate(); len(vs) > 0 {
			if hasBodyField(reflect.TypeOf(v)) {
				return inBodyWithBodyField(errs.Validation(vs...))
			}
			return inBody(errs.Validation(vs...))
		}
	}
	return nil
}

// schemaOf returns the compiled input schema of v's type, made once.
func (h *Handler) schemaOf(v any) (*inputSchema, error) {
	t := reflect.TypeOf(v)
	if s, ok := h.schemas.Load(t); ok {
		return s.(*inputSchema), nil
	}
	raw := schema.Reflect(v)
	if _, ok := v.(strict); !ok {
		raw = schema.Open(raw)
	}
	val, err := schema.Compile(raw)
	if err != nil {
		return nil, errors.Wrapf(err, "compile input schema of %s", t)
	}
	s, _ := h.schemas.LoadOrStore(t, &inputSchema{v: val})
	return s.(*inputSchema), nil
}

// JSON writes v with status.
func (c *request) JSON(status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, "encode response")
	}
	c.W.Header().Set("Content-Type", "application/json")
	c.W.WriteHeader(status)
	_, _ = c.W.Write(append(b, '\n'))
	return nil
}

// Created writes 201 with a Location header.
func (c *request) Created(location string, v any) error {
	if location != "" {
		c.W.Header().Set("Location", c.h.opts.BasePath+location)
	}
	return c.JSON(http.StatusCreated, v)
}

// waiting writes 202 with v and a Location header naming the change that
// waits for a second person (GET /v1/changes/{id}).
func (c *request) waiting(changeID string, v any) error {
	c.W.Header().Set("Location", c.h.opts.BasePath+"/v1/changes/"+changeID)
	return c.JSON(http.StatusAccepted, v)
}

// NoContent writes 204.
func (c *request) NoContent() error {
	c.W.WriteHeader(http.StatusNoContent)
	return nil
}

// Page reads ?limit= (1..200, default 50) and ?cursor=.
func (c *request) Page() (store.Page, error) {
	c.paged = true
	q := c.Query()
	var p store.Page
	if s := q.Get("cursor"); s != "" {
		inner, ok := c.openCursor(s)
		if !ok {
			return p, store.ErrBadCursor
		}
		p.Cursor = inner
	}
	n, err := pageLimit(q.Get("limit"))
	p.Limit = n
	return p, err
}

// pageLimit reads the value of ?limit= (1..200; empty is store.Page's
// default size).
func pageLimit(s string) (int, error) {
	if s == "" {
		return store.Page{}.Size(), nil
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, errs.Invalidf([]any{"query", "limit"}, "type_error", "must be an integer")
	case n < 1:
		return 0, errs.Invalidf([]any{"query", "limit"}, "greater_than_equal", "must be at least 1")
	case n > 200:
		return 0, errs.Invalidf([]any{"query", "limit"}, "less_than_equal", "must be at most 200")
	}
	return n, nil
}

// List writes a page of items as a JSON array (never null) and the
// X-Next-Cursor header when more remain.
func (c *request) List(items any, next string) error {
	if !c.paged {
		if q := c.Query(); q.Has("limit") || q.Has("cursor") {
			return errs.Invalidf([]any{"query", "limit"}, "extra_forbidden",
				"this list is not paged: it returns every entry and takes no limit or cursor")
		}
	}
	if next != "" {
		c.W.Header().Set("X-Next-Cursor", c.sealCursor(next))
	}
	if rv := reflect.ValueOf(items); !rv.IsValid() || (rv.Kind() == reflect.Slice && rv.IsNil()) {
		return c.JSON(http.StatusOK, []any{})
	}
	return c.JSON(http.StatusOK, items)
}

// raw writes an already encoded JSON body.
func (c *request) raw(status int, body []byte) error {
	c.W.Header().Set("Content-Type", "application/json")
	c.W.WriteHeader(status)
	_, _ = c.W.Write(append(body, '\n'))
	return nil
}

// jsonID reads the "id" of an encoded record.
func jsonID(raw []byte) string {
	// Records the API renders open with their id, which holds no escapes:
	// read it in place rather than decoding the whole record.
	const head = `{"id":"`
	if rest, ok := bytes.CutPrefix(raw, []byte(head)); ok {
		if n := bytes.IndexByte(rest, '"'); n >= 0 && bytes.IndexByte(rest[:n], '\\') < 0 {
			return string(rest[:n])
		}
	}
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.ID
}

// A cursor the API hands out is the store's cursor behind a check of the
// list it continues: the path, the caller's tenant and the query's other
// parameters. A cursor that is malformed, made up, or made by another list
// (another route, record, tenant or filter) is a 422 on query.cursor, never
// a silently empty or shifted page. The check is a digest, not a secret:
// the store's own cursor already cannot leave the list's key prefix.
const cursorTagLen = 6

func (c *request) cursorTag(inner string) []byte {
	q := maps.Clone(c.Query())
	q.Del("cursor")
	q.Del("limit")
	tenant := ""
	if c.P != nil {
		tenant = c.P.Tenant
	}
	sum := sha256.Sum256([]byte(c.R.Method + " " + c.R.URL.Path + "\x00" + tenant + "\x00" + q.Encode() + "\x00" + inner))
	return sum[:cursorTagLen]
}

// sealCursor wraps the store's cursor for the client.
func (c *request) sealCursor(inner string) string {
	return base64.RawURLEncoding.EncodeToString(append(c.cursorTag(inner), inner...))
}

// openCursor unwraps a cursor sealCursor made for this same list.
func (c *request) openCursor(s string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= cursorTagLen {
		return "", false
	}
	inner := string(raw[cursorTagLen:])
	return inner, hmac.Equal(raw[:cursorTagLen], c.cursorTag(inner))
}
