package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/google/go-cmp/cmp"
)

// TestFrontHandlerServesAsTheMux: the server's handler answers every path
// as http.ServeMux alone did (the API under /api/, the console elsewhere,
// a redirect for a path that is not clean), and sends API paths to the API
// without the mux, except that the API answers a path under its base path
// that is not clean with its 404 JSON instead of the mux's redirect.
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
		Body      string
	}
	serve := func(h http.Handler, method, path string) answer {
		r := httptest.NewRequest(method, path, strings.NewReader("{}"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		a := answer{Status: w.Code, Location: w.Header().Get("Location"), RequestID: w.Header().Get("X-Request-Id") != ""}
		if w.Code == http.StatusNotFound && a.RequestID {
			a.Body = strings.TrimSpace(w.Body.String())
		}
		return a
	}
	noEndpoint := &answer{Status: http.StatusNotFound, RequestID: true, Body: `{"detail":"no such endpoint"}`}
	for _, tc := range []struct {
		method, path string
		api          bool    // served by the API without the mux
		want         *answer // nil: as the mux answers
	}{
		{"GET", base + "/healthz", true, nil},
		{"POST", base + "/v1/auth/dev-login", true, nil},
		{"GET", base + "/v1/nothing-here", true, nil},
		{"GET", base + "//healthz", true, noEndpoint},
		{"POST", base + "/v1/processes//start", true, noEndpoint},
		{"GET", base + "/v1/../healthz", true, noEndpoint},
		{"GET", base + "/./healthz", true, noEndpoint},
		{"GET", base + "/v1/..", true, noEndpoint},
		{"GET", base + "/v1/.", true, noEndpoint},
		{"GET", base, false, nil},
		{"GET", "/", false, nil},
		{"GET", "/console/assets/app.js", false, nil},
		{"GET", "//api/healthz", false, nil},
		// Escapes: the mux matches the escaped path segment by segment, so
		// "/api%2Fhealthz" is not under the base path for it.
		{"GET", base + "%2Fhealthz", false, nil},
		{"GET", base + "%2Fv1%2Fauth%2Fdev-login", false, nil},
		{"GET", base + "/v1%2F..%2Fhealthz", false, nil},
		{"GET", base + "/v1/%2E%2E/healthz", false, nil},
		{"GET", base + "/heal%74hz", false, nil},
		{"CONNECT", base + "/healthz", false, nil},
	} {
		want := tc.want
		if want == nil {
			a := serve(front.mux, tc.method, tc.path)
			want = &a
		}
		got := serve(h, tc.method, tc.path)
		if diff := cmp.Diff(*want, got); diff != "" {
			t.Errorf("%s %s (-want +front):\n%s", tc.method, tc.path, diff)
		}
		if direct := front.direct(httptest.NewRequest(tc.method, tc.path, nil)); direct != tc.api {
			t.Errorf("%s %s: straight to the API = %v, want %v", tc.method, tc.path, direct, tc.api)
		}
	}
}
