package httpapi

import (
	"net/http/httptest"
	"testing"
)

// TestLogPathAsTheExpression: logPath cuts a secret in a path down to its
// lookup part exactly as secretInPath alone does, with or without the
// quick look that lets most paths skip it.
func TestLogPathAsTheExpression(t *testing.T) {
	secret := "0123456789abcdefghijklmnopqrstuv"
	for _, path := range []string{
		"/api/v1/processes/prc_1/start",
		"/api/v1/invitations/basi_abcdefgh" + secret + "/accept",
		"/api/v1/x/bask_abcdefgh" + secret,
		"/api/v1/x/bass_abcdefgh" + secret + "/y/basi_12345678" + secret,
		"/api/v1/basket/bas/basx_abcdefgh" + secret,
		"/api/v1/bas", "/api/v1/basi", "/api/v1/basi_", "/api/v1/bbasi_abcdefgh" + secret,
		"/api/v1/basbasi_abcdefgh" + secret,
	} {
		want := secretInPath.ReplaceAllString(path, "${1}...")
		if got := logPath(httptest.NewRequest("GET", path, nil)); got != want {
			t.Errorf("logPath(%s) = %s, want %s", path, got, want)
		}
	}
	if got := logPath(httptest.NewRequest("GET", "/v1/invitations/basi_abcdefgh"+secret, nil)); got != "/v1/invitations/basi_abcdefgh..." {
		t.Errorf("the invitation's secret is logged: %s", got)
	}
}
