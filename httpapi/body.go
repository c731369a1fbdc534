package httpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// The kinds httpapi adds to errs' for what only HTTP has: a body that
// cannot be read (400) and a body of a type the route does not take (415).
var (
	errBadRequest       = errors.New("httpapi: bad request")
	errUnsupportedMedia = errors.New("httpapi: unsupported media type")
)

func badRequestf(format string, args ...any) error {
	return errors.Mark(&errs.Public{Msg: errors.Newf(format, args...).Error()}, errBadRequest)
}

// checkContentType refuses a body whose Content-Type the route does not
// take: JSON routes take application/json (any parameters) or no
// Content-Type; upload routes check their multipart body themselves. A
// request without a body passes whatever it says.
func checkContentType(c *request) error {
	if c.route.multipart || !hasBody(c.R) {
		return nil
	}
	ct := c.R.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" { // the common form, without parsing it
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	return errors.Mark(&errs.Public{Msg: "this endpoint takes application/json bodies"}, errUnsupportedMedia)
}

// hasBody reports whether r carries a body (a length other than 0, or a
// chunked one).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// jsonBody reads the JSON body for a value of type t (nil when the body is
// read into no struct): malformed JSON is a 422 json_invalid; a key twice
// in one object anywhere, or a key that names a field of t only when case is
// ignored, is a 422 (see internal/jsonkeys). An empty body reads as {}.
func (c *request) jsonBody(t reflect.Type) ([]byte, error) {
	b, vs, err := c.readJSON(t)
	if err != nil {
		return nil, err
	}
	return b, errs.Validation(vs...)
}

// readJSON is jsonBody that returns the key violations apart, so that
// Decode can report them with the schema's.
func (c *request) readJSON(t reflect.Type) ([]byte, []errs.Violation, error) {
	b, err := c.Body()
	if err != nil {
		return nil, nil, err
	}
	if isBlank(b) {
		return []byte("{}"), nil, nil
	}
	if !json.Valid(b) {
		return nil, nil, errs.Validation(errs.Violation{Loc: []any{"body"}, Msg: "is not valid JSON", Type: "json_invalid"})
	}
	if first := bytes.TrimLeft(b, " \t\r\n"); first[0] != '{' {
		return nil, nil, errs.Validation(errs.Violation{Loc: []any{"body"}, Msg: "must be a JSON object", Type: "type_error"})
	}
	return b, append(c.h.keys.Check(b, t, "body"), lineFieldViolations(b, t)...), nil
}

// lineFieldViolations refuses control characters (NUL, CR, LF, any C0
// control or DEL) in the one-line fields of a body: names, titles, subjects
// and addresses. A name carrying "\r\nBcc:" must never reach a mail
// header, a CSV line or a log line, and a NUL makes two systems read one
// name two ways. Multi-line text (descriptions, notes, bodies) keeps its
// newlines.
func lineFieldViolations(b []byte, t reflect.Type) []errs.Violation {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	// Most bodies have no one-line text field at the top: those are not
	// decoded a second time.
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !isLineField(name) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.String {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	var out []errs.Violation
	for _, name := range names {
		raw, ok := doc[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			continue // the schema reports the type
		}
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			out = append(out, errs.Violation{Loc: []any{"body", name},
				Msg: "must not contain control characters (NUL, CR, LF, tab ...)", Type: "value_error"})
		}
	}
	return out
}

// isLineField says whether a field of this JSON name holds one line.
func isLineField(name string) bool {
	switch name {
	case "name", "title", "subject", "to", "email", "phone", "domain", "website", "label", "key":
		return true
	}
	return strings.HasSuffix(name, "_name") || strings.HasSuffix(name, "_email") || strings.HasSuffix(name, "_title")
}

// mergeViolations returns first followed by the violations of second at
// locations first does not report.
func mergeViolations(first, second []errs.Violation) []errs.Violation {
	out := first
	for _, v := range second {
		if !slices.ContainsFunc(first, func(f errs.Violation) bool { return slices.Equal(f.Loc, v.Loc) }) {
			out = append(out, v)
		}
	}
	return out
}

// emptyIn is the body of a route that takes none: nothing, or {}.
type emptyIn struct{}

// NoExtraProperties makes every field of a body sent to a route that takes
// none a 422 extra_forbidden.
func (emptyIn) NoExtraProperties() {}

// noBody refuses a body on a route that takes none (anything but nothing
// or {} is a 422), so that a request meant for another route, or a field
// the caller believes it set, never passes unnoticed.
func (c *request) noBody() error { return c.Decode(&emptyIn{}) }

func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// inBody locates the violations of a Go API call's error (the engine's, the
// process package's), which the Go API reports at its parameters' and
// inputs' field names (["fields", "amount"], ["steps", 0, "type"]), under the
// request's body, where the HTTP API reports them (["body", "fields",
// "amount"]). A violation already under "body" (from a cluster node not yet
// upgraded) or with no location stays as it is; an error without
// violations is returned as it is.
func inBody(err error) error { return underBody(err, false) }

// inBodyWithBodyField is inBody for an input with a field named "body" (the
// CRM's ActivityIn and ActivityPatch): a violation at ["body"] is that
// field's and goes under the body like any other (["body", "body"]); only a
// longer location that starts with "body" is taken as already under it.
func inBodyWithBodyField(err error) error { return underBody(err, true) }

// underBody is inBody and inBodyWithBodyField (bodyField).
func underBody(err error, bodyField bool) error {
	vs := errs.Violations(err)
	if len(vs) == 0 {
		return err
	}
	out := make([]errs.Violation, len(vs))
	for i, v := range vs {
		already := len(v.Loc) > 0 && v.Loc[0] == "body" && (!bodyField || len(v.Loc) > 1)
		if len(v.Loc) > 0 && !already {
			v.Loc = append([]any{"body"}, v.Loc...)
		}
		out[i] = v
	}
	return errs.Validation(out...)
}

// hasBodyField reports whether t (or what it points to) is a struct with a
// JSON field named "body".
func hasBodyField(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return false
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "body" || (name == "" && f.Name == "Body") {
			return true
		}
	}
	return false
}
