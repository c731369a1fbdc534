package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// templateView is a CatalogEntry as GET /v1/process-templates shows it.
type templateView struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	Function           string   `json:"function"`
	Segment            string   `json:"segment"`
	Description        string   `json:"description"`
	Chain              []string `json:"chain"`
	ChainLabels        []string `json:"chain_labels"`
	Requires           []string `json:"requires"`
	Status             string   `json:"status"`
	Installed          bool     `json:"installed"`
	Effort             *string  `json:"effort"`
	HoursSavedPerMonth *int     `json:"hours_saved_per_month"`
	Risk               *string  `json:"risk"`
}

type installView struct {
	Installed []struct {
		ID         string  `json:"id"`
		Name       string  `json:"name"`
		TemplateID *string `json:"template_id"`
		Version    int     `json:"version"`
	} `json:"installed"`
	Skipped []skippedView `json:"skipped"`
}

type skippedView struct {
	TemplateID string `json:"template_id"`
	Reason     string `json:"reason"`
}

func (s *testServer) templates(t *testing.T, token string) map[string]templateView {
	t.Helper()
	var list []templateView
	s.do(t, "GET", "/v1/process-templates", token, nil).want(t, http.StatusOK).decode(t, &list)
	out := map[string]templateView{}
	for _, tv := range list {
		out[tv.ID] = tv
	}
	return out
}

func (s *testServer) install(t *testing.T, token string, status int, ids ...string) installView {
	t.Helper()
	var out installView
	s.do(t, "POST", "/v1/process-templates/install", token, map[string]any{"template_ids": ids}).want(t, status).decode(t, &out)
	return out
}

func installedIDs(v installView) []string {
	var out []string
	for _, p := range v.Installed {
		out = append(out, *p.TemplateID)
	}
	return out
}

func TestTemplateCatalogHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)
	all := s.templates(t, admin.Token)
	if len(all) < 30 {
		t.Fatalf("%d templates, want at least 30", len(all))
	}
	functions := map[string]bool{}
	for _, tv := range all {
		functions[tv.Function] = true
		if tv.Installed || len(tv.Chain) == 0 || len(tv.Chain) != len(tv.ChainLabels) || tv.Requires == nil {
			t.Errorf("entry %+v", tv)
		}
	}
	for _, fn := range []string{"finance", "sales", "operations", "hr", "procurement", "customer_service", "compliance"} {
		if !functions[fn] {
			t.Errorf("no template of %s", fn)
		}
	}
	want := templateView{ID: "onboard_supplier", Name: "Onboard a supplier", Function: "procurement", Segment: "Supplier management",
		Chain:       []string{"human_task", "validate", "route", "execute", "human_task"},
		ChainLabels: []string{"Collect the supplier's details", "Check the details", "Route for review", "Welcome the supplier", "Approve for purchasing"},
		Requires:    []string{"email.send"}, Status: "available"}
	got := all["onboard_supplier"]
	got.Description, got.Effort, got.HoursSavedPerMonth, got.Risk = "", nil, nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("onboard_supplier (-want +got):\n%s", diff)
	}
	var one templateView
	s.do(t, "GET", "/v1/process-templates/chase_receivable", admin.Token, nil).want(t, http.StatusOK).decode(t, &one)
	if one.ID != "chase_receivable" || one.Function != "finance" {
		t.Errorf("one: %+v", one)
	}
	s.do(t, "GET", "/v1/process-templates/no_such_template", admin.Token, nil).want(t, http.StatusNotFound)
	var finance []templateView
	s.do(t, "GET", "/v1/process-templates?function=finance", admin.Token, nil).want(t, http.StatusOK).decode(t, &finance)
	for _, tv := range finance {
		if tv.Function != "finance" {
			t.Errorf("function filter kept %s (%s)", tv.ID, tv.Function)
		}
	}
	r := s.do(t, "GET", "/v1/process-templates?function=astrology", admin.Token, nil).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"query.function:enum"}, violationsOf(t, r)); diff != "" {
		t.Errorf("function (-want +got):\n%s", diff)
	}
	// Reading needs processes.read, installing processes.manage.
	member := s.devLogin(t, `{"email": "m@example.com", "roles": ["member"]}`)
	s.do(t, "GET", "/v1/process-templates", member.Token, nil).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/process-templates/install", member.Token, `{"template_ids": ["onboard_supplier"]}`).want(t, http.StatusForbidden)
}

