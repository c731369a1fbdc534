package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

// newTestServerProviders is newTestServer (development login on) with
// extra capability providers registered beside the built-in ones.
func newTestServerProviders(t *testing.T, providers ...bas.Provider) *testServer {
	t.Helper()
	logs := &logBuffer{}
	clk := bas.NewFakeClock(testStart)
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true, Clock: clk, Providers: providers,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, httpapi.Options{DevLogin: true})
	srv := httptest.NewServer(conform(t, h))
	t.Cleanup(srv.Close)
	return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: logs}
}

// echoProvider fills capabilities with fixed results (by capability id).
type echoProvider struct {
	id      string
	results map[string]string
}

func (p echoProvider) Info() capability.Info {
	var caps []string
	for c := range p.results {
		caps = append(caps, c)
	}
	return capability.Info{ID: p.id, Name: p.id, Kind: capability.KindPlugin, Capabilities: caps}
}

func (p echoProvider) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	return json.RawMessage(p.results[c.Capability]), nil
}

// useCaseView is a catalog entry as GET /v1/use-cases shows it.
type useCaseView struct {
	ID          string   `json:"id"`
	Industries  []string `json:"industries"`
	Departments []string `json:"departments"`
	Chain       []string `json:"chain"`
	Risk        string   `json:"risk"`
	RiskTier    string   `json:"risk_tier"`
	Guide       string   `json:"guide"`
	TemplateID  *string  `json:"template_id"`
	Fit         string   `json:"fit"`
	ForMe       bool     `json:"for_me"`
	Readiness   struct {
		Runs     bool `json:"runs"`
		Template bool `json:"template"`
		Guide    bool `json:"guide"`
	} `json:"readiness"`
	Adoption *struct {
		Status      string   `json:"status"`
		OwnerUserID *string  `json:"owner_user_id"`
		Risk        *string  `json:"risk"`
		Departments []string `json:"departments"`
	} `json:"adoption"`
}

func (s *testServer) useCase(t *testing.T, token, id string) useCaseView {
	t.Helper()
	var v useCaseView
	s.do(t, "GET", "/v1/use-cases/"+id, token, nil).want(t, http.StatusOK).decode(t, &v)
	return v
}

func (s *testServer) useCases(t *testing.T, token, query string) []string {
	t.Helper()
	var list []useCaseView
	s.do(t, "GET", "/v1/use-cases"+query, token, nil).want(t, http.StatusOK).decode(t, &list)
	out := []string{}
	for _, v := range list {
		out = append(out, v.ID)
	}
	return out
}

func TestUseCasesHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	member := s.devLogin(t, `{"email": "m@example.com", "roles": ["member"]}`)

	// The taxonomy.
	var tax struct {
		Industries       []struct{ Tag, Label string }
		Departments      []struct{ Tag, Label string }
		Systems          []struct{ Tag, Label string }
		AdoptionStatuses []string `json:"adoption_statuses"`
	}
	s.do(t, "GET", "/v1/use-cases/taxonomy", member.Token, nil).want(t, http.StatusOK).decode(t, &tax)
	if len(tax.Industries) < 12 || len(tax.Departments) < 12 || len(tax.Systems) < 20 || len(tax.AdoptionStatuses) != 7 {
		t.Errorf("taxonomy: %d industries, %d departments, %d systems, statuses %v", len(tax.Industries), len(tax.Departments),
			len(tax.Systems), tax.AdoptionStatuses)
	}

	// Scope: all lists everything; applicable (the default) leaves out
	// what fits no industry; mine is empty until the caller has departments.
	all := s.useCases(t, member.Token, "?scope=all")
	applicable := s.useCases(t, member.Token, "")
	if len(all) < 120 || len(applicable) >= len(all) || len(applicable) == 0 {
		t.Fatalf("%d entries, %d applicable", len(all), len(applicable))
	}
	if mine := s.useCases(t, member.Token, "?scope=mine"); len(mine) != 0 {
		t.Errorf("mine without departments: %v", mine)
	}
	r := s.do(t, "GET", "/v1/use-cases?scope=everything&department=finance", member.Token, nil).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"query.scope:enum", "query.department:value_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}

	// Departments: one's own; another's needs usecases.manage; tags from
	// the taxonomy; 14 at most.
	path := "/v1/use-cases/members/" + member.UserID + "/departments"
	var md struct {
		UserID      string   `json:"user_id"`
		Departments []string `json:"departments"`
	}
	s.do(t, "PUT", path, member.Token, `{"departments": ["department:finance"]}`).want(t, http.StatusOK).decode(t, &md)
	if md.UserID != member.UserID || !slices.Equal(md.Departments, []string{"department:finance"}) {
		t.Errorf("departments %+v", md)
	}
	s.do(t, "PUT", "/v1/use-cases/members/"+admin.UserID+"/departments", member.Token, `{"departments": []}`).want(t, http.StatusForbidden)
	s.do(t, "PUT", "/v1/use-cases/members/usr_nobody/departments", admin.Token, `{"departments": []}`).want(t, http.StatusNotFound)
	fourteen := make([]string, 14)
	for i := range fourteen {
		fourteen[i] = tax.Departments[i%len(tax.Departments)].Tag
	}
	s.do(t, "PUT", path, admin.Token, map[string]any{"departments": fourteen}).want(t, http.StatusOK)
	r = s.do(t, "PUT", path, admin.Token, map[string]any{"departments": append(fourteen, "department:finance")}).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.departments:too_long"}, violationsOf(t, r)); diff != "" {
		t.Errorf("15 departments (-want +got):\n%s", diff)
	}
	r = s.do(t, "PUT", path, member.Token, `{"departments": ["finance"]}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.departments.0:value_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("bad tag (-want +got):\n%s", diff)
	}
	s.do(t, "PUT", path, member.Token, `{"departments": ["department:finance"]}`).want(t, http.StatusOK)
	mine := s.useCases(t, member.Token, "?scope=mine")
	if len(mine) == 0 {
		t.Fatal("nothing for finance")
	}
	for _, id := range mine {
		if v := s.useCase(t, member.Token, id); !v.ForMe || !slices.Contains(v.Departments, "department:finance") {
			t.Errorf("%s in mine: %+v", id, v)
		}
	}
	hr := s.useCases(t, member.Token, "?scope=mine&department=department:hr")
	if len(hr) == 0 || slices.Equal(hr, mine) {
		t.Errorf("mine in hr: %v", hr)
	}

	// The profile: tags checked, needs usecases.manage; its systems are
	// GET /v1/integrations' default.
	s.do(t, "PUT", "/v1/use-cases/profile", member.Token, `{"industries": ["industry:retail"]}`).want(t, http.StatusForbidden)
	r = s.do(t, "PUT", "/v1/use-cases/profile", admin.Token, `{"industries": ["retail"], "size": "huge", "systems": ["system:xero", "Xero"]}`).
		want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.industries.0:value_error", "body.systems.1:value_error", "body.size:value_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	s.do(t, "PUT", "/v1/use-cases/profile", admin.Token, `{"industries": ["industry:healthcare"], "size": "size:11-50",
		"systems": ["system:xero", "system:slack"], "regulations": ["regulation:hipaa"]}`).want(t, http.StatusOK)
	var profile map[string]any
	s.do(t, "GET", "/v1/use-cases/profile", member.Token, nil).want(t, http.StatusOK).decode(t, &profile)
	if diff := cmp.Diff(map[string]any{"industries": []any{"industry:healthcare"}, "size": "size:11-50",
		"systems": []any{"system:xero", "system:slack"}, "regulations": []any{"regulation:hipaa"}}, profile); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	var integrations []struct{ App string }
	s.do(t, "GET", "/v1/integrations", member.Token, nil).want(t, http.StatusOK).decode(t, &integrations)
	if len(integrations) != 2 || integrations[0].App != "Xero" || integrations[1].App != "Slack" {
		t.Errorf("integrations %+v", integrations)
	}
	// A healthcare workspace: the patient reminders fit its industry.
	if v := s.useCase(t, member.Token, "patient_appointment_reminders"); v.Fit != "industry" {
		t.Errorf("fit %s", v.Fit)
	}
	if !slices.Contains(s.useCases(t, member.Token, ""), "patient_appointment_reminders") {
		t.Error("healthcare entry not applicable")
	}
	s.do(t, "GET", "/v1/use-cases/no_such_case", member.Token, nil).want(t, http.StatusNotFound)
}

func TestUseCaseAdoptionHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	member := s.devLogin(t, `{"email": "m@example.com", "roles": ["member"]}`)
	// A process listening for adoption changes: the event is emitted with
	// the change.
	proc := s.createProc(t, admin.Token, `{"name": "Adoption watch", "trigger": {"type": "event", "event": "usecases.adoption.changed",
		"filter": {"status": "piloting"}}, "steps": [{"key": "note", "type": "human_task", "config": {"title": "Pilot of ${trigger.data.use_case_id}"}}]}`)

	path := "/v1/use-cases/validate_supplier_invoices/adoption"
	s.do(t, "PUT", path, member.Token, `{"status": "planned"}`).want(t, http.StatusForbidden)
	// Rule 6: the tier is medium; low is looser (422), high is stricter.
	r := s.do(t, "PUT", path, admin.Token, `{"status": "piloting", "risk": "low", "owner_user_id": "usr_nobody", "notes": 7}`).
		want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.notes:type_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("types first (-want +got):\n%s", diff)
	}
	r = s.do(t, "PUT", path, admin.Token, `{"status": "piloting", "risk": "low", "owner_user_id": "usr_nobody"}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.risk:value_error", "body.owner_user_id:value_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	var a struct {
		UseCaseID   string  `json:"use_case_id"`
		Status      string  `json:"status"`
		OwnerUserID *string `json:"owner_user_id"`
		Risk        *string `json:"risk"`
	}
	s.do(t, "PUT", path, admin.Token, map[string]any{"status": "piloting", "risk": "high", "owner_user_id": member.UserID}).
		want(t, http.StatusOK).decode(t, &a)
	if a.UseCaseID != "validate_supplier_invoices" || a.Status != "piloting" || *a.Risk != "high" || *a.OwnerUserID != member.UserID {
		t.Errorf("adoption %+v", a)
	}
	v := s.useCase(t, member.Token, "validate_supplier_invoices")
	if v.Risk != "high" || v.RiskTier != "medium" || v.Adoption == nil || v.Adoption.Status != "piloting" {
		t.Errorf("entry %+v", v)
	}
	s.do(t, "PUT", "/v1/use-cases/no_such_case/adoption", admin.Token, `{}`).want(t, http.StatusNotFound)
	// The register, with counts, most recently changed first.
	s.clock.Advance(time.Minute)
	s.do(t, "PUT", "/v1/use-cases/chase_overdue_receivables/adoption", admin.Token, `{"status": "declined"}`).want(t, http.StatusOK)
	var reg struct {
		UseCases []useCaseView `json:"use_cases"`
		Counts   struct {
			Active, Total int
			ByStatus      map[string]int `json:"by_status"`
		} `json:"counts"`
	}
	s.do(t, "GET", "/v1/use-cases/register", member.Token, nil).want(t, http.StatusOK).decode(t, &reg)
	if len(reg.UseCases) != 2 || reg.UseCases[0].ID != "chase_overdue_receivables" || reg.Counts.Active != 1 || reg.Counts.Total != 2 ||
		reg.Counts.ByStatus["declined"] != 1 {
		t.Errorf("register %+v", reg)
	}
	s.do(t, "GET", "/v1/use-cases/register?status=piloting", member.Token, nil).want(t, http.StatusOK).decode(t, &reg)
	if len(reg.UseCases) != 1 || reg.UseCases[0].ID != "validate_supplier_invoices" {
		t.Errorf("piloting register %+v", reg.UseCases)
	}
	s.do(t, "GET", "/v1/use-cases/register?status=done", member.Token, nil).want(t, http.StatusUnprocessableEntity)
	// Rule 7: the audit log has both changes with before and after.
	var entries []struct {
		Action   string          `json:"action"`
		EntityID string          `json:"entity_id"`
		Before   json.RawMessage `json:"before"`
		After    json.RawMessage `json:"after"`
	}
	s.do(t, "GET", "/v1/audit?entity=use_case_adoption", admin.Token, nil).want(t, http.StatusOK).decode(t, &entries)
	if len(entries) != 2 || entries[1].EntityID != "validate_supplier_invoices" || string(entries[1].Before) != "null" ||
		!strings.Contains(string(entries[1].After), `"status":"piloting"`) {
		t.Errorf("audit %+v", entries)
	}
	// The piloting change started the listening process once.
	var runs []runView
	s.awaitRuns(t, admin.Token, "/v1/process-runs?process_id="+proc.ID, 1, &runs)
	if len(runs) != 1 {
		t.Errorf("%d runs", len(runs))
	}
}

