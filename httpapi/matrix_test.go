package httpapi_test

// Matrices generated from the route table: every route refuses a principal
// lacking its permission and a key limited to other apps; every JSON write
// route refuses unknown fields, wrong JSON types, case-variant keys,
// duplicate keys and protected fields, and changes nothing doing so. A route
// added to the table without a case here fails these tests.

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/internal/testwait"
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

// bodyField names, for each JSON write route of the table, a field its
// body takes that is not of type object or any: the matrix sends it with
// a wrong JSON type and with a case variant of its name. A route missing
// here fails TestWriteBodiesRefuseMalformedInput.
var bodyField = map[string]string{
	"POST /v1/processes/:id/start":                            "subject",
	"POST /v1/process-runs/:id/cancel":                        "",
	"POST /v1/events":                                         "name",
	"POST /v1/tasks/:id/complete":                             "action",
	"POST /v1/tasks/:id/claim":                                "",
	"POST /v1/tasks/:id/unclaim":                              "",
	"POST /v1/tasks/:id/assign":                               "assignee",
	"PUT /v1/me/inbox-filters":                                "filters",
	"POST /v1/approvals/:id/approve":                          "args",
	"POST /v1/approvals/:id/reject":                           "reason",
	"POST /v1/processes":                                      "name",
	"PATCH /v1/processes/:id":                                 "name",
	"POST /v1/auth/dev-login":                                 "email",
	"POST /v1/auth/email":                                     "email",
	"POST /v1/auth/code":                                      "code",
	"POST /v1/auth/logout":                                    "",
	"POST /v1/api-keys":                                       "name",
	"POST /v1/invitations":                                    "email",
	"POST /v1/invitations/:token/accept":                      "name",
	"PATCH /v1/workspace":                                     "name",
	"POST /v1/changes/:id/approve":                            "note",
	"POST /v1/changes/:id/reject":                             "note",
	"PUT /v1/capabilities/:id/binding":                        "provider_id",
	"PATCH /v1/automation":                                    "paused",
	"PATCH /v1/processes/:id/automation":                      "percent",
	"POST /v1/decisions":                                      "name",
	"POST /v1/decisions/:name/evaluate":                       "input",
	"POST /v1/decisions/:name/feedback":                       "results",
	"POST /v1/decisions/:name/outcomes":                       "input",
	"POST /v1/docs/types":                                     "name",
	"POST /v1/docs/types/from-template":                       "template_id",
	"PATCH /v1/docs/types/:id":                                "name",
	"POST /v1/docs/documents/:id/fields":                      "fields",
	"PATCH /v1/docs/documents/:id/fields":                     "fields",
	"POST /v1/docs/documents/:id/approve":                     "note",
	"POST /v1/docs/documents/:id/reject":                      "note",
	"POST /v1/docs/documents/:id/feedback":                    "results",
	"POST /v1/process-templates/install":                      "template_ids",
	"PUT /v1/use-cases/profile":                               "size",
	"PUT /v1/use-cases/members/:user_id/departments":          "departments",
	"PUT /v1/use-cases/:use_case_id/adoption":                 "notes",
	"POST /v1/boards":                                         "name",
	"PATCH /v1/boards/:id":                                    "name",
	"POST /v1/boards/:id/statuses":                            "name",
	"PATCH /v1/boards/:id/statuses/:part_id":                  "name",
	"POST /v1/boards/:id/columns":                             "name",
	"PATCH /v1/boards/:id/columns/:part_id":                   "name",
	"POST /v1/boards/:id/groups":                              "name",
	"PATCH /v1/boards/:id/groups/:part_id":                    "name",
	"POST /v1/boards/:id/items":                               "title",
	"PATCH /v1/boards/:id/items/:part_id":                     "title",
	"POST /v1/crm/companies":                                  "name",
	"PATCH /v1/crm/companies/:id":                             "name",
	"POST /v1/crm/contacts":                                   "first_name",
	"PATCH /v1/crm/contacts/:id":                              "first_name",
	"POST /v1/crm/deals":                                      "title",
	"PATCH /v1/crm/deals/:id":                                 "title",
	"POST /v1/crm/activities":                                 "subject",
	"PATCH /v1/crm/activities/:id":                            "subject",
	"POST /v1/crm/pipelines":                                  "name",
	"PATCH /v1/crm/pipelines/:id":                             "name",
	"POST /v1/crm/pipelines/:id/stages":                       "name",
	"PATCH /v1/crm/pipelines/:id/stages/:stage_id":            "name",
	"POST /v1/invoicing/customers":                            "name",
	"PATCH /v1/invoicing/customers/:id":                       "name",
	"POST /v1/invoicing/invoices":                             "customer_id",
	"PATCH /v1/invoicing/invoices/:id":                        "customer_id",
	"POST /v1/invoicing/invoices/:id/finalize":                "",
	"POST /v1/invoicing/invoices/:id/send":                    "to",
	"POST /v1/invoicing/invoices/:id/remind":                  "to",
	"POST /v1/invoicing/invoices/:id/pay":                     "amount_cents",
	"POST /v1/invoicing/invoices/:id/void":                    "note",
	"POST /v1/invoicing/invoices/:id/mark-uncollectible":      "note",
	"PATCH /v1/invoicing/account":                             "business_name",
	"POST /v1/invoicing/account/connect":                      "",
	"POST /v1/invoicing/pay/:token":                           "card_number",
	"POST /v1/webhooks":                                       "url",
	"PATCH /v1/webhooks/:id":                                  "url",
	"POST /v1/webhooks/:id/deliveries/:delivery_id/redeliver": "",
	"POST /v1/process-runs/bulk":                              "action",
	"POST /v1/process-runs/:id/pause":                         "",
	"POST /v1/process-runs/:id/resume":                        "",
	"POST /v1/process-runs/:id/rerun":                         "from_step",
	"POST /v1/processes/:id/pause":                            "",
	"POST /v1/processes/:id/resume":                           "",
	"POST /v1/processes/:id/what-if":                          "limit",
	"POST /v1/jobs/:id/cancel":                                "",
	"POST /v1/decisions/:name/what-if":                        "limit",
	"POST /v1/docs/types/:id/what-if":                         "limit",
	"PUT /v1/ai/connection":                                   "base_url",
}

