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
	for _, q := range []string{"!!!", "-", long, "acme " + long} {
		// With another condition and alone: a q without a word is not
		// a filter without q.
		for _, filter := range []map[string]any{{"status": "waiting", "q": q}, {"q": q}} {
			r := s.do(t, "POST", "/v1/process-runs/bulk", admin, map[string]any{"filter": filter, "action": "pause"}).
				want(t, http.StatusUnprocessableEntity)
			if diff := cmp.Diff([]string{"body.filter.q:value_error"}, violationsOf(t, r)); diff != "" {
				t.Errorf("bulk filter %.20v: violations (-want +got):\n%s", filter, diff)
			}
		}
		r := s.do(t, "GET", "/v1/process-runs?q="+strings.ReplaceAll(q, " ", "+"), admin, nil).
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

// TestSeparationOfDutiesAcrossCredentials: where a step's separation of
// duties and its distinct approvers compare people, a person's API keys
// are the person: the requester may not decide through a key of theirs,
// nor the maker of the key that started the run through a session, and a
// person approving as a session and again as a key is one vote. Nothing
// is decided by a refused request.
func TestSeparationOfDutiesAcrossCredentials(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	alice := s.devLogin(t, `{"tenant_id": "ten_sod", "user_id": "alice"}`).Token
	bob := s.devLogin(t, `{"tenant_id": "ten_sod", "user_id": "bob", "roles": ["approver"]}`).Token
	aliceKey := s.newKey(t, alice, `{"name": "alice's", "roles": ["admin"]}`).Secret
	bobKey := s.newKey(t, bob, `{"name": "bob's", "roles": ["approver"]}`).Secret
	separate, twoPeople := sodProcesses(t, s, alice)
	pending := func(token, procID string) (runID, approvalID string) {
		t.Helper()
		r := s.startRun(t, token, procID, "INV-1")
		r = s.awaitRun(t, alice, r.ID, "waiting for its approval", runStatusIs("waiting"))
		return r.ID, *r.step(t, "send").ApprovalID
	}
	wantStatus := func(id, status string, votes int) {
		t.Helper()
		var a struct {
			Status    string `json:"status"`
			Approvals []any  `json:"approvals"`
		}
		s.do(t, "GET", "/v1/approvals/"+id, alice, nil).want(t, http.StatusOK).decode(t, &a)
		if a.Status != status || len(a.Approvals) != votes {
			t.Errorf("approval %s: %s with %d votes, want %s with %d", id, a.Status, len(a.Approvals), status, votes)
		}
	}

	// Started by alice's session: her key may not decide it.
	_, apr := pending(alice, separate)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", aliceKey, `{}`).want(t, http.StatusForbidden)
	s.do(t, "POST", "/v1/approvals/"+apr+"/reject", aliceKey, `{}`).want(t, http.StatusForbidden)
	wantStatus(apr, "pending", 0)
	// Started by alice's key: her session may not decide it; bob may.
	_, apr = pending(aliceKey, separate)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", alice, `{}`).want(t, http.StatusForbidden)
	wantStatus(apr, "pending", 0)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", bobKey, `{}`).want(t, http.StatusOK)
	wantStatus(apr, "approved", 0)

	// Two people: bob's session and bob's key are one of them.
	_, apr = pending(alice, twoPeople)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", bob, `{}`).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", bobKey, `{}`).want(t, http.StatusConflict)
	wantStatus(apr, "pending", 1)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", aliceKey, `{}`).want(t, http.StatusOK)
	wantStatus(apr, "approved", 2)
}

// sodProcesses creates, as token, two processes sending an email under
// approval: one whose step separates duties, one that needs two people.
func sodProcesses(t *testing.T, s *testServer, token string) (separate, twoPeople string) {
	t.Helper()
	send := func(controls string) string {
		return s.createProc(t, token, `{"name": "Send", "trigger": {"type": "manual"},
		  "steps": [{"key": "send", "type": "execute", "capability": "email.send",
		    "config": {"args": {"to": "x@example.com", "subject": "s", "body": "b"}}, "controls": `+controls+`}]}`).ID
	}
	return send(`{"require_approval": true, "separate_duties": true}`), send(`{"require_approval": true, "approvals_required": 2}`)
}

// TestSeparationOfDutiesAfterKeyRevoked: a person's key stays the person
// once revoked: the maker of a revoked key that started a run may not
// decide its approval through a session, and a vote cast through a key
// its maker revoked is still the maker's, so the maker may not vote again.
func TestSeparationOfDutiesAfterKeyRevoked(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	alice := s.devLogin(t, `{"tenant_id": "ten_sodrev", "user_id": "alice"}`).Token
	bob := s.devLogin(t, `{"tenant_id": "ten_sodrev", "user_id": "bob", "roles": ["approver"]}`).Token
	aliceKey := s.newKey(t, alice, `{"name": "alice's", "roles": ["admin"]}`)
	bobKey := s.newKey(t, bob, `{"name": "bob's", "roles": ["approver"]}`)
	separate, twoPeople := sodProcesses(t, s, alice)
	pending := func(token, procID string) string {
		t.Helper()
		r := s.startRun(t, token, procID, "INV-1")
		r = s.awaitRun(t, alice, r.ID, "waiting for its approval", runStatusIs("waiting"))
		return *r.step(t, "send").ApprovalID
	}
	status := func(id string) (string, int) {
		t.Helper()
		var a struct {
			Status    string `json:"status"`
			Approvals []any  `json:"approvals"`
		}
		s.do(t, "GET", "/v1/approvals/"+id, alice, nil).want(t, http.StatusOK).decode(t, &a)
		return a.Status, len(a.Approvals)
	}

	// Started by alice's key, which she then revokes: still hers.
	apr := pending(aliceKey.Secret, separate)
	s.do(t, "DELETE", "/v1/api-keys/"+aliceKey.ID, alice, nil).want(t, http.StatusNoContent)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", alice, `{}`).want(t, http.StatusForbidden)
	if st, n := status(apr); st != "pending" || n != 0 {
		t.Errorf("approval %s: %s with %d votes after the requester's session decided, want pending with 0", apr, st, n)
	}

	// Bob votes through his key, revokes it, and may not vote again.
	apr = pending(alice, twoPeople)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", bobKey.Secret, `{}`).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/api-keys/"+bobKey.ID, bob, nil).want(t, http.StatusNoContent)
	s.do(t, "POST", "/v1/approvals/"+apr+"/approve", bob, `{}`).want(t, http.StatusConflict)
	if st, n := status(apr); st != "pending" || n != 1 {
		t.Errorf("approval %s: %s with %d votes after bob voted twice, want pending with 1", apr, st, n)
	}
}
