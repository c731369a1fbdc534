package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// TestBulkFilterQMustSearch refuses a bulk filter whose q the search
// cannot use (no word, or a word longer than any indexed one), as the run
// list does: the job would act on every run the rest of the filter
// selects. Nothing is changed.
func TestBulkFilterQMustSearch(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_bulkq"}`).Token
	proc := s.createProc(t, admin, `{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}}]}`)
	a := s.startRun(t, admin, proc.ID, "ACME invoice")
	b := s.startRun(t, admin, proc.ID, "Globex invoice")
	long := strings.Repeat("a", 65)
	for _, q := range []string{"!!!", long, "acme " + long} {
		r := s.do(t, "POST", "/v1/process-runs/bulk", admin,
			map[string]any{"filter": map[string]any{"status": "waiting", "q": q}, "action": "pause"}).
			want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff([]string{"body.filter.q:value_error"}, violationsOf(t, r)); diff != "" {
			t.Errorf("bulk q %.10q: violations (-want +got):\n%s", q, diff)
		}
		r = s.do(t, "GET", "/v1/process-runs?q="+strings.ReplaceAll(q, " ", "+"), admin, nil).
			want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff([]string{"query.q:value_error"}, violationsOf(t, r)); diff != "" {
			t.Errorf("list q %.10q: violations (-want +got):\n%s", q, diff)
		}
	}
	if got := s.listIDs(t, admin, "/v1/process-runs?status=paused"); len(got) != 0 {
		t.Errorf("paused runs %v after refused bulk jobs", got)
	}
	// A q with words still selects by them.
	var jo httpapi.JobOut
	s.do(t, "POST", "/v1/process-runs/bulk", admin, `{"filter": {"status": "waiting", "q": "acme!"}, "action": "pause"}`).
		want(t, http.StatusAccepted).decode(t, &jo)
	if jo.Job.Total != 1 {
		t.Errorf("bulk job over q acme: total %d, want 1", jo.Job.Total)
	}
	s.awaitRun(t, admin, a.ID, "paused", runStatusIs("paused"))
	if got := s.listIDs(t, admin, "/v1/process-runs?status=paused"); !cmp.Equal(got, []string{a.ID}) {
		t.Errorf("paused runs %v, want only %s (not %s)", got, a.ID, b.ID)
	}
}

// TestIntegerFieldWrittenAsDecimal answers a number the schema counts as an
// integer but Go cannot decode into the field (1.0, 1e3, beyond its range)
// with a 422 at the field, in api.md's words, and changes nothing.
func TestIntegerFieldWrittenAsDecimal(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{"tenant_id": "ten_ints"}`).Token
	proc := s.createProc(t, admin, `{"name": "Review", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "x", "actions": ["accept"]}}]}`)
	keysBefore := s.listIDs(t, admin, "/v1/api-keys")
	for _, c := range []struct {
		path, body, want string
	}{
		{"/v1/processes/" + proc.ID + "/what-if", `{"limit": 1e3}`, "body.limit:type_error"},
		{"/v1/processes/" + proc.ID + "/what-if", `{"limit": 1.0}`, "body.limit:type_error"},
		{"/v1/processes/" + proc.ID + "/what-if", `{"version": 2e0}`, "body.version:type_error"},
		{"/v1/processes/" + proc.ID + "/what-if", `{"version": 99999999999999999999999}`, "body.version:type_error"},
		{"/v1/api-keys", `{"name": "k", "expires_days": 3.0}`, "body.expires_days:type_error"},
		{"/v1/invoicing/invoices", `{"customer_id": "x", "memo": "[1.0]", "lines": [{"description": "a", "quantity": 1, "unit_amount_cents": 1},
		  {"description": "b", "quantity": 2.0, "unit_amount_cents": 1}], "days_until_due": 14}`, "body.lines.1.quantity:type_error"},
	} {
		r := s.do(t, "POST", c.path, admin, c.body).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff([]string{c.want}, violationsOf(t, r)); diff != "" {
			t.Errorf("%s %s: violations (-want +got):\n%s", c.path, c.body, diff)
		}
		if strings.Contains(string(r.Body), "Go struct") {
			t.Errorf("%s %s: the detail shows Go's words: %s", c.path, c.body, r.Body)
		}
	}
	if got := s.listIDs(t, admin, "/v1/api-keys"); !cmp.Equal(got, keysBefore) {
		t.Errorf("api keys %v after refused creations, were %v", got, keysBefore)
	}
}