// openBodies are the write routes whose records api.md leaves open
// ("unknown fields ... are rejected where the record says no extra
// properties; ignored elsewhere"): an unknown field is ignored there, so
// the matrix does not send one. Protected fields are ignored as well
// (TestProtectedFieldsCannotBeSet checks what a create makes of them).
var openBodies = map[string]bool{
	"POST /v1/processes/:id/start": true, "POST /v1/events": true, "POST /v1/tasks/:id/complete": true,
	"POST /v1/approvals/:id/approve": true, "POST /v1/approvals/:id/reject": true, "POST /v1/processes": true,
	"POST /v1/auth/dev-login": true, "POST /v1/auth/email": true, "POST /v1/auth/code": true,
	"POST /v1/api-keys": true, "POST /v1/invitations": true, "POST /v1/invitations/:token/accept": true,
	"POST /v1/changes/:id/approve": true, "POST /v1/changes/:id/reject": true,
	"PUT /v1/capabilities/:id/binding":  true,
	"POST /v1/decisions/:name/evaluate": true, "POST /v1/decisions/:name/feedback": true, "POST /v1/decisions/:name/outcomes": true,
	"POST /v1/docs/types": true, "POST /v1/docs/types/from-template": true, "POST /v1/docs/documents/:id/approve": true,
	"POST /v1/docs/documents/:id/reject": true, "POST /v1/docs/documents/:id/feedback": true,
	"POST /v1/process-templates/install": true, "PUT /v1/use-cases/profile": true,
	"PUT /v1/use-cases/members/:user_id/departments": true, "PUT /v1/use-cases/:use_case_id/adoption": true,
	"POST /v1/crm/companies": true, "POST /v1/crm/contacts": true, "POST /v1/crm/deals": true,
	"POST /v1/crm/activities": true, "POST /v1/crm/pipelines": true, "POST /v1/crm/pipelines/:id/stages": true,
	"POST /v1/invoicing/customers": true, "POST /v1/invoicing/invoices": true,
	"POST /v1/invoicing/invoices/:id/send": true, "POST /v1/invoicing/invoices/:id/remind": true,
	"POST /v1/invoicing/invoices/:id/pay": true, "POST /v1/invoicing/invoices/:id/void": true,
	"POST /v1/invoicing/invoices/:id/mark-uncollectible": true, "POST /v1/invoicing/pay/:token": true,
}

