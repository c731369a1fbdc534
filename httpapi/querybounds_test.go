package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestListQueryBounds: a list's filter is bounded as the field it filters
// on is: just inside the bound the list answers, just outside it is a 422
// at query.{name}, with the message the field's own bound gives.
func TestListQueryBounds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_qbounds"}`).Token
	for _, c := range []struct {
		path, name string
		max        int
		also       url.Values
	}{
		// A task's assignee is at most 200 characters (a step's or
		// task.create's assignee).
		{"/v1/tasks", "assignee", 200, url.Values{"status": {"open"}}},
		// q finds a word of a customer's name or email, the longer at
		// most 320 characters.
		{"/v1/invoicing/customers", "q", 320, nil},
		// A process's function is at most 80 characters.
		{"/v1/processes", "function", 80, nil},
		// A document's queue is at most 80 characters.
		{"/v1/docs/documents", "queue", 80, nil},
	} {
		t.Run(c.path, func(t *testing.T) { checkQueryBound(t, s, admin, c.path, c.name, c.max, c.also) })
	}
}

// checkQueryBound checks the bound max of query parameter name of the list
// at path (with the parameters also).
func checkQueryBound(t *testing.T, s *testServer, token, path, name string, max int, also url.Values) {
	t.Helper()
	for _, n := range []int{max, max + 1, 70_000} {
		q := url.Values{name: {strings.Repeat("é", n)}}
		for k, v := range also {
			q[k] = v
		}
		r := s.do(t, "GET", path+"?"+q.Encode(), token, nil)
		if n == max {
			r.want(t, http.StatusOK)
			continue
		}
		r.want(t, http.StatusUnprocessableEntity)
		var body struct {
			Detail []violationOut `json:"detail"`
		}
		r.decode(t, &body)
		want := []violationOut{{Loc: []any{"query", name}, Msg: "must be at most " + strconv.Itoa(max) + " characters", Type: "string_too_long"}}
		if diff := cmp.Diff(want, body.Detail); diff != "" {
			t.Errorf("%s?%s of %d characters (-want +got):\n%s", path, name, n, diff)
		}
	}
}
