//go:build failpoints

package httpapi

import (
	"bytes"
	"net/http"
)

// Failpoints are the handler's test hooks, compiled in only with the
// failpoints build tag (go test -tags failpoints); in other builds the
// type is empty.
type Failpoints struct {
	// BeforeResponse runs when a request with an Idempotency-Key has
	// committed its change and its response is kept, before the response
	// is written: status and body are what the client is about to get. A
	// hook that panics with http.ErrAbortHandler drops the connection
	// unanswered, as a crash or a lost network would.
	BeforeResponse func(r *http.Request, status int, body []byte)
}

func (f Failpoints) beforeResponse(r *http.Request, resp storedResponse) {
	if f.BeforeResponse != nil {
		var body bytes.Buffer
		resp.writeBody(&body)
		f.BeforeResponse(r, resp.Status, body.Bytes())
	}
}