// protectedFields are the fields the server alone sets: a strict body
// naming one is a 422; an open one ignores it (TestProtectedFieldsCannotBeSet).
var protectedFields = []string{"tenant", "tenant_id", "id", "status", "created_by", "number", "created_at"}

// matrixFixture makes one record of every kind in a fresh tenant and
// returns the ids by the path segment naming their collection, and the
// admin token.
type matrixFixture struct {
	s     *testServer
	admin string
	ids   map[string]string
	// second is another admin's session, for decisions on the admin's
	// changes.
	second string
}

func newMatrixFixture(t *testing.T) *matrixFixture {
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	login := s.devLogin(t, `{}`)
	admin := login.Token
	f := &matrixFixture{s: s, admin: admin, ids: map[string]string{}}
	id := func(r *testResponse) string {
		var v struct {
			ID string `json:"id"`
		}
		r.decode(t, &v)
		return v.ID
	}
	taskProc := s.createProc(t, admin, `{"name": "Task", "trigger": {"type": "manual"},
	  "steps": [{"key": "t", "type": "human_task", "config": {"title": "Do it"}}]}`)
	aprProc := s.createProc(t, admin, approvalProcess)
	rt := s.startRun(t, admin, taskProc.ID, "A-1")
	ra := s.startRun(t, admin, aprProc.ID, "A-2")
	f.ids["processes"] = taskProc.ID
	f.ids["process-runs"] = rt.ID
	f.ids["tasks"] = *rt.step(t, "t").TaskID
	f.ids["approvals"] = *ra.step(t, "route").ApprovalID
	// A job, completed (a filter no run matches): its cancel is a 409.
	var job struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	s.do(t, "POST", "/v1/process-runs/bulk", admin, `{"filter": {"status": "cancelled"}, "action": "pause"}`).
		want(t, http.StatusAccepted).decode(t, &job)
	f.ids["jobs"] = job.Job.ID
	testwait.Until(t, "the fixture's job completed", func() bool {
		var j struct {
			Status string `json:"status"`
		}
		s.do(t, "GET", "/v1/jobs/"+job.Job.ID, admin, nil).want(t, http.StatusOK).decode(t, &j)
		return j.Status == "completed"
	})
	f.ids["members"] = login.UserID
	f.ids["use-cases"] = "validate_supplier_invoices"
	f.ids["capabilities"] = "erp.purchase_order.get"
	var inv struct{ ID, Token string }
	s.do(t, "POST", "/v1/invitations", admin, `{"email": "x@example.com"}`).want(t, http.StatusCreated).decode(t, &inv)
	f.ids["invitations"] = inv.ID
	f.ids["invitations/token"] = inv.Token
	f.ids["api-keys"] = s.newKey(t, admin, `{"name": "k"}`).ID
	f.ids["decisions"] = "route_invoice"
	s.do(t, "POST", "/v1/decisions", admin, `{"name": "route_invoice", "description": "Routes invoices",
	  "input_schema": {"type": "object"}, "output_schema": {"type": "object"}}`).want(t, http.StatusCreated)
	typeID := s.invoiceType(t, admin)
	f.ids["types"] = typeID
	f.ids["documents"] = s.uploadDoc(t, admin, typeID, "a.txt", invoiceText("INV-1", "1,200.00", "2024-03-02")).ID
	board := s.newBoard(t, admin, `{"name": "Desk", "template": "service"}`)
	f.ids["boards"] = board.ID
	f.ids["statuses"] = board.Statuses[0].ID
	f.ids["columns"] = board.Columns[0].ID
	f.ids["groups"] = id(s.do(t, "POST", "/v1/boards/"+board.ID+"/groups", admin, `{"name": "Group"}`).want(t, http.StatusCreated))
	f.ids["items"] = s.newItem(t, admin, board.ID, `{"title": "Ticket"}`).ID
	f.ids["companies"] = s.crmPost(t, admin, "/v1/crm/companies", `{"name": "Co"}`)
	f.ids["contacts"] = s.crmPost(t, admin, "/v1/crm/contacts", `{"first_name": "Ann"}`)
	f.ids["deals"] = s.crmPost(t, admin, "/v1/crm/deals", `{"title": "Deal", "amount_cents": 5}`)
	f.ids["activities"] = s.crmPost(t, admin, "/v1/crm/activities", `{"kind": "note", "subject": "Note"}`)
	p := s.defaultPipeline(t, admin)
	f.ids["pipelines"] = p.ID
	f.ids["stages"] = p.Stages[0].ID
	cust := s.customer(t, admin, `{"name": "Buyer", "email": "buyer@example.com"}`)
	f.ids["customers"] = cust.ID
	f.ids["invoices"] = s.draft(t, admin, cust.ID, "").ID
	sent := s.draft(t, admin, cust.ID, "")
	s.invoiceAction(t, admin, sent.ID, "finalize", nil, http.StatusOK)
	s.invoiceAction(t, admin, sent.ID, "send", nil, http.StatusOK)
	var payable struct {
		URL string `json:"payment_url"`
	}
	s.do(t, "GET", "/v1/invoicing/invoices/"+sent.ID, admin, nil).want(t, http.StatusOK).decode(t, &payable)
	f.ids["pay/token"] = payable.URL[strings.LastIndexByte(payable.URL, '/')+1:]
	// A webhook to a receiver that is not there, and a delivery of it.
	f.ids["webhooks"] = id(s.do(t, "POST", "/v1/webhooks", admin,
		`{"url": "http://127.0.0.1:9/hook", "events": ["custom.matrix"]}`).want(t, http.StatusCreated))
	s.do(t, "POST", "/v1/events", admin, `{"name": "custom.matrix", "data": {}}`).want(t, http.StatusAccepted)
	var deliveries []struct{ ID string }
	s.do(t, "GET", "/v1/webhooks/"+f.ids["webhooks"]+"/deliveries", admin, nil).want(t, http.StatusOK).decode(t, &deliveries)
	if len(deliveries) != 1 {
		t.Fatalf("the fixture's event made %d deliveries, want 1", len(deliveries))
	}
	f.ids["deliveries"] = deliveries[0].ID
	// A change waiting for a second person (four eyes stays on: only
	// access changes wait for it).
	s.do(t, "PATCH", "/v1/workspace", admin, `{"four_eyes": true}`).want(t, http.StatusOK)
	var pending struct {
		ChangeID string `json:"change_id"`
	}
	s.do(t, "POST", "/v1/api-keys", admin, `{"name": "waits", "roles": ["admin"]}`).want(t, http.StatusAccepted).decode(t, &pending)
	f.ids["changes"] = pending.ChangeID
	// A second admin decides it: the requester may not.
	f.second = s.devLogin(t, `{"email": "second@example.com", "roles": ["admin"]}`).Token
	return f
}

