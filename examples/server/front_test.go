package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/google/go-cmp/cmp"
)

// TestFrontHandlerServesAsTheMux: the server's handler answers every path
// as http.ServeMux alone did (the API under /api/, the console elsewhere,
// a redirect for a path that is not clean), and sends clean API paths to
// the API without the mux.
func TestFrontHandlerServesAsTheMux(t *testing.T) {
	logger := newLogger(io.Discard)
	opts, _ := workspaceOptions(t.TempDir(), "", "", "http://127.0.0.1/api", nil, false, logger)
	ws, err := bas.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h, base := newHandler(ws, true, logger)
	front, ok := h.(*frontHandler)
	if !ok {
		t.Fatalf("newHandler returned a %T", h)
	}
	type answer struct {
		Status    int
		Location  string
		RequestID bool // X-Request-Id: the API answered
	}
	serve := func(h http.Handler, method, path string) answer {
		r := httptest.NewRequest(method, path, strings.NewReader("{}"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return answer{w.Code, w.Header().Get("Location"), w.Header().Get("X-Request-Id") != ""}
	}
	for _, tc := range []struct {
		method, path string
		api          bool // served by the API without the mux
	}{
		{"GET", base + "/healthz", true},
		{"POST", base + "/v1/auth/dev-login", true},
		{"GET", base + "/v1/nothing-here", true},
		{"GET", base + "//healthz", false},
		{"GET", base + "/v1/../healthz", false},
		{"GET", base + "/./healthz", false},
		{"GET", base + "/v1/..", false},
		{"GET", base + "/v1/.", false},
		{"GET", base, false},
		{"GET", "/", false},
		{"GET", "/console/assets/app.js", false},
		// Escapes: the mux matches the escaped path segment by segment, so
		// "/api%2Fhealthz" is not under the base path for it.
		{"GET", base + "%2Fhealthz", false},
		{"GET", base + "%2Fv1%2Fauth%2Fdev-login", false},
		{"GET", base + "/v1%2F..%2Fhealthz", false},
		{"GET", base + "/v1/%2E%2E/healthz", false},
		{"GET", base + "/heal%74hz", false},
		{"CONNECT", base + "/healthz", false},
	} {
		want := serve(front.mux, tc.method, tc.path)
		got := serve(h, tc.method, tc.path)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s (-mux +front):\n%s", tc.method, tc.path, diff)
		}
		if direct := front.direct(httptest.NewRequest(tc.method, tc.path, nil)); direct != tc.api {
			t.Errorf("%s %s: straight to the API = %v, want %v", tc.method, tc.path, direct, tc.api)
		}
	}
}

// FuzzCleanPath: cleanPath takes a path exactly when http.ServeMux would
// serve it as it is: when cleaning it (path.Clean, keeping a trailing
// slash, as the mux does) leaves it unchanged.
func FuzzCleanPath(f *testing.F) {
	for _, p := range []string{"/api/healthz", "/api//healthz", "/api/./x", "/api/v1/..", "/api/v1/.", "/api/v1/",
		"/api/v1/..x", "/api/.x/", "/", "/..", "/./"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "/") {
			return
		}
		cleaned := path.Clean(p)
		if strings.HasSuffix(p, "/") && cleaned != "/" {
			cleaned += "/"
		}
		if got, want := cleanPath(p), cleaned == p; got != want {
			t.Errorf("cleanPath(%q) = %v, want %v (the mux cleans it to %q)", p, got, want, cleaned)
		}
	})
}
