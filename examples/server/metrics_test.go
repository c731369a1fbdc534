package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsEndpoint: the server serves the bas_... series on
// -metrics-addr, apart from the API, and counts the API's requests.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	p := startServer(t, buildServer(t), t.TempDir(), "metrics")
	if p.metrics == "" {
		t.Fatalf("no metrics line:\n%s", p.tail())
	}
	resp, err := http.Post(p.base+"/v1/auth/dev-login", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(p.metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if want := `bas_http_requests_total{method="POST",route="/v1/auth/dev-login",status="201"} 1`; !strings.Contains(text, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, text)
	}
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "bas_") {
			t.Errorf("series not named bas_...: %s", line)
		}
	}
	// The API port does not serve it.
	resp, err = http.Get(strings.TrimSuffix(p.base, "/api") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the API port: %d, want 404", resp.StatusCode)
	}
}
