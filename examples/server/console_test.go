package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
)

// TestServesTheConsole: the server answers / with the console, and the
// console signs in and reaches the API on the same origin.
func TestServesTheConsole(t *testing.T) {
	bin := buildServer(t)
	srv := startServer(t, bin, filepath.Join(t.TempDir(), "data"), "console")
	root := strings.TrimSuffix(srv.base, "/api")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	do := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, root+path, strings.NewReader(body))
		if method != "GET" {
			req.Header.Set("X-Console", "1")
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	res, page := do("GET", "/", "")
	if res.StatusCode != 200 || !strings.Contains(page, `src="/console/assets/app.js"`) || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET / = %d %q", res.StatusCode, page)
	}
	if res, body := do("POST", "/console/session/dev-login", "{}"); res.StatusCode != 200 {
		t.Fatalf("console dev-login = %d %s", res.StatusCode, body)
	}
	if res, body := do("GET", "/console/proxy/v1/cockpit", ""); res.StatusCode != 200 || !strings.Contains(body, `"daily"`) {
		t.Errorf("cockpit through the console = %d %s", res.StatusCode, body)
	}
}
