package httpapi_test

// Matrices generated from the route table: every route refuses a principal
// lacking its permission and a key limited to other apps; every JSON write
// route refuses unknown fields, wrong JSON types, case-variant keys,
// duplicate keys and protected fields, and changes nothing doing so. A route
// added to the table without a case here fails these tests.

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/ids"
)

func routeKey(r httpapi.Route) string { return r.Method + " " + r.Path }

var paramRE = regexp.MustCompile(`[:*][^/]+`)

// anyIDs fills every path parameter with a well-formed id that exists
// nowhere.
func anyIDs(path string) string {
	return paramRE.ReplaceAllString(path, new(ids.Generator).New("zzz", testStart))
}

func isWrite(method string) bool { return method == "POST" || method == "PUT" || method == "PATCH" }

// TestEveryRouteRefusesMissingPermission: a principal whose roles lack a
// route's permission gets 403 on every route of the table that names one.
// A read permission every role holds cannot be missing; the test checks
// that it is one.
func TestEveryRouteRefusesMissingPermission(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	sessions := map[string]string{}
	for role := range access.Roles {
		sessions[role] = s.devLogin(t, `{"email": "`+role+`@example.com", "roles": ["`+role+`"]}`).Token
	}
	refused := 0
	for _, r := range s.h.Routes() {
		if r.Public || r.Perm == "" {
			continue
		}
		var lacking []string
		for role, perms := range access.Roles {
			if !slices.Contains(perms, r.Perm) {
				lacking = append(lacking, role)
			}
		}
		if len(lacking) == 0 {
			if !strings.HasSuffix(r.Perm, ".read") {
				t.Errorf("%s: permission %s is held by every role", routeKey(r), r.Perm)
			}
			continue
		}
		slices.Sort(lacking)
		for _, role := range lacking {
			var body any
			if isWrite(r.Method) {
				body = `{}`
			}
			resp := s.do(t, r.Method, anyIDs(r.Path), sessions[role], body)
			if resp.Status != http.StatusForbidden {
				t.Errorf("%s as %s (lacks %s): status %d, want 403: %s", routeKey(r), role, r.Perm, resp.Status, resp.Body)
				continue
			}
			if d := resp.detail(t); d != "missing permission "+r.Perm {
				t.Errorf("%s as %s: detail %q", routeKey(r), role, d)
			}
			refused++
		}
	}
	if refused < 50 {
		t.Errorf("only %d refusals checked", refused)
	}
}

// TestEveryAppRouteRefusesOtherAppsKey: an admin key limited to another
// app gets 403 on every route of an app.
func TestEveryAppRouteRefusesOtherAppsKey(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	keys := map[string]string{}
	key := func(app string) string {
		if k, ok := keys[app]; ok {
			return k
		}
		keys[app] = s.newKey(t, admin, `{"name": "only `+app+`", "roles": ["admin"], "apps": ["`+app+`"]}`).Secret
		return keys[app]
	}
	checked := 0
	for _, r := range s.h.Routes() {
		if r.Public || r.App == "" {
			continue
		}
		other := "docs"
		if r.App == "docs" {
			other = "crm"
		}
		var body any
		if isWrite(r.Method) {
			body = `{}`
		}
		resp := s.do(t, r.Method, anyIDs(r.Path), key(other), body)
		if resp.Status != http.StatusForbidden {
			t.Errorf("%s with a key for %s only: status %d, want 403: %s", routeKey(r), other, resp.Status, resp.Body)
			continue
		}
		if d := resp.detail(t); d != "key not allowed for app "+r.App {
			t.Errorf("%s: detail %q", routeKey(r), d)
		}
		checked++
	}
	if checked < 100 {
		t.Errorf("only %d routes checked", checked)
	}
}