func TestTemplateInstall(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`)

	// Bounds: 1 to 40 ids, each a template of the catalog. A bad request
	// installs nothing, even beside good ids.
	forty := make([]string, 40)
	for i := range forty {
		forty[i] = "onboard_supplier"
	}
	for _, test := range []struct {
		name string
		body any
		want []string
	}{
		{"missing", `{}`, []string{"body.template_ids:missing"}},
		{"empty", `{"template_ids": []}`, []string{"body.template_ids:too_short"}},
		{"41 items", map[string]any{"template_ids": append(slices.Clone(forty), "onboard_supplier")}, []string{"body.template_ids:too_long"}},
		{"unknown beside good", `{"template_ids": ["onboard_supplier", "teleport_goods", ""]}`,
			[]string{"body.template_ids.1:value_error", "body.template_ids.2:string_too_short"}},
		{"not a list", `{"template_ids": "onboard_supplier"}`, []string{"body.template_ids:type_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			r := s.do(t, "POST", "/v1/process-templates/install", admin.Token, test.body).want(t, http.StatusUnprocessableEntity)
			if diff := cmp.Diff(test.want, violationsOf(t, r)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	if got := s.templates(t, admin.Token)["onboard_supplier"]; got.Installed {
		t.Fatal("a refused request installed a template")
	}
	if ids := s.listIDs(t, admin.Token, "/v1/processes"); len(ids) != 0 {
		t.Fatalf("a refused request created processes %v", ids)
	}

	// 40 ids (just inside): installed once, then skipped as listed twice.
	out := s.install(t, admin.Token, http.StatusCreated, forty...)
	if len(out.Installed) != 1 || len(out.Skipped) != 39 || out.Skipped[0].Reason != "listed more than once" {
		t.Fatalf("40 ids: %+v", out)
	}
	first := out.Installed[0]
	if first.Version != 1 || first.Name != "Onboard a supplier" {
		t.Errorf("installed %+v", first)
	}

	// Several in one call: installed ones, a coming one, an installed one,
	// and ones whose capabilities no provider fills here (the CRM,
	// invoicing and boards apps are providers of their own; without them
	// these are gaps).
	out = s.install(t, admin.Token, http.StatusCreated, "employee_onboarding", "candidate_screening", "onboard_supplier",
		"validate_supplier_invoice", "lost_deal_review", "chase_receivable")
	wantInstalled := []string{"employee_onboarding", "validate_supplier_invoice"}
	wantSkipped := []skippedView{
		{"candidate_screening", "coming: the template is not available yet"},
		{"onboard_supplier", "already installed as process " + first.ID},
	}
	wantInstalled = append(wantInstalled, "lost_deal_review", "chase_receivable") // the CRM and invoicing apps fill them
	if diff := cmp.Diff(wantInstalled, installedIDs(out)); diff != "" {
		t.Errorf("installed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSkipped, out.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	// The catalog says which are installed.
	all := s.templates(t, admin.Token)
	for _, id := range []string{"onboard_supplier", "employee_onboarding", "validate_supplier_invoice"} {
		if !all[id].Installed {
			t.Errorf("%s not installed", id)
		}
	}
	if all["candidate_screening"].Installed || all["refund_request"].Installed {
		t.Error("installed too much")
	}
	// Idempotent: installing again installs nothing (200) and says why.
	again := s.install(t, admin.Token, http.StatusOK, "onboard_supplier", "employee_onboarding")
	if len(again.Installed) != 0 || len(again.Skipped) != 2 || !strings.HasPrefix(again.Skipped[1].Reason, "already installed as process ") {
		t.Errorf("again: %+v", again)
	}
	// Another tenant has installed nothing.
	other := s.devLogin(t, `{"tenant_id": "ten_other", "email": "o@example.com"}`)
	if s.templates(t, other.Token)["onboard_supplier"].Installed {
		t.Error("another tenant sees the installation")
	}
	// Archiving the process makes the template installable again.
	s.do(t, "DELETE", "/v1/processes/"+first.ID, admin.Token, nil).want(t, http.StatusNoContent)
	if s.templates(t, admin.Token)["onboard_supplier"].Installed {
		t.Error("archived template still installed")
	}
	re := s.install(t, admin.Token, http.StatusCreated, "onboard_supplier")
	if len(re.Installed) != 1 || re.Installed[0].ID == first.ID {
		t.Errorf("reinstall: %+v", re)
	}
}

// capabilityFilled reports whether a provider fills capability id in the
// tenant's workspace (it is no gap).
func (s *testServer) capabilityFilled(t *testing.T, tenant, id string) bool {
	t.Helper()
	gaps, err := s.ws.Capabilities().Gaps(context.Background(), tenant, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	return len(gaps) == 0
}

// driveRun works run id to its end: it completes every task the run waits
// on with the first action of prefer the task offers (else its first) and
// fields from values (every required field must have one), and approves
// every approval. It returns the finished run.
func (s *testServer) driveRun(t *testing.T, token, id string, prefer []string, values map[string]any) runView {
	t.Helper()
	for range 50 {
		r := s.awaitRun(t, token, id, "waiting or finished", func(r runView) bool {
			return r.Status != "running"
		})
		switch r.Status {
		case "completed":
			return r
		case "waiting":
		default:
			t.Fatalf("run %s ended %s: %v", id, r.Status, deref(r.Error))
		}
		acted := false
		for _, st := range r.Steps {
			switch {
			case st.Status == "waiting_task" && st.TaskID != nil:
				s.completeTask(t, token, *st.TaskID, prefer, values)
				acted = true
			case st.Status == "waiting_approval" && st.ApprovalID != nil:
				s.do(t, "POST", "/v1/approvals/"+*st.ApprovalID+"/approve", token, `{}`).want(t, http.StatusOK)
				acted = true
			}
		}
		if !acted {
			t.Fatalf("run %s waits on nothing a person can do: %+v", id, r)
		}
		s.awaitRun(t, token, id, "moved on", func(n runView) bool { return !sameSteps(n, r) })
	}
	t.Fatalf("run %s did not finish", id)
	return runView{}
}

func sameSteps(a, b runView) bool {
	if a.Status != b.Status || len(a.Steps) != len(b.Steps) {
		return false
	}
	for i := range a.Steps {
		if a.Steps[i].Status != b.Steps[i].Status {
			return false
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (s *testServer) completeTask(t *testing.T, token, id string, prefer []string, values map[string]any) {
	t.Helper()
	var task struct {
		Actions []string         `json:"actions"`
		Fields  []map[string]any `json:"fields"`
	}
	s.do(t, "GET", "/v1/tasks/"+id, token, nil).want(t, http.StatusOK).decode(t, &task)
	action := task.Actions[0]
	for _, p := range prefer {
		if slices.Contains(task.Actions, p) {
			action = p
			break
		}
	}
	fields := map[string]any{}
	for _, f := range task.Fields {
		key := fmt.Sprint(f["key"])
		if v, ok := values[key]; ok {
			fields[key] = v
		} else if req, _ := f["required"].(bool); req {
			t.Fatalf("task %s needs field %s, which the test does not fill", id, key)
		}
	}
	s.do(t, "POST", "/v1/tasks/"+id+"/complete", token, map[string]any{"action": action, "fields": fields}).want(t, http.StatusOK)
}

// The interface's three templates, installed on a fresh workspace, each
// run once to completion through the engine, people's tasks done by the
// test.
func TestInterfaceTemplatesRun(t *testing.T) {
	t.Parallel()
	t.Run("onboard a supplier", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, httpapi.Options{DevLogin: true})
		admin := s.devLogin(t, `{}`)
		out := s.install(t, admin.Token, http.StatusCreated, "onboard_supplier")
		proc := out.Installed[0]
		run := s.startRun(t, admin.Token, proc.ID, "Acme Parts Ltd")
		done := s.driveRun(t, admin.Token, run.ID, []string{"submit", "approve"}, map[string]any{
			"legal_name": "Acme Parts Ltd", "contact_email": "ap@acme.example", "tax_id": "GB123456789",
			"iban": "GB82WEST12345698765432", "payment_terms_days": 30,
		})
		if diff := cmp.Diff([]string{"details", "check", "route", "welcome", "approve"}, done.stepKeys()); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		for _, st := range done.Steps {
			if st.Status != "completed" {
				t.Errorf("step %s %s", st.Key, st.Status)
			}
		}
		if got := done.step(t, "route").Output.(map[string]any)["queue"]; got != "procurement" {
			t.Errorf("routed to %v", got)
		}
		msgs := s.runOutbox(t, admin.Token)
		if len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]), "ap@acme.example") {
			t.Errorf("outbox %+v", msgs)
		}
	})
	t.Run("validate a supplier invoice", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, httpapi.Options{DevLogin: true})
		admin := s.devLogin(t, `{}`)
		out := s.install(t, admin.Token, http.StatusCreated, "validate_supplier_invoice")
		if len(out.Installed) != 1 {
			t.Fatalf("install: %+v", out)
		}
		typeID := s.invoiceType(t, admin.Token)
		doc := s.uploadDoc(t, admin.Token, typeID, "inv-7.txt", invoiceText("INV-7", "1,200.00", "2024-03-02"))
		var runs []runView
		s.awaitRuns(t, admin.Token, "/v1/process-runs?process_id="+out.Installed[0].ID, 1, &runs)
		done := s.driveRun(t, admin.Token, runs[0].ID, []string{"scheduled"}, map[string]any{"payment_date": "2024-03-01"})
		if diff := cmp.Diff([]string{"check", "route", "approve", "schedule"}, done.stepKeys()); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		var d struct{ Status string }
		s.do(t, "GET", "/v1/docs/documents/"+doc.ID, admin.Token, nil).want(t, http.StatusOK).decode(t, &d)
		if d.Status != "approved" {
			t.Errorf("document %s, want approved", d.Status)
		}
	})
	t.Run("chase a receivable", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, httpapi.Options{DevLogin: true})
		admin := s.devLogin(t, `{}`)
		for _, c := range []string{"invoice.get", "invoice.send", "customer.create", "invoice.create", "invoice.finalize"} {
			if !s.capabilityFilled(t, admin.TenantID, c) {
				t.Fatalf("no provider fills %s: the invoicing app should", c)
			}
		}
		out := s.install(t, admin.Token, http.StatusCreated, "chase_receivable")
		proc := out.Installed[0]
		// An open invoice, made through the invoicing app's capabilities.
		ctx := context.Background()
		call := func(capID string, args map[string]any) map[string]any {
			raw, _ := json.Marshal(args)
			res, err := s.ws.Capabilities().Call(ctx, capability.Call{Tenant: admin.TenantID, Capability: capID, Args: raw,
				IdempotencyKey: "test/" + capID})
			if err != nil {
				t.Fatalf("%s: %v", capID, err)
			}
			var out map[string]any
			if err := json.Unmarshal(res, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
		cus := call("customer.create", map[string]any{"name": "Globex", "email": "ap@globex.example"})
		inv := call("invoice.create", map[string]any{"customer_id": cus["customer_id"],
			"lines": []map[string]any{{"description": "Consulting", "quantity": 1, "unit_amount_cents": 120000}}})
		call("invoice.finalize", map[string]any{"invoice_id": inv["invoice_id"]})
		// The invoice falls overdue: the event the template listens for.
		if _, err := s.ws.Engine().Publish(ctx, runengine.PublishParams{Tenant: admin.TenantID, Name: "invoicing.invoice.overdue",
			Data: map[string]any{"invoice_id": inv["invoice_id"]}}); err != nil {
			t.Fatal(err)
		}
		var runs []runView
		s.awaitRuns(t, admin.Token, "/v1/process-runs?process_id="+proc.ID, 1, &runs)
		done := s.driveRun(t, admin.Token, runs[0].ID, []string{"approve", "promised"}, map[string]any{"promised_date": "2024-04-01", "note": "pays Friday"})
		if diff := cmp.Diff([]string{"invoice", "reminder", "resend", "call"}, done.stepKeys()); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
	})
}

// awaitRuns reads path until it lists n runs and decodes them into out (a
// trigger starts its runs as the engine dispatches the event): it reads it
// again after each run the tenant starts, as the engine's subscription
// tells, for at most 20 seconds.
func (s *testServer) awaitRuns(t *testing.T, token, path string, n int, out *[]runView) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Subscribed before the first read, so no start falls in between.
	next, stop := iter.Pull2(s.ws.Subscribe(ctx, bas.SubscribeParams{Tenant: s.tenantOf(t, token),
		Names: []string{"process.run.started"}}))
	defer stop()
	for {
		s.do(t, "GET", path, token, nil).want(t, http.StatusOK).decode(t, out)
		if len(*out) >= n {
			return
		}
		if _, err, ok := next(); !ok || (err != nil && !errors.Is(err, bas.ErrMissed)) {
			t.Fatalf("%s never listed %d runs (%v)", path, n, err)
		}
	}
}
