package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bas-platform/bas/httpapi"
)

// TestProcessPatchSearch changes a process's declared search fields with a
// PATCH, as the OpenAPI document says it takes them: the change makes a new
// version, runs of the new version are indexed by its fields, runs of the
// old one keep theirs, {} clears them, and a field reading a step the
// process does not have or a null search is a 422 that changes nothing.
func TestProcessPatchSearch(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_patch_search"}`).Token
	proc := s.createProc(t, admin, `{"name": "Review", "trigger": {"type": "manual"},
	  "search": {"ref": "subject.label"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}}]}`)
	old := s.startRun(t, admin, proc.ID, "Invoice 1042")

	type declared struct {
		Version int               `json:"version"`
		Search  map[string]string `json:"search"`
	}
	var got declared
	s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, `{"search": {"who": "subject.label"}}`).
		want(t, http.StatusOK).decode(t, &got)
	if diff := cmp.Diff(declared{Version: 2, Search: map[string]string{"who": "subject.label"}}, got); diff != "" {
		t.Errorf("after the search patch (-want +got):\n%s", diff)
	}
	fresh := s.startRun(t, admin, proc.ID, "Invoice 7")
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/v1/process-runs?search.who=invoice+7", []string{fresh.ID}},
		{"/v1/process-runs?search.who=invoice+1042", nil},
		{"/v1/process-runs?search.ref=invoice+1042", []string{old.ID}},
		{"/v1/process-runs?search.ref=invoice+7", nil},
	} {
		if diff := cmp.Diff(c.want, s.listIDs(t, admin, c.path), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
	}

	for _, c := range []struct {
		patch string
		want  []string
	}{
		{`{"search": {"who": "steps.nope.x"}}`, []string{"body.search.who:value_error"}},
		{`{"search": {"Who": "subject.label"}}`, []string{"body.search.Who:value_error"}},
		{`{"search": null}`, []string{"body.search:type_error"}},
		{`{"search": {"who": 1}}`, []string{"body.search.who:type_error"}},
	} {
		r := s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, c.patch).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff(c.want, violationsOf(t, r)); diff != "" {
			t.Errorf("patch %s: violations (-want +got):\n%s", c.patch, diff)
		}
	}

	got = declared{}
	s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, `{"search": {}}`).want(t, http.StatusOK).decode(t, &got)
	if got.Version != 3 || len(got.Search) != 0 {
		t.Errorf("after search {}: %+v, want version 3 with no search fields", got)
	}
	// The same fields again change nothing.
	got = declared{}
	s.do(t, "PATCH", "/v1/processes/"+proc.ID, admin, `{"search": {}}`).want(t, http.StatusOK).decode(t, &got)
	if got.Version != 3 {
		t.Errorf("after search {} again: version %d, want 3", got.Version)
	}
	// Each version lists the fields it declared.
	var versions []declared
	s.do(t, "GET", "/v1/processes/"+proc.ID+"/versions", admin, nil).want(t, http.StatusOK).decode(t, &versions)
	want := []declared{{Version: 1, Search: map[string]string{"ref": "subject.label"}},
		{Version: 2, Search: map[string]string{"who": "subject.label"}}, {Version: 3}}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
}