// path fills a route's parameters with the fixture's records.
func (f *matrixFixture) path(t *testing.T, route string) string {
	p, ok := f.fill(route)
	if !ok {
		t.Fatalf("route %s: the fixture has no record for its parameters", route)
	}
	return p
}

// fill is path that reports whether the fixture has every record.
func (f *matrixFixture) fill(route string) (string, bool) {
	segs := strings.Split(route, "/")
	for i, seg := range segs {
		if !isParam(seg) {
			continue
		}
		coll := segs[i-1]
		if seg == ":token" {
			coll += "/token"
		}
		id, ok := f.ids[coll]
		if !ok {
			return "", false
		}
		segs[i] = id
	}
	return strings.Join(segs, "/"), true
}

// snapshot reads every list and every fixture record of the tenant.
func (f *matrixFixture) snapshot(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, r := range f.s.h.Routes() {
		// A PDF carries the time it was made.
		if r.Method != "GET" || r.Public || strings.HasPrefix(r.Path, "/v1/health") || strings.HasSuffix(r.Path, "/pdf") || streams(r) {
			continue
		}
		p, ok := f.fill(r.Path)
		if !ok {
			continue
		}
		resp := f.s.do(t, "GET", p, f.admin, nil)
		out[p] = string(resp.Body)
	}
	return out
}

