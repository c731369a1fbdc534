package httpapi_test

// Tests of the conventions every route shares (api.md section 1 and the
// error table): statuses and error bodies, tenant isolation on every route
// with a path parameter, app limits, revocation, idempotency keys, and
// secrets kept out of logs and lists. (violationsOf, which renders 422
// items as "loc.path:type", is in processes_test.go.)

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/google/go-cmp/cmp"
)

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	viewer := s.devLogin(t, `{"email": "viewer@example.com", "roles": ["viewer"]}`)

	t.Run("401 without a token", func(t *testing.T) {
		r := s.do(t, "GET", "/v1/auth/me", "", nil).want(t, http.StatusUnauthorized)
		if d := r.detail(t); d != "not authenticated" || r.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("detail %q, WWW-Authenticate %q", d, r.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("401 with an unknown token", func(t *testing.T) {
		s.do(t, "GET", "/v1/members", "bask_"+strings.Repeat("x", 40), nil).want(t, http.StatusUnauthorized)
		s.do(t, "GET", "/v1/members", "", nil, "Authorization", "Basic YTpi").want(t, http.StatusUnauthorized)
	})
	t.Run("403 missing permission", func(t *testing.T) {
		r := s.do(t, "POST", "/v1/invitations", viewer.Token, `{"email": "x@example.com"}`).want(t, http.StatusForbidden)
		if d := r.detail(t); d != "missing permission access.manage" {
			t.Errorf("detail %q", d)
		}
	})
	t.Run("403 key not allowed for the app", func(t *testing.T) {
		k := s.newKey(t, admin.Token, `{"name": "docs only", "roles": ["admin"], "apps": ["docs"]}`)
		r := s.do(t, "GET", "/v1/audit", k.Secret, nil).want(t, http.StatusForbidden)
		if d := r.detail(t); d != "key not allowed for app access" {
			t.Errorf("detail %q", d)
		}
	})
	t.Run("404 no such record", func(t *testing.T) {
		r := s.do(t, "GET", "/v1/api-keys/"+new(ids.Generator).New("key", testStart), admin.Token, nil).want(t, http.StatusNotFound)
		if d := r.detail(t); d != "api key not found" {
			t.Errorf("detail %q", d)
		}
		k := s.newKey(t, admin.Token, `{"name": "twice"}`)
		s.do(t, "DELETE", "/v1/api-keys/"+k.ID, admin.Token, nil).want(t, http.StatusNoContent)
		s.do(t, "DELETE", "/v1/api-keys/"+k.ID, admin.Token, nil).want(t, http.StatusNotFound)
		s.do(t, "GET", "/v1/no-such-thing", admin.Token, nil).want(t, http.StatusNotFound)
	})
	t.Run("409 state forbids the action", func(t *testing.T) {
		var inv struct{ Token string }
		s.do(t, "POST", "/v1/invitations", admin.Token, `{"email": "twice@example.com"}`).want(t, http.StatusCreated).decode(t, &inv)
		s.do(t, "POST", "/v1/invitations/"+inv.Token+"/accept", "", `{}`).want(t, http.StatusCreated)
		r := s.do(t, "POST", "/v1/invitations/"+inv.Token+"/accept", "", `{}`).want(t, http.StatusConflict)
		if d := r.detail(t); d != "invitation already accepted" {
			t.Errorf("detail %q", d)
		}
	})
	t.Run("413 body over 1 MiB", func(t *testing.T) {
		body := `{"name": "` + strings.Repeat("a", 1<<20) + `"}`
		r := s.do(t, "POST", "/v1/api-keys", admin.Token, body).want(t, http.StatusRequestEntityTooLarge)
		if d := r.detail(t); !strings.Contains(d, "exceeds") {
			t.Errorf("detail %q", d)
		}
	})
	t.Run("422 every violation at once", func(t *testing.T) {
		r := s.do(t, "POST", "/v1/api-keys", admin.Token,
			`{"name": "", "expires_days": 0, "roles": ["boss"], "break_glass_reason": 5}`).want(t, http.StatusUnprocessableEntity)
		want := []string{"body.break_glass_reason:type_error", "body.expires_days:greater_than_equal",
			"body.name:string_too_short", "body.roles.0:enum"}
		if diff := cmp.Diff(want, violationsOf(t, r)); diff != "" {
			t.Errorf("violations (-want +got):\n%s", diff)
		}
		// Semantic checks the schema cannot make are reported the same way.
		r = s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": " ", "apps": ["docs", "nope"]}`).want(t, http.StatusUnprocessableEntity)
		want = []string{"body.name:string_too_short", "body.apps.1:enum"}
		if diff := cmp.Diff(want, violationsOf(t, r)); diff != "" {
			t.Errorf("violations (-want +got):\n%s", diff)
		}
	})
	t.Run("422 malformed JSON and bad query", func(t *testing.T) {
		r := s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": `).want(t, http.StatusUnprocessableEntity)
		if diff := cmp.Diff([]string{"body:json_invalid"}, violationsOf(t, r)); diff != "" {
			t.Errorf("violations (-want +got):\n%s", diff)
		}
		r = s.do(t, "GET", "/v1/audit?since=yesterday&limit=0", admin.Token, nil).want(t, http.StatusUnprocessableEntity)
		if got := violationsOf(t, r); len(got) != 1 || !strings.HasPrefix(got[0], "query.") {
			t.Errorf("violations = %+v", got)
		}
	})
	t.Run("nothing changed by refused requests", func(t *testing.T) {
		var keys []map[string]any
		s.do(t, "GET", "/v1/api-keys", admin.Token, nil).want(t, http.StatusOK).decode(t, &keys)
		if len(keys) != 1 { // the docs-only key
			t.Errorf("%d keys exist, want 1", len(keys))
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true, RateLimit: 1})
	admin := s.devLogin(t, `{}`)
	s.do(t, "GET", "/v1/auth/me", admin.Token, nil).want(t, http.StatusOK)
	r := s.do(t, "GET", "/v1/auth/me", admin.Token, nil).want(t, http.StatusTooManyRequests)
	if d := r.detail(t); d != "rate limited" || r.Header.Get("Retry-After") != "1" {
		t.Errorf("detail %q, Retry-After %q", d, r.Header.Get("Retry-After"))
	}
	// Another caller has its own budget; time refills it.
	other := s.devLogin(t, `{"email": "other@example.com"}`)
	s.do(t, "GET", "/v1/auth/me", other.Token, nil).want(t, http.StatusOK)
	s.clock.Advance(time.Second)
	s.do(t, "GET", "/v1/auth/me", admin.Token, nil).want(t, http.StatusOK)
}

func TestDevLoginExistsOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{})
	s.do(t, "POST", "/v1/auth/dev-login", "", `{}`).want(t, http.StatusNotFound)
	for _, r := range s.h.Routes() {
		if r.Path == "/v1/auth/dev-login" {
			t.Errorf("the route table has %s %s", r.Method, r.Path)
		}
	}
}

// notRecordIDs lists the routes whose path parameter names something shared
// by every tenant rather than a tenant's record, with the reason.
var notRecordIDs = map[string]string{
	"/v1/capabilities/:id":                "a capability id names an entry of the catalog every tenant shares",
	"/v1/capabilities/:id/binding":        "a capability id names an entry of the catalog every tenant shares",
	"/v1/use-cases/:use_case_id":          "a use-case id names an entry of the shared catalog",
	"/v1/use-cases/:use_case_id/adoption": "a use-case id names an entry of the shared catalog; the adoption is the caller's own",
	"/v1/process-templates/:id":           "a template id names an entry of the catalog every tenant shares",
}

// idPrefixes maps a collection's path segment to the prefix of its ids, for
// well-formed ids of records that do not exist. Unknown collections get a
// made-up prefix: any unknown id must be a 404.
var idPrefixes = map[string]string{
	"api-keys": "key", "invitations": "inv", "changes": "chg", "members": "usr", "processes": "prc",
	"process-runs": "run", "tasks": "tsk", "approvals": "apr", "documents": "doc", "document-types": "dty",
	"companies": "cmp", "contacts": "con", "deals": "del", "activities": "act", "customers": "cus",
	"invoices": "inv", "boards": "brd", "items": "itm", "decisions": "dec", "templates": "tpl",
	"pipelines": "pip", "stages": "stg",
}

// TestOtherTenantsRecordsAre404 walks the route table: a key of tenant A
// asking for any record of tenant B by id gets 404 on every authenticated
// route with a path parameter, so routes added later are covered too.
func TestOtherTenantsRecordsAre404(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	a := s.devLogin(t, `{"tenant_id": "ten_a"}`)
	aKey := s.newKey(t, a.Token, `{"name": "a admin", "roles": ["admin"]}`)
	b := s.devLogin(t, `{"tenant_id": "ten_b"}`)
	b2 := s.devLogin(t, `{"tenant_id": "ten_b", "email": "b2@example.com"}`)

	// Tenant B's records, by the path segment of their collection.
	real := map[string][]string{"members": {b.UserID, b2.UserID}}
	bKey := s.newKey(t, b.Token, `{"name": "b key"}`)
	real["api-keys"] = []string{bKey.ID}
	var inv struct{ ID string }
	s.do(t, "POST", "/v1/invitations", b.Token, `{"email": "x@example.com"}`).want(t, http.StatusCreated).decode(t, &inv)
	real["invitations"] = []string{inv.ID}
	s.do(t, "PATCH", "/v1/workspace", b.Token, `{"four_eyes": true}`).want(t, http.StatusOK)
	var pending struct {
		ChangeID string `json:"change_id"`
	}
	s.do(t, "POST", "/v1/api-keys", b.Token, `{"name": "b admin", "roles": ["admin"]}`).want(t, http.StatusAccepted).decode(t, &pending)
	real["changes"] = []string{pending.ChangeID}
	var board struct{ ID string }
	s.do(t, "POST", "/v1/boards", b.Token, `{"name": "B's desk", "template": "service"}`).want(t, http.StatusCreated).decode(t, &board)
	s.do(t, "POST", "/v1/boards/"+board.ID+"/items", b.Token, `{"title": "B's ticket"}`).want(t, http.StatusCreated)
	// B's CRM records (reading the pipelines makes B's default one).
	var bDeal struct {
		ID         string `json:"id"`
		StageID    string `json:"stage_id"`
		PipelineID string `json:"pipeline_id"`
	}
	for _, c := range [][2]string{{"/v1/crm/companies", `{"name": "B Co"}`}, {"/v1/crm/contacts", `{"first_name": "B"}`},
		{"/v1/crm/activities", `{"kind": "note", "subject": "B note"}`}, {"/v1/crm/deals", `{"title": "B deal", "amount_cents": 5}`}} {
		s.do(t, "POST", c[0], b.Token, c[1]).want(t, http.StatusCreated).decode(t, &bDeal)
	}
	s.do(t, "GET", "/v1/crm/deals/"+bDeal.ID, b.Token, nil).want(t, http.StatusOK).decode(t, &bDeal)
	// And whatever B's lists hold (records other apps make or seed).
	for _, r := range s.h.Routes() {
		if r.Method != "GET" || r.Public || strings.Contains(r.Path, ":") || streams(r) {
			continue
		}
		resp := s.do(t, "GET", r.Path, b.Token, nil)
		var items []map[string]any
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &items) != nil {
			continue
		}
		seg := lastSegment(r.Path)
		for _, it := range items {
			for _, f := range []string{"id", "user_id"} {
				if id, ok := it[f].(string); ok && id != "" && !contains(real[seg], id) {
					real[seg] = append(real[seg], id)
					break
				}
			}
		}
	}
	if !contains(real["boards"], board.ID) {
		t.Errorf("B's board is not among the ids walked: %v", real["boards"])
	}

	walked := 0
	for _, r := range s.h.Routes() {
		if r.Public || !strings.Contains(r.Path, "/:") {
			continue
		}
		if _, ok := notRecordIDs[r.Path]; ok {
			continue
		}
		// One request per id of B's in the first parameter's collection, and
		// one with a well-formed id that exists nowhere.
		segs := strings.Split(r.Path, "/")
		first := slices.IndexFunc(segs, isParam)
		for _, id := range append(slices.Clone(real[segs[first-1]]), wellFormed(segs[first-1])) {
			if id == a.UserID {
				continue // the demo identity's id is a member of both tenants
			}
			path := fillParams(segs, first, id)
			// A malformed body: the record is looked up first, so 404 wins
			// over the 422 any body check would give.
			var body any
			if r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
				body = `{"malformed": `
			}
			walked++
			resp := s.do(t, r.Method, path, aKey.Secret, body)
			if resp.Status != http.StatusNotFound {
				t.Errorf("%s %s (route %s) as tenant A: status %d, want 404: %s", r.Method, path, r.Path, resp.Status, resp.Body)
			}
		}
	}
	if walked < 10 {
		t.Fatalf("walked only %d requests", walked)
	}
	// B's stage under A's own pipeline is not found either.
	var aPipes []struct{ ID string }
	s.do(t, "GET", "/v1/crm/pipelines", aKey.Secret, nil).want(t, http.StatusOK).decode(t, &aPipes)
	for _, m := range []string{"PATCH", "DELETE"} {
		path := "/v1/crm/pipelines/" + aPipes[0].ID + "/stages/" + bDeal.StageID
		if resp := s.do(t, m, path, aKey.Secret, `{"name": "x"}`); resp.Status != http.StatusNotFound {
			t.Errorf("%s %s as tenant A: status %d, want 404", m, path, resp.Status)
		}
	}
	// Nor can A put a deal in B's stage or pipeline.
	s.do(t, "POST", "/v1/crm/deals", aKey.Secret, `{"title": "x", "stage_id": "`+bDeal.StageID+`"}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", "/v1/crm/deals", aKey.Secret, `{"title": "x", "pipeline_id": "`+bDeal.PipelineID+`"}`).want(t, http.StatusUnprocessableEntity)
	var bBoard []struct {
		Count int `json:"count"`
	}
	s.do(t, "GET", "/v1/crm/pipelines/"+bDeal.PipelineID+"/board", b.Token, nil).want(t, http.StatusOK).decode(t, &bBoard)
	if len(bBoard) != 6 || bBoard[0].Count != 1 {
		t.Errorf("B's board changed: %+v", bBoard)
	}
	// Nothing of B's changed.
	s.do(t, "GET", "/v1/auth/me", bKey.Secret, nil).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/invitations/"+inv.ID, b.Token, nil).want(t, http.StatusOK)
	var ch struct{ Status string }
	s.do(t, "GET", "/v1/changes/"+pending.ChangeID, b.Token, nil).want(t, http.StatusOK).decode(t, &ch)
	if ch.Status != "pending" {
		t.Errorf("B's change is %s", ch.Status)
	}
}

func isParam(seg string) bool { return strings.HasPrefix(seg, ":") || strings.HasPrefix(seg, "*") }

// fillParams puts id in the parameter at segs[first] and a well-formed id
// of the collection before it in every later parameter.
func fillParams(segs []string, first int, id string) string {
	out := slices.Clone(segs)
	for i := first; i < len(out); i++ {
		switch {
		case i == first:
			out[i] = id
		case isParam(out[i]):
			out[i] = wellFormed(out[i-1])
		}
	}
	return strings.Join(out, "/")
}

func lastSegment(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func wellFormed(collection string) string {
	prefix, ok := idPrefixes[collection]
	if !ok {
		prefix = "zzz"
	}
	return new(ids.Generator).New(prefix, testStart)
}

func TestAppLimitedKey(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	// An admin key, so only the app limit can refuse it.
	docs := s.newKey(t, admin.Token, `{"name": "docs only", "roles": ["admin"], "apps": ["docs"]}`)

	t.Run("the processes app", func(t *testing.T) {
		var route *httpapi.Route
		for _, r := range s.h.Routes() {
			if r.App == "processes" && (route == nil || r.Method == "GET" && !strings.Contains(r.Path, ":")) {
				route = &r
			}
		}
		if route == nil {
			t.Skip("no route of the processes app yet")
		}
		var body any
		if route.Method != "GET" && route.Method != "DELETE" {
			body = `{}`
		}
		path := regexp.MustCompile(`:[^/]+`).ReplaceAllString(route.Path, new(ids.Generator).New("prc", testStart))
		r := s.do(t, route.Method, path, docs.Secret, body).want(t, http.StatusForbidden)
		if d := r.detail(t); d != "key not allowed for app processes" {
			t.Errorf("%s %s: detail %q", route.Method, path, d)
		}
	})
	t.Run("the access app", func(t *testing.T) {
		for _, path := range []string{"/v1/audit", "/v1/api-keys", "/v1/members"} {
			r := s.do(t, "GET", path, docs.Secret, nil).want(t, http.StatusForbidden)
			if d := r.detail(t); d != "key not allowed for app access" {
				t.Errorf("%s: detail %q", path, d)
			}
		}
	})
	t.Run("routes of no app", func(t *testing.T) {
		var me struct{ Apps []string }
		s.do(t, "GET", "/v1/auth/me", docs.Secret, nil).want(t, http.StatusOK).decode(t, &me)
		if !cmp.Equal(me.Apps, []string{"docs"}) {
			t.Errorf("me.apps = %v", me.Apps)
		}
	})
}

func TestRevokedAndExpiredCredentials(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)

	revoked := s.newKey(t, admin.Token, `{"name": "revoked"}`)
	s.do(t, "GET", "/v1/auth/me", revoked.Secret, nil).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/api-keys/"+revoked.ID, admin.Token, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/auth/me", revoked.Secret, nil).want(t, http.StatusUnauthorized)

	expiring := s.newKey(t, admin.Token, `{"name": "one day", "expires_days": 1}`)
	s.do(t, "GET", "/v1/auth/me", expiring.Secret, nil).want(t, http.StatusOK)
	s.clock.Advance(24*time.Hour - time.Millisecond)
	s.do(t, "GET", "/v1/auth/me", expiring.Secret, nil).want(t, http.StatusOK)
	s.clock.Advance(time.Millisecond)
	s.do(t, "GET", "/v1/auth/me", expiring.Secret, nil).want(t, http.StatusUnauthorized)
	var k struct{ Status string }
	s.do(t, "GET", "/v1/api-keys/"+expiring.ID, admin.Token, nil).want(t, http.StatusOK).decode(t, &k)
	if k.Status != "expired" {
		t.Errorf("status = %s, want expired", k.Status)
	}

	s.do(t, "POST", "/v1/auth/logout", admin.Token, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/auth/me", admin.Token, nil).want(t, http.StatusUnauthorized)
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	countKeys := func() int {
		var list []map[string]any
		s.do(t, "GET", "/v1/api-keys?limit=200", admin.Token, nil).want(t, http.StatusOK).decode(t, &list)
		return len(list)
	}
	body := `{"name": "ci"}`

	first := s.do(t, "POST", "/v1/api-keys", admin.Token, body, "Idempotency-Key", "k1").want(t, http.StatusCreated)
	again := s.do(t, "POST", "/v1/api-keys", admin.Token, body, "Idempotency-Key", "k1").want(t, http.StatusCreated)
	if !bytes.Equal(first.Body, again.Body) || again.Header.Get("Location") != first.Header.Get("Location") ||
		again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("replay differs:\nfirst  %s %v\nreplay %s %v", first.Body, first.Header, again.Body, again.Header)
	}
	if n := countKeys(); n != 1 {
		t.Fatalf("%d keys after a replay, want 1", n)
	}

	t.Run("different body", func(t *testing.T) {
		r := s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": "other"}`, "Idempotency-Key", "k1").want(t, http.StatusConflict)
		if d := r.detail(t); !strings.Contains(d, "different request") {
			t.Errorf("detail %q", d)
		}
		s.do(t, "POST", "/v1/invitations", admin.Token, body, "Idempotency-Key", "k1").want(t, http.StatusConflict)
	})
	t.Run("a secret is replayed only to its credential", func(t *testing.T) {
		other := s.devLogin(t, `{}`) // a second session of the same person
		before := countKeys()
		r := s.do(t, "POST", "/v1/api-keys", other.Token, body, "Idempotency-Key", "k1").want(t, http.StatusConflict)
		if d := r.detail(t); !strings.Contains(d, "another credential") || strings.Contains(string(r.Body), "basik_") {
			t.Errorf("detail %q", d)
		}
		if n := countKeys(); n != before {
			t.Errorf("%d keys, want %d: the key acted twice", n, before)
		}
	})
	t.Run("keys belong to the person, not the session", func(t *testing.T) {
		proc := `{"name": "Keyed", "trigger": {"type": "manual"}, "steps": [{"key": "a", "type": "wait", "config": {"duration": "1h"}}]}`
		first := s.do(t, "POST", "/v1/processes", admin.Token, proc, "Idempotency-Key", "p1").want(t, http.StatusCreated)
		again := s.devLogin(t, `{}`) // signed in again
		r := s.do(t, "POST", "/v1/processes", again.Token, proc, "Idempotency-Key", "p1").want(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, first.Body) {
			t.Errorf("a new session's retry was not replayed: %s", r.Body)
		}
		// An API key is a principal of its own.
		k := s.newKey(t, admin.Token, `{"name": "own scope", "roles": ["admin"]}`)
		r = s.do(t, "POST", "/v1/processes", k.Secret, proc, "Idempotency-Key", "p1").want(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(r.Body, first.Body) {
			t.Errorf("an API key shared a person's key")
		}
	})
	t.Run("key too long", func(t *testing.T) {
		r := s.do(t, "POST", "/v1/api-keys", admin.Token, body, "Idempotency-Key", strings.Repeat("k", 256)).want(t, http.StatusUnprocessableEntity)
		want := []string{"header.Idempotency-Key:string_too_long"}
		if diff := cmp.Diff(want, violationsOf(t, r)); diff != "" {
			t.Errorf("violations (-want +got):\n%s", diff)
		}
		s.do(t, "POST", "/v1/api-keys", admin.Token, body, "Idempotency-Key", strings.Repeat("k", 255)).want(t, http.StatusCreated)
	})
	t.Run("a refused body frees the key", func(t *testing.T) {
		s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": ""}`, "Idempotency-Key", "k2").want(t, http.StatusUnprocessableEntity)
		s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": "fixed"}`, "Idempotency-Key", "k2").want(t, http.StatusCreated)
	})
	t.Run("errors are replayed too", func(t *testing.T) {
		id := new(ids.Generator).New("chg", testStart)
		s.do(t, "POST", "/v1/changes/"+id+"/approve", admin.Token, `{}`, "Idempotency-Key", "k3").want(t, http.StatusNotFound)
		r := s.do(t, "POST", "/v1/changes/"+id+"/approve", admin.Token, `{}`, "Idempotency-Key", "k3").want(t, http.StatusNotFound)
		if r.Header.Get("Idempotent-Replayed") != "true" {
			t.Error("the 404 was not replayed")
		}
	})
	t.Run("kept for 24 hours", func(t *testing.T) {
		before := countKeys()
		s.clock.Advance(24 * time.Hour)
		r := s.do(t, "POST", "/v1/api-keys", admin.Token, body, "Idempotency-Key", "k1").want(t, http.StatusCreated)
		if r.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(r.Body, first.Body) {
			t.Error("a day-old key was replayed")
		}
		if n := countKeys(); n != before+1 {
			t.Errorf("%d keys, want %d", n, before+1)
		}
	})
}

