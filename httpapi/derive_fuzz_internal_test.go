package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzIdempotencyDerivations: for any caller's token, Idempotency-Key,
// URI and body, the fingerprint is the SHA-256 and the sealing key the
// crypto/hmac HMAC-SHA-256 of the NUL-terminated parts, whether the parts
// fit the stack buffer or stream past it (TestIdempotencyDerivations
// bounds their allocations).
func FuzzIdempotencyDerivations(f *testing.F) {
	f.Add("", "k1", "/v1/x", []byte(`{"a":1}`))
	f.Add(strings.Repeat("t", 65), "k", "/v1/x?a="+strings.Repeat("q", 600), []byte("{}"))
	f.Add("tok", strings.Repeat("k", 255), "/v1/x", []byte(strings.Repeat("b", 414)))
	f.Fuzz(func(t *testing.T, token, key, uri string, body []byte) {
		fp := sha256.Sum256([]byte("POST\x00" + uri + "\x00" + string(body) + "\x00"))
		if diff := cmp.Diff(hex.EncodeToString(fp[:]), fingerprintOf("POST", uri, body)); diff != "" {
			t.Errorf("fingerprintOf (-want +got):\n%s", diff)
		}
		m := hmac.New(sha256.New, []byte(token))
		m.Write([]byte("bas idempotency v1\x00" + key + "\x00POST\x00" + uri + "\x00" + string(body) + "\x00"))
		got := sealingKey(token, key, "POST", uri, body)
		if diff := cmp.Diff(m.Sum(nil), got[:]); diff != "" {
			t.Errorf("sealingKey (-want +got):\n%s", diff)
		}
	})
}

// FuzzCheckContentType: a JSON route takes a body whose Content-Type is
// absent or parses as application/json, and refuses any other: the
// shortcut for the plain form agrees with parsing it.
func FuzzCheckContentType(f *testing.F) {
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "Application/JSON",
		"text/plain", "application/json;", "application/jsonx", " application/json"} {
		f.Add(ct)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		r := httptest.NewRequest("POST", "/v1/x", strings.NewReader("{}"))
		r.Header["Content-Type"] = []string{ct}
		mt, _, err := mime.ParseMediaType(ct)
		want := ct == "" || err == nil && mt == "application/json"
		got := checkContentType(&request{R: r, route: &Route{}}) == nil
		if got != want {
			t.Errorf("Content-Type %q taken = %v, want %v", ct, got, want)
		}
	})
}