// TestWriteBodiesRefuseMalformedInput: every JSON write route answers 422
// to an unknown field, a wrong JSON type (of the body and of a field), a
// case variant of a field's name and a duplicate key, and changes nothing.
func TestWriteBodiesRefuseMalformedInput(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	s := f.s
	before := f.snapshot(t)
	for _, r := range s.h.Routes() {
		if !isWrite(r.Method) || r.Multipart() {
			continue
		}
		field, ok := bodyField[routeKey(r)]
		if !ok {
			t.Errorf("%s has no case in bodyField", routeKey(r))
			continue
		}
		token := f.admin
		if r.Public {
			token = ""
		}
		if strings.HasPrefix(r.Path, "/v1/changes/") {
			token = f.second
		}
		if r.Path == "/v1/auth/logout" {
			token = s.devLogin(t, `{}`).Token // should a probe log out, it is not the fixture's session
		}
		path := f.path(t, r.Path)
		type probe struct{ name, body, want string }
		probes := []probe{
			{"duplicate key", `{"zz": 1, "zz": 1}`, "body"},
			{"nested duplicate key", `{"zz": {"a": 1, "a": 2}}`, "body"},
			{"array body", `[]`, "body"},
			{"string body", `"x"`, "body"},
			{"null body", `null`, "body"},
		}
		if !openBodies[routeKey(r)] {
			probes = append(probes, probe{"unknown field", `{"zz_unknown": 1}`, "body.zz_unknown:extra_forbidden"})
			for _, pf := range protectedFields {
				probes = append(probes, probe{"protected field " + pf, `{"` + pf + `": "x"}`, "body." + pf + ":extra_forbidden"})
			}
		}
		if field != "" {
			variant := strings.ToUpper(field[:1]) + field[1:]
			probes = append(probes,
				probe{"wrong type", `{"` + field + `": [[true]]}`, "body." + field},
				probe{"case variant", `{"` + variant + `": "x"}`, "body." + variant + ":extra_forbidden"},
				probe{"case variant beside the field", `{"` + field + `": "x", "` + variant + `": "x"}`, "body." + variant},
			)
		}
		for _, p := range probes {
			resp := s.do(t, r.Method, path, token, p.body)
			if resp.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s %s: status %d, want 422: %.200s", routeKey(r), p.name, resp.Status, resp.Body)
				continue
			}
			got := strings.Join(violationsOf(t, resp), " ")
			if !strings.Contains(got, p.want) {
				t.Errorf("%s %s: violations %s, want one at %s", routeKey(r), p.name, got, p.want)
			}
		}
	}
	after := f.snapshot(t)
	for p, b := range before {
		if after[p] != b {
			t.Errorf("GET %s changed:\nbefore %.300s\nafter  %.300s", p, b, after[p])
		}
	}
}

// unpagedLists answer every entry of a catalog the code bounds (or, for
// the CRM board, one column per stage, at most 50); they ignore ?limit=
// and ?cursor=. Lists answered through Ctx.List that do not page refuse
// both (422).
var unpagedLists = map[string]bool{
	"/v1/apps": true, "/v1/processes/step-types": true, "/v1/docs/type-templates": true,
	"/v1/process-templates": true, "/v1/use-cases": true, "/v1/crm/pipelines/:id/board": true,
}

// TestListRoutesCheckLimitAndCursor: every list route of the table (a GET
// answering a JSON array) takes limit 200 and refuses 201 and 0, and
// answers a malformed cursor, or a cursor of another list, with a 422,
// never an empty 200.
func TestListRoutesCheckLimitAndCursor(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	s := f.s
	// A cursor of another list: the audit log always has more than one entry.
	foreign := s.do(t, "GET", "/v1/audit?limit=1", f.admin, nil).want(t, http.StatusOK).Header.Get("X-Next-Cursor")
	if foreign == "" {
		t.Fatal("the audit log gave no cursor")
	}
	lists := 0
	for _, r := range s.h.Routes() {
		if r.Method != "GET" || r.Public || streams(r) {
			continue
		}
		path, ok := f.fill(r.Path)
		if !ok {
			continue
		}
		resp := s.do(t, "GET", path+"?limit=200", f.admin, nil)
		if resp.Status != http.StatusOK || !strings.HasPrefix(strings.TrimSpace(string(resp.Body)), "[") {
			continue
		}
		lists++
		if unpagedLists[r.Path] {
			continue
		}
		for _, q := range []string{"limit=201", "limit=0", "limit=-1", "limit=x", "limit=99999999999999999999"} {
			if got := s.do(t, "GET", path+"?"+q, f.admin, nil); got.Status != http.StatusUnprocessableEntity {
				t.Errorf("GET %s?%s: status %d, want 422: %.200s", path, q, got.Status, got.Body)
			}
		}
		cursors := []string{"garbage", "%00", strings.Repeat("A", 5000), "eyJ9"}
		if r.Path != "/v1/audit" {
			cursors = append(cursors, foreign)
		}
		for _, c := range cursors {
			got := s.do(t, "GET", path+"?cursor="+c, f.admin, nil)
			if got.Status != http.StatusUnprocessableEntity {
				t.Errorf("GET %s with cursor %.40q: status %d, want 422: %.200s", r.Path, c, got.Status, got.Body)
				continue
			}
			if v := violationsOf(t, got); len(v) == 0 || !strings.HasPrefix(v[0], "query.cursor") {
				t.Errorf("GET %s with cursor %.40q: violations %v", r.Path, c, v)
			}
		}
	}
	if lists < 20 {
		t.Errorf("only %d list routes found", lists)
	}
}