func TestIdempotencyKeyInFlight(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	s := newTestServerWith(t, httpapi.Options{DevLogin: true}, func(h *httpapi.Handler) {
		h.HandleForTest("POST", "/v1/test/slow", "", "", func(c *httpapi.Ctx) error {
			calls.Add(1)
			started <- struct{}{}
			<-release
			return c.JSON(http.StatusCreated, map[string]string{"done": "yes"})
		})
	})
	// A failing test must not leave the first request blocked (the
	// server's Close would wait for it).
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free)
	admin := s.devLogin(t, `{}`)

	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.srv.URL+"/api/v1/test/slow", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+admin.Token)
		req.Header.Set("Idempotency-Key", "slow")
		resp, err := s.srv.Client().Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	testwait.Recv(t, started, "the first request reached the handler")
	r := s.do(t, "POST", "/v1/test/slow", admin.Token, `{}`, "Idempotency-Key", "slow").want(t, http.StatusConflict)
	if d := r.detail(t); !strings.Contains(d, "in progress") {
		t.Errorf("detail %q", d)
	}
	free()
	if res := testwait.Recv(t, done, "the first request was answered"); res.err != nil || res.status != http.StatusCreated {
		t.Fatalf("first request: %d, %v", res.status, res.err)
	}
	s.do(t, "POST", "/v1/test/slow", admin.Token, `{}`, "Idempotency-Key", "slow").want(t, http.StatusCreated)
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
}

