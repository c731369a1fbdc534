package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
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

// TestListIDFilterBounds: every id filter a list takes (a query parameter
// named *_id) is at most 100 characters, as the run list's process_id and
// the bulk filter's are: just outside is a 422 at query.{name} before the
// handler runs; just inside the list answers (an unknown board is its 404).
// The table must name every id filter the OpenAPI document declares.
func TestListIDFilterBounds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_idbounds"}`).Token
	cases := []struct {
		path, name string
		inside     int // the status just inside the bound
	}{
		{"/v1/process-runs", "process_id", http.StatusOK},
		{"/v1/crm/companies", "owner_id", http.StatusOK},
		{"/v1/crm/contacts", "company_id", http.StatusOK},
		{"/v1/crm/contacts", "owner_id", http.StatusOK},
		{"/v1/crm/deals", "pipeline_id", http.StatusOK},
		{"/v1/crm/deals", "stage_id", http.StatusOK},
		{"/v1/crm/deals", "company_id", http.StatusOK},
		{"/v1/crm/deals", "contact_id", http.StatusOK},
		{"/v1/crm/deals", "owner_id", http.StatusOK},
		{"/v1/crm/activities", "deal_id", http.StatusOK},
		{"/v1/crm/activities", "contact_id", http.StatusOK},
		{"/v1/crm/activities", "company_id", http.StatusOK},
		{"/v1/docs/documents", "type_id", http.StatusOK},
		{"/v1/invoicing/customers", "company_id", http.StatusOK},
		{"/v1/invoicing/invoices", "customer_id", http.StatusOK},
		{"/v1/boards/brd_none/items", "status_id", http.StatusNotFound},
		{"/v1/boards/brd_none/items", "group_id", http.StatusNotFound},
		{"/v1/boards/brd_none/items", "assignee_id", http.StatusNotFound},
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name, In string } `json:"parameters"`
		} `json:"paths"`
	}
	s.do(t, "GET", "/v1/openapi.json", "", nil).want(t, http.StatusOK).decode(t, &doc)
	var declared, tested []string
	for path, ops := range doc.Paths {
		for _, op := range ops {
			for _, p := range op.Parameters {
				if p.In == "query" && strings.HasSuffix(p.Name, "_id") {
					declared = append(declared, strings.Replace(path, "{id}", "brd_none", 1)+"?"+p.Name)
				}
			}
		}
	}
	for _, c := range cases {
		tested = append(tested, c.path+"?"+c.name)
	}
	slices.Sort(declared)
	slices.Sort(tested)
	if diff := cmp.Diff(declared, tested); diff != "" {
		t.Errorf("id filters declared (-) and tested (+):\n%s", diff)
	}
	for _, c := range cases {
		t.Run(c.path+"?"+c.name, func(t *testing.T) {
			for _, n := range []int{100, 101} {
				r := s.do(t, "GET", c.path+"?"+url.Values{c.name: {strings.Repeat("x", n)}}.Encode(), admin, nil)
				if n == 100 {
					r.want(t, c.inside)
					continue
				}
				r.want(t, http.StatusUnprocessableEntity)
				var body struct {
					Detail []violationOut `json:"detail"`
				}
				r.decode(t, &body)
				want := []violationOut{{Loc: []any{"query", c.name}, Msg: "must be at most 100 characters", Type: "string_too_long"}}
				if diff := cmp.Diff(want, body.Detail); diff != "" {
					t.Errorf("%d characters (-want +got):\n%s", n, diff)
				}
			}
		})
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