// TestWriteBodiesBounded: on every JSON write route a body one byte over
// the cap is a 413 and an array nested 100,000 deep is a 422 (never a
// stack blow-up); nothing changes.
func TestWriteBodiesBounded(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	s := f.s
	before := f.snapshot(t)
	over := `{"zz": "` + strings.Repeat("a", 1<<20-9) + `"}` // 1 MiB + 1
	deep := `{"zz": ` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`
	deepObj := strings.Repeat(`{"a":`, 50_000) + `1` + strings.Repeat("}", 50_000)
	for _, r := range s.h.Routes() {
		if !isWrite(r.Method) || r.Multipart() {
			continue
		}
		token := f.admin
		if r.Public {
			token = ""
		}
		if strings.HasPrefix(r.Path, "/v1/changes/") {
			token = f.second
		}
		if r.Path == "/v1/auth/logout" {
			token = s.devLogin(t, `{}`).Token
		}
		path := f.path(t, r.Path)
		if got := s.do(t, r.Method, path, token, over); got.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s with a body over 1 MiB: status %d, want 413: %.200s", routeKey(r), got.Status, got.Body)
		}
		for name, body := range map[string]string{"deep array": deep, "deep object": deepObj} {
			got := s.do(t, r.Method, path, token, body)
			if got.Status != http.StatusUnprocessableEntity && got.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("%s with a %s: status %d, want 422 or 413: %.200s", routeKey(r), name, got.Status, got.Body)
			}
		}
	}
	after := f.snapshot(t)
	for p, b := range before {
		if after[p] != b {
			t.Errorf("GET %s changed:\nbefore %.300s\nafter  %.300s", p, b, after[p])
		}
	}
}

// TestControlCharactersRefused: NUL, CR and LF are refused in names,
// titles, subjects and addresses (a header or log line injected through a
// name, or a name two systems read differently), on create and on update.
func TestControlCharactersRefused(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	s := f.s
	tests := []struct{ method, route, body, field string }{
		{"POST", "/v1/crm/companies", `{"name": %s}`, "name"},
		{"PATCH", "/v1/crm/companies/:id", `{"name": %s}`, "name"},
		{"POST", "/v1/crm/contacts", `{"first_name": %s}`, "first_name"},
		{"PATCH", "/v1/crm/contacts/:id", `{"first_name": "Ann", "email": %s}`, "email"},
		{"POST", "/v1/crm/deals", `{"title": %s}`, "title"},
		{"POST", "/v1/crm/activities", `{"kind": "note", "subject": %s}`, "subject"},
		{"POST", "/v1/crm/pipelines", `{"name": %s, "stages": [{"name": "A"}]}`, "name"},
		{"POST", "/v1/crm/pipelines/:id/stages", `{"name": %s}`, "name"},
		{"POST", "/v1/invoicing/customers", `{"name": %s}`, "name"},
		{"POST", "/v1/invoicing/customers", `{"name": "B", "email": %s}`, "email"},
		{"PATCH", "/v1/invoicing/customers/:id", `{"name": %s}`, "name"},
		{"POST", "/v1/boards", `{"name": %s}`, "name"},
		{"POST", "/v1/boards/:id/items", `{"title": %s}`, "title"},
		{"PATCH", "/v1/boards/:id/items/:part_id", `{"title": %s}`, "title"},
		{"POST", "/v1/boards/:id/groups", `{"name": %s}`, "name"},
		{"POST", "/v1/processes", `{"name": %s, "trigger": {"type": "manual"}, "steps": [{"key": "t", "type": "human_task", "config": {"title": "T"}}]}`, "name"},
		{"PATCH", "/v1/processes/:id", `{"name": %s}`, "name"},
		{"POST", "/v1/docs/types", `{"name": %s}`, "name"},
		{"POST", "/v1/api-keys", `{"name": %s}`, "name"},
		{"POST", "/v1/invitations", `{"email": %s}`, "email"},
		{"PATCH", "/v1/workspace", `{"name": %s}`, "name"},
		{"POST", "/v1/decisions", `{"name": %s, "description": "d"}`, "name"},
	}
	before := f.snapshot(t)
	for _, test := range tests {
		path := f.path(t, test.route)
		for _, bad := range []string{`"a\u0000b"`, `"a\rb"`, `"a\nb"`, `"x@example.com\r\nBcc: y@example.com"`} {
			resp := s.do(t, test.method, path, f.admin, fmt.Sprintf(test.body, bad))
			if resp.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s %s with %s = %s: status %d, want 422: %.200s", test.method, test.route, test.field, bad, resp.Status, resp.Body)
				continue
			}
			if got := strings.Join(violationsOf(t, resp), " "); !strings.Contains(got, "body."+test.field+":") {
				t.Errorf("%s %s with %s = %s: violations %s", test.method, test.route, test.field, bad, got)
			}
		}
	}
	after := f.snapshot(t)
	for p, b := range before {
		if after[p] != b {
			t.Errorf("GET %s changed:\nbefore %.300s\nafter  %.300s", p, b, after[p])
		}
	}
}

// TestProtectedFieldsCannotBeSet: a create whose record is open ignores
// the fields only the server sets (tenant, id, status, created_by, number,
// created_at): none of the forged values reaches the record, which belongs
// to the caller's tenant. (Strict records refuse them with a 422, see
// TestWriteBodiesRefuseMalformedInput.)
func TestProtectedFieldsCannotBeSet(t *testing.T) {
	t.Parallel()
	f := newMatrixFixture(t)
	s := f.s
	forged := `"id": "zz_forged", "tenant": "ten_forged", "tenant_id": "ten_forged", "workspace_id": "ten_forged",
	  "status": "zz_status", "created_by": "usr_forged", "number": "INV-999999", "created_at": "2001-01-01T00:00:00Z"`
	tests := []struct{ path, body, read string }{
		{"/v1/crm/companies", `{"name": "Forged Co", ` + forged + `}`, "/v1/crm/companies/"},
		{"/v1/crm/contacts", `{"first_name": "Forge", ` + forged + `}`, "/v1/crm/contacts/"},
		{"/v1/crm/deals", `{"title": "Forged deal", ` + forged + `}`, "/v1/crm/deals/"},
		{"/v1/crm/activities", `{"kind": "note", "subject": "Forged", ` + forged + `}`, "/v1/crm/activities/"},
		{"/v1/invoicing/customers", `{"name": "Forged buyer", ` + forged + `}`, "/v1/invoicing/customers/"},
		{"/v1/invoicing/invoices", `{"customer_id": "` + f.ids["customers"] + `", "lines": [{"description": "x", "quantity": 1, "unit_amount_cents": 100}], ` + forged + `}`, "/v1/invoicing/invoices/"},
		{"/v1/processes", `{"name": "Forged", "trigger": {"type": "manual"}, "steps": [{"key": "t", "type": "human_task", "config": {"title": "T"}}], ` + forged + `}`, "/v1/processes/"},
		{"/v1/docs/types", `{"name": "Forged type", ` + forged + `}`, "/v1/docs/types/"},
		{"/v1/api-keys", `{"name": "Forged key", ` + forged + `}`, "/v1/api-keys/"},
	}
	for _, test := range tests {
		resp := s.do(t, "POST", test.path, f.admin, test.body)
		if resp.Status != http.StatusCreated && resp.Status != http.StatusAccepted {
			t.Errorf("POST %s: status %d: %.300s", test.path, resp.Status, resp.Body)
			continue
		}
		var out struct {
			ID string `json:"id"`
		}
		resp.decode(t, &out)
		read := s.do(t, "GET", test.read+out.ID, f.admin, nil)
		if resp.Status == http.StatusCreated {
			read.want(t, http.StatusOK)
		}
		for _, body := range [][]byte{resp.Body, read.Body} {
			for _, v := range []string{"zz_forged", "ten_forged", "zz_status", "usr_forged", "INV-999999", "2001-01-01"} {
				if strings.Contains(string(body), v) {
					t.Errorf("POST %s: the record took the forged %q: %.300s", test.path, v, body)
				}
			}
		}
	}
}