func TestNoSecretInLogsOrLists(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	secrets := map[string]string{"dev session": admin.Token}

	k := s.newKey(t, admin.Token, `{"name": "ci", "expires_days": 30}`)
	secrets["api key"] = k.Secret
	replayed := s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": "robot"}`, "Idempotency-Key", "r1").want(t, http.StatusCreated)
	s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": "robot"}`, "Idempotency-Key", "r1").want(t, http.StatusCreated)
	var robot testKey
	replayed.decode(t, &robot)
	secrets["replayed api key"] = robot.Secret

	var inv struct{ Token string }
	s.do(t, "POST", "/v1/invitations", admin.Token, `{"email": "new@example.com"}`).want(t, http.StatusCreated).decode(t, &inv)
	secrets["invitation"] = inv.Token
	var invitee testSession
	s.do(t, "POST", "/v1/invitations/"+inv.Token+"/accept", "", `{"name": "New"}`, "Idempotency-Key", "a1").
		want(t, http.StatusCreated).decode(t, &invitee)
	s.do(t, "POST", "/v1/invitations/"+inv.Token+"/accept", "", `{"name": "New"}`, "Idempotency-Key", "a1").want(t, http.StatusCreated)
	secrets["invitee session"] = invitee.Token

	s.do(t, "POST", "/v1/auth/email", "", `{"email": "demo@example.com"}`).want(t, http.StatusAccepted)
	code := codeFromOutbox(t, s, admin.Token)
	secrets["sign-in code"] = code
	var coded testSession
	s.do(t, "POST", "/v1/auth/code", "", `{"email": "demo@example.com", "code": "`+code+`"}`).want(t, http.StatusCreated).decode(t, &coded)
	secrets["code session"] = coded.Token
	s.do(t, "GET", "/v1/auth/me", "bask_"+strings.Repeat("q", 40), nil).want(t, http.StatusUnauthorized)

	// The outbox is the mail transport: it holds what it delivered. Every
	// other list and record must not.
	for _, path := range []string{"/v1/api-keys", "/v1/invitations", "/v1/members", "/v1/audit?limit=200",
		"/v1/changes", "/v1/workspace", "/v1/auth/me", "/v1/api-keys/" + k.ID} {
		body := s.do(t, "GET", path, admin.Token, nil).want(t, http.StatusOK).Body
		for name, secret := range secrets {
			if bytes.Contains(body, []byte(secret)) {
				t.Errorf("GET %s shows the %s", path, name)
			}
		}
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "/api/v1/invitations/basi_") {
		t.Fatalf("the access log has no accept request; logs:\n%s", logs)
	}
	for name, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs show the %s", name)
		}
	}
}

// codeFromOutbox reads the newest sign-in code from the outbox.
func codeFromOutbox(t *testing.T, s *testServer, adminToken string) string {
	t.Helper()
	var msgs []struct {
		To   []string `json:"to"`
		Body string   `json:"body"`
	}
	s.do(t, "GET", "/v1/outbox", adminToken, nil).want(t, http.StatusOK).decode(t, &msgs)
	for _, m := range msgs {
		if c := regexp.MustCompile(`code for .* is (\d{8})\.`).FindStringSubmatch(m.Body); c != nil {
			return c[1]
		}
	}
	t.Fatalf("no sign-in code in the outbox: %+v", msgs)
	return ""
}
