package aitest_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/bas-platform/bas/internal/ai/aitest"
)

// The server answers a well-formed request from its script, and refuses a
// malformed one.
func Example() {
	srv := aitest.New("")
	defer srv.Close()
	srv.Push(aitest.Cue{Status: http.StatusTooManyRequests, RetryAfter: "2"})

	resp, _ := http.Post(srv.BaseURL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}`))
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"))

	resp, _ = http.Post(srv.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	resp.Body.Close()
	fmt.Println(resp.StatusCode, srv.Problems())
	// Output:
	// 429 2
	// 400 [messages must not be empty]
}
