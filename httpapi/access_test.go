package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDevLoginAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	r := s.do(t, "POST", "/v1/auth/dev-login", "", `{}`).want(t, http.StatusCreated)
	var got map[string]any
	r.decode(t, &got)
	want := map[string]any{"tenant_id": "ten_demo", "user_id": "usr_demo", "email": "demo@example.com",
		"roles": []any{"admin"}, "apps": nil, "expires_at": "2025-03-08T09:00:00Z"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "token" })); diff != "" {
		t.Errorf("dev-login (-want +got):\n%s", diff)
	}
	if r.Header.Get("Location") != "/api/v1/auth/me" {
		t.Errorf("Location = %q", r.Header.Get("Location"))
	}

	var me map[string]any
	s.do(t, "GET", "/v1/auth/me", got["token"].(string), nil).want(t, http.StatusOK).decode(t, &me)
	if me["user_id"] != "usr_demo" || me["name"] != "" || len(me["permissions"].([]any)) != 20 ||
		!cmp.Equal(me["departments"], []any{}) {
		t.Errorf("me = %v", me)
	}
	s.do(t, "POST", "/v1/auth/dev-login", "", `{"roles": ["root"], "tenant_id": "no spaces"}`).want(t, http.StatusUnprocessableEntity)
}

func TestEmailSignInAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	signIn := func(code string) *testResponse {
		return s.do(t, "POST", "/v1/auth/code", "", `{"email": "demo@example.com", "code": "`+code+`"}`)
	}
	s.do(t, "POST", "/v1/auth/email", "", `{"email": "demo@example.com"}`).want(t, http.StatusAccepted)
	code := codeFromOutbox(t, s, admin.Token)
	wrong := "00000000"
	if code == wrong {
		wrong = "11111111"
	}
	for range 5 {
		signIn(wrong).want(t, http.StatusUnauthorized)
	}
	signIn(code).want(t, http.StatusUnauthorized) // burnt

	s.clock.Advance(time.Second) // the next code's message sorts first
	s.do(t, "POST", "/v1/auth/email", "", `{"email": "Demo@Example.com"}`).want(t, http.StatusAccepted)
	var sess testSession
	signIn(codeFromOutbox(t, s, admin.Token)).want(t, http.StatusCreated).decode(t, &sess)
	if sess.UserID != "usr_demo" || sess.TenantID != "ten_demo" {
		t.Errorf("session = %+v", sess)
	}
	s.do(t, "GET", "/v1/auth/me", sess.Token, nil).want(t, http.StatusOK)

	// Unknown addresses get the same answer and no mail.
	s.do(t, "POST", "/v1/auth/email", "", `{"email": "nobody@example.com"}`).want(t, http.StatusAccepted)
	s.do(t, "POST", "/v1/auth/email", "", `{"email": "not an address"}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", "/v1/auth/code", "", `{"email": "demo@example.com", "code": "123"}`).want(t, http.StatusUnprocessableEntity)
}

func TestKeysAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	member := s.devLogin(t, `{"email": "mem@example.com", "roles": ["member"]}`)

	r := s.do(t, "POST", "/v1/api-keys", admin.Token, `{"name": "ci", "roles": ["viewer"], "apps": ["docs"], "expires_days": 30}`).
		want(t, http.StatusCreated)
	var created map[string]any
	r.decode(t, &created)
	id := created["id"].(string)
	for _, f := range []string{"id", "name", "roles", "apps", "prefix", "expires_at", "created_at", "secret"} {
		if _, ok := created[f]; !ok {
			t.Errorf("the created key has no %s: %v", f, created)
		}
	}
	if created["expires_at"] != "2025-03-31T09:00:00Z" || r.Header.Get("Location") != "/api/v1/api-keys/"+id {
		t.Errorf("expires_at %v, Location %q", created["expires_at"], r.Header.Get("Location"))
	}
	var one map[string]any
	s.do(t, "GET", "/v1/api-keys/"+id, admin.Token, nil).want(t, http.StatusOK).decode(t, &one)
	if _, ok := one["secret"]; ok || one["prefix"] != created["prefix"] {
		t.Errorf("a later read = %v", one)
	}

	// A member manages its own keys, within its own grant.
	mk := s.newKey(t, member.Token, `{"name": "mine", "roles": ["viewer"]}`)
	s.do(t, "POST", "/v1/api-keys", member.Token, `{"name": "admin", "roles": ["admin"]}`).want(t, http.StatusForbidden)
	var mine []struct{ ID string }
	s.do(t, "GET", "/v1/api-keys", member.Token, nil).want(t, http.StatusOK).decode(t, &mine)
	if len(mine) != 1 || mine[0].ID != mk.ID {
		t.Errorf("the member's list = %+v", mine)
	}
	s.do(t, "GET", "/v1/api-keys/"+id, member.Token, nil).want(t, http.StatusForbidden)
	s.do(t, "DELETE", "/v1/api-keys/"+id, member.Token, nil).want(t, http.StatusForbidden)
	s.do(t, "DELETE", "/v1/api-keys/"+mk.ID, member.Token, nil).want(t, http.StatusNoContent)
	var all []struct{ ID string }
	s.do(t, "GET", "/v1/api-keys", admin.Token, nil).want(t, http.StatusOK).decode(t, &all)
	if len(all) != 1 || all[0].ID != id {
		t.Errorf("the admin's list = %+v", all)
	}
}

func TestInvitationsAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)

	r := s.do(t, "POST", "/v1/invitations", admin.Token, `{"email": "bea@example.com", "roles": ["approver"]}`).want(t, http.StatusCreated)
	var inv struct {
		ID, Token, Status, Email string
		ExpiresAt                time.Time `json:"expires_at"`
		EmailSent                bool      `json:"email_sent"`
	}
	r.decode(t, &inv)
	if inv.Status != "pending" || !inv.EmailSent || !inv.ExpiresAt.Equal(testStart.Add(7*24*time.Hour)) ||
		r.Header.Get("Location") != "/api/v1/invitations/"+inv.ID {
		t.Fatalf("invitation = %+v", inv)
	}
	var outbox []struct{ Body string }
	s.do(t, "GET", "/v1/outbox", admin.Token, nil).want(t, http.StatusOK).decode(t, &outbox)
	if len(outbox) != 1 || !strings.Contains(outbox[0].Body, inv.Token) {
		t.Errorf("outbox = %+v", outbox)
	}

	s.do(t, "POST", "/v1/invitations/basi_"+strings.Repeat("0", 40)+"/accept", "", `{}`).want(t, http.StatusNotFound)
	s.do(t, "POST", "/v1/invitations/"+inv.Token+"/accept", "", `{"name": "`+strings.Repeat("n", 201)+`"}`).
		want(t, http.StatusUnprocessableEntity)
	var bea testSession
	s.do(t, "POST", "/v1/invitations/"+inv.Token+"/accept", "", `{"name": "Bea", "password": null}`).
		want(t, http.StatusCreated).decode(t, &bea)
	if !cmp.Equal(bea.Roles, []string{"approver"}) || bea.Email != "bea@example.com" {
		t.Errorf("invitee session = %+v", bea)
	}

	var members []map[string]any
	s.do(t, "GET", "/v1/members", bea.Token, nil).want(t, http.StatusOK).decode(t, &members)
	if len(members) != 2 {
		t.Fatalf("members = %v", members)
	}
	for _, m := range members {
		for _, f := range []string{"user_id", "email", "name", "roles", "apps", "departments"} {
			if _, ok := m[f]; !ok {
				t.Errorf("member without %s: %v", f, m)
			}
		}
	}

	var other struct{ ID, Token string }
	s.do(t, "POST", "/v1/invitations", admin.Token, `{"email": "c@example.com"}`).want(t, http.StatusCreated).decode(t, &other)
	s.do(t, "DELETE", "/v1/invitations/"+other.ID, admin.Token, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/invitations/"+other.ID, admin.Token, nil).want(t, http.StatusNotFound)
	r = s.do(t, "POST", "/v1/invitations/"+other.Token+"/accept", "", `{}`).want(t, http.StatusConflict)
	if d := r.detail(t); d != "invitation revoked" {
		t.Errorf("detail %q", d)
	}
	var list []struct{ ID, Status string }
	s.do(t, "GET", "/v1/invitations", admin.Token, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 || list[0].Status != "accepted" {
		t.Errorf("invitations = %+v", list)
	}
	s.do(t, "GET", "/v1/invitations", bea.Token, nil).want(t, http.StatusForbidden)
}

func TestFourEyesAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	alice := s.devLogin(t, `{}`)
	bob := s.devLogin(t, `{"email": "bob@example.com"}`)
	viewer := s.devLogin(t, `{"email": "vic@example.com", "roles": ["viewer"]}`)

	var ws map[string]any
	s.do(t, "PATCH", "/v1/workspace", alice.Token, `{"four_eyes": true, "name": "Acme"}`).want(t, http.StatusOK).decode(t, &ws)
	if ws["four_eyes"] != true || ws["name"] != "Acme" || ws["id"] != "ten_demo" || ws["created_at"] != "2025-03-01T09:00:00Z" {
		t.Errorf("workspace = %v", ws)
	}
	s.do(t, "PATCH", "/v1/workspace", viewer.Token, `{"name": "Mine"}`).want(t, http.StatusForbidden)
	s.do(t, "PATCH", "/v1/workspace", alice.Token, `{"name": ""}`).want(t, http.StatusUnprocessableEntity)

	r := s.do(t, "POST", "/v1/api-keys", alice.Token, `{"name": "ops", "roles": ["admin"]}`).want(t, http.StatusAccepted)
	var key struct {
		Secret   string
		Status   string
		ChangeID string `json:"change_id"`
	}
	r.decode(t, &key)
	if key.Status != "pending" || r.Header.Get("Location") != "/api/v1/changes/"+key.ChangeID {
		t.Fatalf("pending key = %+v, Location %q", key, r.Header.Get("Location"))
	}
	s.do(t, "GET", "/v1/auth/me", key.Secret, nil).want(t, http.StatusUnauthorized)

	var pending []struct{ ID, Kind, Status string }
	s.do(t, "GET", "/v1/changes?status=pending", viewer.Token, nil).want(t, http.StatusOK).decode(t, &pending)
	if len(pending) != 1 || pending[0].ID != key.ChangeID {
		t.Fatalf("pending = %+v", pending)
	}
	s.do(t, "GET", "/v1/changes?status=maybe", alice.Token, nil).want(t, http.StatusUnprocessableEntity)
	r = s.do(t, "POST", "/v1/changes/"+key.ChangeID+"/approve", alice.Token, `{"note": "mine"}`).want(t, http.StatusForbidden)
	if d := r.detail(t); !strings.Contains(d, "requester") {
		t.Errorf("detail %q", d)
	}
	s.do(t, "POST", "/v1/changes/"+key.ChangeID+"/approve", viewer.Token, `{}`).want(t, http.StatusForbidden)
	var ch map[string]any
	s.do(t, "POST", "/v1/changes/"+key.ChangeID+"/approve", bob.Token, `{"note": "ok"}`).want(t, http.StatusOK).decode(t, &ch)
	if ch["status"] != "approved" || ch["decided_by"] != "usr_"+strings.TrimPrefix(ch["decided_by"].(string), "usr_") || ch["note"] != "ok" {
		t.Errorf("change = %v", ch)
	}
	s.do(t, "GET", "/v1/auth/me", key.Secret, nil).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/changes/"+key.ChangeID+"/reject", bob.Token, `{}`).want(t, http.StatusConflict)

	// Break glass: at once, for 24 hours, with its reason in the audit log.
	var bg struct {
		Secret    string
		ExpiresAt time.Time `json:"expires_at"`
	}
	s.do(t, "POST", "/v1/api-keys", alice.Token, `{"name": "incident", "roles": ["admin"], "expires_days": 90, "break_glass_reason": "INC-7"}`).
		want(t, http.StatusCreated).decode(t, &bg)
	if !bg.ExpiresAt.Equal(testStart.Add(24 * time.Hour)) {
		t.Errorf("break-glass expiry = %v", bg.ExpiresAt)
	}
	var entries []struct{ Action, Reason string }
	s.do(t, "GET", "/v1/audit?entity=api_key", alice.Token, nil).want(t, http.StatusOK).decode(t, &entries)
	found := false
	for _, e := range entries {
		found = found || e.Action == "api_key.create" && e.Reason == "INC-7"
	}
	if !found {
		t.Errorf("no audited break-glass grant in %+v", entries)
	}

	// Turning four-eyes off waits too.
	var off struct {
		Change struct{ ID, Kind, Status string }
	}
	s.do(t, "PATCH", "/v1/workspace", alice.Token, `{"four_eyes": false}`).want(t, http.StatusAccepted).decode(t, &off)
	if off.Change.Kind != "access.four_eyes_off" || off.Change.Status != "pending" {
		t.Errorf("202 body = %+v", off)
	}
	s.do(t, "POST", "/v1/changes/"+off.Change.ID+"/approve", bob.Token, `{}`).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/workspace", viewer.Token, nil).want(t, http.StatusOK).decode(t, &ws)
	if ws["four_eyes"] != false {
		t.Errorf("four_eyes after approval = %v", ws["four_eyes"])
	}
}

func TestAuditAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	s.clock.Advance(time.Hour)
	k := s.newKey(t, admin.Token, `{"name": "ci"}`)
	s.clock.Advance(time.Second) // ids order by millisecond
	s.do(t, "DELETE", "/v1/api-keys/"+k.ID, admin.Token, nil).want(t, http.StatusNoContent)

	var entries []struct {
		ID, Actor, Action, Entity, Reason string
		EntityID                          string          `json:"entity_id"`
		At                                time.Time       `json:"at"`
		Before                            json.RawMessage `json:"before"`
		After                             json.RawMessage `json:"after"`
	}
	s.do(t, "GET", "/v1/audit?entity=api_key", admin.Token, nil).want(t, http.StatusOK).decode(t, &entries)
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
		if e.EntityID != k.ID || e.Actor != "usr_demo" {
			t.Errorf("entry = %+v", e)
		}
	}
	if diff := cmp.Diff([]string{"api_key.revoke", "api_key.create"}, actions); diff != "" {
		t.Errorf("actions, newest first (-want +got):\n%s", diff)
	}
	if string(entries[0].After) != "null" || string(entries[1].Before) != "null" {
		t.Errorf("revoke after %s, create before %s", entries[0].After, entries[1].Before)
	}

	since := testStart.Add(30 * time.Minute).Format(time.RFC3339)
	s.do(t, "GET", "/v1/audit?since="+since, admin.Token, nil).want(t, http.StatusOK).decode(t, &entries)
	if len(entries) != 2 {
		t.Errorf("%d entries since %s, want 2", len(entries), since)
	}
	s.do(t, "GET", "/v1/audit?actor=nobody", admin.Token, nil).want(t, http.StatusOK).decode(t, &entries)
	if len(entries) != 0 {
		t.Errorf("%d entries of nobody", len(entries))
	}
	s.do(t, "GET", "/v1/audit?limit=1", admin.Token, nil).want(t, http.StatusOK).decode(t, &entries)
	if len(entries) != 1 {
		t.Errorf("limit=1 gave %d", len(entries))
	}
	// Every role reads the audit log (audit.read is a *.read permission).
	viewer := s.devLogin(t, `{"email": "vic@example.com", "roles": ["viewer"]}`)
	s.do(t, "GET", "/v1/audit", viewer.Token, nil).want(t, http.StatusOK)
}

func TestLogoutWithAKeyIsAConflict(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	k := s.newKey(t, admin.Token, `{"name": "ci"}`)
	s.do(t, "POST", "/v1/auth/logout", k.Secret, nil).want(t, http.StatusConflict)
	s.do(t, "GET", "/v1/auth/me", k.Secret, nil).want(t, http.StatusOK)
}
