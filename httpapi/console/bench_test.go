package console_test

import (
	"net/http"
	"testing"
)

// BenchmarkProxy compares a call through the console's proxy (cookie to
// bearer, in-process forwarding) with the same call made to the API with
// the bearer directly, over real loopback HTTP.
func BenchmarkProxy(b *testing.B) {
	s := newServer(b, true)
	c := s.browser(b)
	if r := s.do(b, c, "POST", "/console/session/dev-login", "{}", consoleHdr...); r.status != 200 {
		b.Fatalf("dev-login = %d", r.status)
	}
	tok := s.token(b, c)
	for _, bench := range []struct {
		name, path string
		client     *http.Client
		hdr        []string
	}{
		{"api/me", "/api/v1/auth/me", http.DefaultClient, []string{"Authorization", "Bearer " + tok}},
		{"console/me", "/console/proxy/v1/auth/me", c, nil},
		{"api/cockpit", "/api/v1/cockpit", http.DefaultClient, []string{"Authorization", "Bearer " + tok}},
		{"console/cockpit", "/console/proxy/v1/cockpit", c, nil},
		{"console/page", "/inbox", c, nil},
	} {
		b.Run(bench.name, func(b *testing.B) {
			for b.Loop() {
				if r := s.do(b, bench.client, "GET", bench.path, "", bench.hdr...); r.status != 200 {
					b.Fatalf("GET %s = %d", bench.path, r.status)
				}
			}
		})
	}
}