// Readiness follows the workspace's bindings: a template whose capability
// two providers fill runs once one is bound, stops when the binding is
// removed, and runs again when it is restored.
func TestUseCaseReadinessFollowsBindings(t *testing.T) {
	t.Parallel()
	s := newTestServerProviders(t, echoProvider{id: "plugin.mailer", results: map[string]string{
		"email.send": `{"message_id": "m1", "status": "sent"}`}})
	admin := s.devLogin(t, `{}`)
	// supplier_onboarding's template calls email.send, which the outbox and
	// plugin.mailer both fill.
	runs := func() bool { return s.useCase(t, admin.Token, "supplier_onboarding").Readiness.Runs }
	if runs() {
		t.Fatal("runs while two providers fill email.send and none is bound")
	}
	bind := func() {
		s.do(t, "PUT", "/v1/capabilities/email.send/binding", admin.Token, `{"provider_id": "builtin.email"}`).want(t, http.StatusOK)
	}
	bind()
	if !runs() {
		t.Fatal("does not run once email.send is bound")
	}
	s.do(t, "DELETE", "/v1/capabilities/email.send/binding", admin.Token, nil).want(t, http.StatusNoContent)
	if runs() {
		t.Fatal("runs after the binding was removed")
	}
	bind()
	if v := s.useCase(t, admin.Token, "supplier_onboarding"); !v.Readiness.Runs || !v.Readiness.Template || !v.Readiness.Guide {
		t.Fatalf("readiness after the binding was restored: %+v", v.Readiness)
	}
	// A use case without a template never runs.
	if v := s.useCase(t, admin.Token, "cash_flow_forecast"); v.Readiness.Runs || v.Readiness.Template || v.TemplateID != nil {
		t.Errorf("cash_flow_forecast: %+v", v)
	}
}
