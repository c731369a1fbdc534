package httpapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantEndpointPath is endpointPath written plainly, for a path with its
// leading slash: no segment is "." or "..", and none past the leading
// slash is empty, unless the path is "/" itself.
func wantEndpointPath(path string) bool {
	for i, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." || seg == "" && i > 0 && len(path) > 1 {
			return false
		}
	}
	return true
}

// TestEndpointPath: paths with an empty, "." or ".." segment name no
// endpoint; others, dotted names among them, may.
func TestEndpointPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/", true},
		{"/v1/processes", true},
		{"/v1/processes/prc_1/start", true},
		{"/v1/files/a.b/.c", true},
		{"/v1/processes/", false},
		{"/v1/processes//start", false},
		{"/v1/./processes", false},
		{"/v1/../processes", false},
		{"/v1/processes/..", false},
		{"/v1/processes/.", false},
	} {
		if got := endpointPath(c.path); got != c.want || wantEndpointPath(c.path) != c.want {
			t.Errorf("endpointPath(%q) = %v (plainly %v), want %v", c.path, got, wantEndpointPath(c.path), c.want)
		}
	}
}

// FuzzEndpointPath: for any path (with its leading slash), endpointPath's
// shortcuts agree with splitting the path into its segments.
func FuzzEndpointPath(f *testing.F) {
	for _, p := range []string{"", "v1/processes", "v1//x", "v1/./x", "v1/x/..", "x/", ".x/..y", "."} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		path := "/" + p
		if got, want := endpointPath(path), wantEndpointPath(path); got != want {
			t.Errorf("endpointPath(%q) = %v, want %v", path, got, want)
		}
	})
}

// TestJSONPathAt: the location of the scalar value ending at an offset,
// with each array element's index, and nil where no scalar value ends.
func TestJSONPathAt(t *testing.T) {
	t.Parallel()
	const doc = `{"a":[1,{"b":2.5}],"c":{"d":[true,"x",7e1]},"e":3}`
	end := func(s string) int64 { return int64(strings.Index(doc, s) + len(s)) }
	for _, c := range []struct {
		name   string
		offset int64
		want   []any
	}{
		{"first element", end("[1"), []any{"body", "a", 0}},
		{"field of an element", end("2.5"), []any{"body", "a", 1, "b"}},
		{"third element of a nested array", end("7e1"), []any{"body", "c", "d", 2}},
		{"top level field", end(`"e":3`), []any{"body", "e"}},
		{"a key", end(`"c"`), nil},
		{"in a value", end("2."), nil},
		{"past the end", int64(len(doc)) + 1, nil},
	} {
		if diff := cmp.Diff(c.want, jsonPathAt([]byte(doc), c.offset)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// A broken document: the values before the break are located, no
	// closing delimiter without its opening one is taken.
	for _, c := range []struct {
		doc    string
		offset int64
		want   []any
	}{
		{`{"a":[1,`, 7, []any{"body", "a", 0}},
		{`{"a":[1,`, 8, nil},
		{`]`, 1, nil},
		{`{"a":1}}2`, 9, nil},
	} {
		if diff := cmp.Diff(c.want, jsonPathAt([]byte(c.doc), c.offset)); diff != "" {
			t.Errorf("%s at %d (-want +got):\n%s", c.doc, c.offset, diff)
		}
	}
}

// FuzzJSONPathAt: for any body and offset, jsonPathAt does not panic, and
// a location it gives starts at "body" and names no more levels than the
// body has bytes.
func FuzzJSONPathAt(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":2.5}]}`), int64(15))
	f.Add([]byte(`[[[1]]]`), int64(4))
	f.Add([]byte(`{"a":1}}`), int64(6))
	f.Add([]byte(`]`), int64(1))
	f.Fuzz(func(t *testing.T, b []byte, offset int64) {
		loc := jsonPathAt(b, offset)
		if loc == nil {
			return
		}
		if loc[0] != "body" || len(loc) > len(b)+1 {
			t.Errorf("jsonPathAt(%q, %d) = %v", b, offset, loc)
		}
	})
}
