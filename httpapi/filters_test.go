package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

type savedFiltersOut struct {
	Filters []struct {
		Name   string         `json:"name"`
		Filter map[string]any `json:"filter"`
	} `json:"filters"`
	UpdatedAt *string `json:"updated_at"`
}

// TestInboxFilters keeps each person's saved inbox filters, refuses bad
// ones with every violation, and keeps people and tenants apart.
func TestInboxFilters(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	ann := s.devLogin(t, `{"tenant_id": "ten_flt", "email": "ann@example.com", "roles": ["viewer"]}`).Token
	bob := s.devLogin(t, `{"tenant_id": "ten_flt", "email": "bob@example.com"}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_flt_other", "email": "ann@example.com"}`).Token

	var got savedFiltersOut
	s.do(t, "GET", "/v1/me/inbox-filters", ann, nil).want(t, http.StatusOK).decode(t, &got)
	if len(got.Filters) != 0 || got.UpdatedAt != nil {
		t.Errorf("before any: %+v", got)
	}
	body := `{"filters": [{"name": "Mine", "filter": {"mine": true}}, {"name": "Risky", "filter": {"kind": "approval", "risk": "high"}},
	  {"name": "Mine", "filter": {"mine": true, "kind": "task"}}]}`
	s.do(t, "PUT", "/v1/me/inbox-filters", ann, body).want(t, http.StatusOK).decode(t, &got)
	var names []string
	for _, f := range got.Filters {
		names = append(names, f.Name)
	}
	if diff := cmp.Diff([]string{"Mine", "Risky"}, names); diff != "" || got.UpdatedAt == nil {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"mine": true, "kind": "task"}, got.Filters[0].Filter); diff != "" {
		t.Errorf("a name saved twice keeps the last (-want +got):\n%s", diff)
	}
	s.do(t, "GET", "/v1/me/inbox-filters", ann, nil).want(t, http.StatusOK).decode(t, &got)
	if len(got.Filters) != 2 {
		t.Errorf("read back: %+v", got)
	}
	// Bob and Ann of another workspace keep their own.
	for _, tok := range []string{bob, other} {
		s.do(t, "GET", "/v1/me/inbox-filters", tok, nil).want(t, http.StatusOK).decode(t, &got)
		if len(got.Filters) != 0 {
			t.Errorf("another person sees %+v", got)
		}
	}
	s.do(t, "GET", "/v1/me/inbox-filters", "", nil).want(t, http.StatusUnauthorized)

	twenty := strings.TrimSuffix(strings.Repeat(`{"name": "f", "filter": {}},`, 20), ",")
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"no filters", `{}`, []string{"body.filters:missing"}},
		{"21 filters", `{"filters": [` + twenty + `, {"name": "g", "filter": {}}]}`, []string{"body.filters:too_long"}},
		{"bad fields", `{"filters": [{"name": "", "filter": {"kind": "run", "risk": "huge", "mine": "yes", "color": "red"}}, {"filter": {}}]}`,
			[]string{"body.filters.0.filter.color:extra_forbidden", "body.filters.0.filter.kind:enum", "body.filters.0.filter.mine:type_error",
				"body.filters.0.filter.risk:enum", "body.filters.0.name:string_too_short", "body.filters.1.name:missing"}},
		{"long name", `{"filters": [{"name": "` + strings.Repeat("n", 101) + `", "filter": {}}]}`, []string{"body.filters.0.name:string_too_long"}},
	} {
		resp := s.do(t, "PUT", "/v1/me/inbox-filters", ann, c.body).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(c.want, violationList(t, resp)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// Just inside: 20 filters, a 100-character name, the empty filter.
	s.do(t, "PUT", "/v1/me/inbox-filters", ann, `{"filters": [`+twenty+`]}`).want(t, http.StatusOK)
	s.do(t, "PUT", "/v1/me/inbox-filters", ann, `{"filters": [{"name": "`+strings.Repeat("n", 100)+`", "filter": {"kind": ""}}]}`).want(t, http.StatusOK).decode(t, &got)
	if len(got.Filters) != 1 {
		t.Errorf("after the last put: %+v", got)
	}
	// Clearing them.
	s.do(t, "PUT", "/v1/me/inbox-filters", ann, `{"filters": []}`).want(t, http.StatusOK).decode(t, &got)
	if len(got.Filters) != 0 {
		t.Errorf("after clearing: %+v", got)
	}
}
