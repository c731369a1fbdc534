package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestRunListQueryBoundsAsBulkFilter holds the run list's query parameters
// to the bounds of their bulk filter counterparts: the same value is
// refused by both, with the same message and type at query.x and
// body.filter.x.
func TestRunListQueryBoundsAsBulkFilter(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_bounds"}`).Token
	long := strings.Repeat("p", 101)
	for _, c := range []struct {
		field string
		value any
	}{
		{"process_id", long},
		{"status", "bogus"},
		{"q", strings.Repeat("a ", 100) + "b"},
		{"q", "!!!"},
	} {
		r := s.do(t, "POST", "/v1/process-runs/bulk", admin,
			map[string]any{"filter": map[string]any{c.field: c.value, "overdue": true}, "action": "pause"}).
			want(t, http.StatusUnprocessableEntity)
		var body struct {
			Detail []violationOut `json:"detail"`
		}
		r.decode(t, &body)
		bulk := body.Detail
		r = s.do(t, "GET", "/v1/process-runs?"+url.Values{c.field: {c.value.(string)}}.Encode(), admin, nil).
			want(t, http.StatusUnprocessableEntity)
		body.Detail = nil
		r.decode(t, &body)
		list := body.Detail
		if len(bulk) != 1 || len(list) != 1 {
			t.Errorf("%s %.12q: bulk violations %v, list violations %v, want one each", c.field, c.value, bulk, list)
			continue
		}
		if want := []any{"body", "filter", c.field}; !cmp.Equal(bulk[0].Loc, want) {
			t.Errorf("%s %.12q: bulk loc %v, want %v", c.field, c.value, bulk[0].Loc, want)
		}
		if want := []any{"query", c.field}; !cmp.Equal(list[0].Loc, want) {
			t.Errorf("%s %.12q: list loc %v, want %v", c.field, c.value, list[0].Loc, want)
		}
		if bulk[0].Msg != list[0].Msg || bulk[0].Type != list[0].Type {
			t.Errorf("%s %.12q: bulk says %q (%s), list says %q (%s)", c.field, c.value, bulk[0].Msg, bulk[0].Type, list[0].Msg, list[0].Type)
		}
	}
	// At the bound, both take it.
	at := strings.Repeat("p", 100)
	s.do(t, "GET", "/v1/process-runs?process_id="+at, admin, nil).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/process-runs/bulk", admin,
		map[string]any{"filter": map[string]any{"process_id": at}, "action": "pause"}).want(t, http.StatusAccepted)
}
