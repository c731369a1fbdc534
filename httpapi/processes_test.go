package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// newProcessServer is newTestServer with development login, on a Badger
// store opened here (in memory) and handed to the workspace as Options.Store.
func newProcessServer(t *testing.T) *testServer {
	t.Helper()
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: logger})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	clk := bas.NewFakeClock(testStart)
	ws, err := bas.Open(context.Background(), bas.Options{Store: st, Clock: clk, Logger: logger})
	if err != nil {
		_ = st.Close()
		t.Fatalf("open workspace: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	h := httpapi.New(ws, httpapi.Options{DevLogin: true})
	srv := httptest.NewServer(conform(t, h))
	t.Cleanup(srv.Close)
	return &testServer{ws: ws, h: h, srv: srv, clock: clk, logs: logs}
}

// processOut is the part of a process record the tests read.
type processOut struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Function    string         `json:"function"`
	Version     int            `json:"version"`
	Enabled     bool           `json:"enabled"`
	Archived    bool           `json:"archived"`
	TemplateID  *string        `json:"template_id"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
	Trigger     map[string]any `json:"trigger"`
	Steps       []struct {
		Key      string         `json:"key"`
		Type     string         `json:"type"`
		Config   map[string]any `json:"config"`
		Controls map[string]any `json:"controls"`
	} `json:"steps"`
}

type violationOut struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

func violationsOf(t *testing.T, r *testResponse) []string {
	t.Helper()
	var body struct {
		Detail []violationOut `json:"detail"`
	}
	r.decode(t, &body)
	var out []string
	for _, v := range body.Detail {
		parts := make([]string, len(v.Loc))
		for i, p := range v.Loc {
			parts[i] = fmt.Sprint(p)
		}
		if v.Msg == "" {
			t.Errorf("violation without a message: %+v", v)
		}
		out = append(out, strings.Join(parts, ".")+":"+v.Type)
	}
	return out
}

const invoiceProcess = `{
  "name": "Supplier invoice",
  "description": "Validates supplier invoices and pays them",
  "function": "finance",
  "trigger": {"type": "event", "event": "docs.document.validated", "filter": {"amount_cents": {"gte": 1000}}},
  "steps": [
    {"key": "check", "type": "validate", "config": {"record": "${trigger.data}", "rules": [{"field": "amount_cents", "check": "required"}]}},
    {"key": "pay", "type": "execute", "capability": "payments.pay",
     "config": {"args": {"amount_cents": "${trigger.data.amount_cents}"}, "amount_path": "trigger.data.amount_cents"},
     "controls": {"require_approval": true, "amount_cap_cents": 100000}}
  ]
}`

func TestProcessesCRUD(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_crud"}`).Token

	r := s.do(t, "POST", "/v1/processes", admin, invoiceProcess).want(t, http.StatusCreated)
	var p processOut
	r.decode(t, &p)
	if got, want := r.Header.Get("Location"), "/api/v1/processes/"+p.ID; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	if !strings.HasPrefix(p.ID, "prc_") || p.Version != 1 || !p.Enabled || p.Archived || p.TemplateID != nil ||
		p.Function != "finance" || len(p.Steps) != 2 || p.Trigger["event"] != "docs.document.validated" {
		t.Errorf("created = %+v", p)
	}
	if !strings.HasSuffix(p.CreatedAt, "Z") {
		t.Errorf("created_at %q is not UTC", p.CreatedAt)
	}

	var got processOut
	s.do(t, "GET", "/v1/processes/"+p.ID, admin, nil).want(t, http.StatusOK).decode(t, &got)
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("GET (-created +got):\n%s", diff)
	}

	// A name edit keeps version 1; a steps edit makes version 2.
	s.clock.Advance(1000000)
	s.do(t, "PATCH", "/v1/processes/"+p.ID, admin, `{"name": "Invoices", "description": null}`).
		want(t, http.StatusOK).decode(t, &got)
	if got.Version != 1 || got.Name != "Invoices" || got.Description != "" || got.UpdatedAt == p.UpdatedAt {
		t.Errorf("after a name edit = %+v", got)
	}
	s.do(t, "PATCH", "/v1/processes/"+p.ID, admin,
		`{"steps": [{"key": "review", "type": "human_task", "config": {"title": "Review ${trigger.data.document_id}"}}]}`).
		want(t, http.StatusOK).decode(t, &got)
	if got.Version != 2 || len(got.Steps) != 1 || got.Steps[0].Key != "review" {
		t.Errorf("after a steps edit = %+v", got)
	}

	var versions []struct {
		Version   int              `json:"version"`
		Trigger   map[string]any   `json:"trigger"`
		Steps     []map[string]any `json:"steps"`
		CreatedAt string           `json:"created_at"`
		CreatedBy string           `json:"created_by"`
	}
	s.do(t, "GET", "/v1/processes/"+p.ID+"/versions", admin, nil).want(t, http.StatusOK).decode(t, &versions)
	if len(versions) != 2 || versions[0].Version != 1 || versions[1].Version != 2 ||
		len(versions[0].Steps) != 2 || len(versions[1].Steps) != 1 || versions[0].CreatedBy == "" || versions[0].CreatedAt == "" {
		t.Errorf("versions = %+v", versions)
	}

	// Archive: 204, the process stays readable, a second DELETE is 404.
	s.do(t, "DELETE", "/v1/processes/"+p.ID, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/processes/"+p.ID, admin, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/processes/"+p.ID, admin, nil).want(t, http.StatusOK).decode(t, &got)
	if !got.Archived {
		t.Errorf("after DELETE = %+v", got)
	}
	r = s.do(t, "PATCH", "/v1/processes/"+p.ID, admin, `{"name": "again"}`).want(t, http.StatusConflict)
	if d := r.detail(t); d != "process is archived" {
		t.Errorf("PATCH archived: %q", d)
	}
	var list []processOut
	s.do(t, "GET", "/v1/processes", admin, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("archived process listed: %+v", list)
	}
	s.do(t, "GET", "/v1/processes?archived=true", admin, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("?archived=true = %+v", list)
	}
	s.do(t, "GET", "/v1/processes/prc_missing", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", "/v1/processes/prc_missing/versions", admin, nil).want(t, http.StatusNotFound)
}

func TestProcessesListPagingAndFilters(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_list"}`).Token
	for i, fn := range []string{"finance", "sales", "finance"} {
		s.clock.Advance(1000000)
		body := fmt.Sprintf(`{"name": "p%d", "function": %q, "enabled": %t, "trigger": {"type": "manual"},
			"steps": [{"key": "wait", "type": "wait", "config": {"duration": "1h"}}]}`, i, fn, i != 1)
		s.do(t, "POST", "/v1/processes", admin, body).want(t, http.StatusCreated)
	}
	listNames := func(path string) ([]string, string) {
		var list []processOut
		r := s.do(t, "GET", path, admin, nil).want(t, http.StatusOK)
		r.decode(t, &list)
		var out []string
		for _, p := range list {
			out = append(out, p.Name)
		}
		return out, r.Header.Get("X-Next-Cursor")
	}
	for _, test := range []struct {
		path string
		want []string
	}{
		{"/v1/processes", []string{"p2", "p1", "p0"}},
		{"/v1/processes?function=finance", []string{"p2", "p0"}},
		{"/v1/processes?enabled=false", []string{"p1"}},
		{"/v1/processes?enabled=true&function=sales", nil},
	} {
		got, _ := listNames(test.path)
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.path, diff)
		}
	}
	page1, next := listNames("/v1/processes?limit=2")
	if diff := cmp.Diff([]string{"p2", "p1"}, page1); diff != "" || next == "" {
		t.Fatalf("page 1 (-want +got):\n%s next=%q", diff, next)
	}
	page2, next := listNames("/v1/processes?limit=2&cursor=" + next)
	if diff := cmp.Diff([]string{"p0"}, page2); diff != "" || next != "" {
		t.Errorf("page 2 (-want +got):\n%s next=%q", diff, next)
	}
	r := s.do(t, "GET", "/v1/processes?enabled=maybe&limit=201", admin, nil).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"query.limit:less_than_equal"}, violationsOf(t, r)); diff != "" {
		t.Errorf("bad query (-want +got):\n%s", diff)
	}
	r = s.do(t, "GET", "/v1/processes?enabled=maybe", admin, nil).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"query.enabled:type_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("bad enabled (-want +got):\n%s", diff)
	}
}

func TestProcessesValidation(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_valid"}`).Token
	body := fmt.Sprintf(`{
	  "name": %q,
	  "trigger": {"type": "schedule", "cron": "99 * * * *"},
	  "steps": [
	    {"key": "Pay", "type": "execute"},
	    {"key": "wait", "type": "wait", "config": {"duration": "0s", "event": "x.y"}},
	    {"key": "wait", "type": "human_task", "config": {"titel": "typo"}},
	    {"key": "route", "type": "route", "config": {"rules": [{"when": {"a": {"near": 1}}, "queue": "q"}], "default": {"queue": "d"}}}
	  ]
	}`, strings.Repeat("n", 201))
	r := s.do(t, "POST", "/v1/processes", admin, body).want(t, http.StatusUnprocessableEntity)
	want := []string{
		"body.name:string_too_long",
		"body.trigger.cron:value_error",
		"body.steps.0.key:string_pattern_mismatch",
		"body.steps.0.capability:missing",
		"body.steps.1.config.event:value_error",
		"body.steps.1.config.duration:greater_than_equal",
		"body.steps.2.config.title:missing",
		"body.steps.2.config.titel:extra_forbidden",
		"body.steps.2.key:value_error",
		"body.steps.3.config.rules.0.when.a:value_error",
	}
	sorted := func(a, b string) bool { return a < b }
	if diff := cmp.Diff(want, violationsOf(t, r), cmpopts.SortSlices(sorted)); diff != "" {
		t.Errorf("every violation at once (-want +got):\n%s", diff)
	}
	r = s.do(t, "POST", "/v1/processes", admin, `{"name": `).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body:json_invalid"}, violationsOf(t, r)); diff != "" {
		t.Errorf("malformed JSON (-want +got):\n%s", diff)
	}
	r = s.do(t, "POST", "/v1/processes", admin, `{"name": 5, "trigger": {"type": "manual"}, "steps": "none"}`).
		want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.name:type_error", "body.steps:type_error"}, violationsOf(t, r)); diff != "" {
		t.Errorf("wrong JSON types (-want +got):\n%s", diff)
	}
	// Bounds of the name, exactly.
	ok := func(name string) string {
		return fmt.Sprintf(`{"name": %q, "trigger": {"type": "manual"}, "steps": [{"key": "w", "type": "wait", "config": {"duration": "1h"}}]}`, name)
	}
	s.do(t, "POST", "/v1/processes", admin, ok(strings.Repeat("n", 200))).want(t, http.StatusCreated)
	s.do(t, "POST", "/v1/processes", admin, ok("")).want(t, http.StatusUnprocessableEntity)

	// PATCH validates the fields present.
	var p processOut
	s.do(t, "POST", "/v1/processes", admin, ok("p")).want(t, http.StatusCreated).decode(t, &p)
	r = s.do(t, "PATCH", "/v1/processes/"+p.ID, admin, `{"name": null, "steps": [], "trigger": {"type": "event"}}`).
		want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.name:type_error", "body.steps:too_short", "body.trigger.event:missing"},
		violationsOf(t, r), cmpopts.SortSlices(sorted)); diff != "" {
		t.Errorf("PATCH violations (-want +got):\n%s", diff)
	}
}

func TestProcessesAccess(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_a"}`).Token
	viewer := s.devLogin(t, `{"tenant_id": "ten_a", "user_id": "viewer", "roles": ["viewer"]}`).Token
	other := s.devLogin(t, `{"tenant_id": "ten_b"}`).Token
	docsKey := s.newKey(t, admin, `{"name": "docs only", "roles": ["admin"], "apps": ["docs"]}`).Secret

	var p processOut
	s.do(t, "POST", "/v1/processes", admin, invoiceProcess).want(t, http.StatusCreated).decode(t, &p)

	s.do(t, "GET", "/v1/processes", "", nil).want(t, http.StatusUnauthorized)
	s.do(t, "GET", "/v1/processes/"+p.ID, viewer, nil).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/processes/step-types", viewer, nil).want(t, http.StatusOK)
	r := s.do(t, "POST", "/v1/processes", viewer, invoiceProcess).want(t, http.StatusForbidden)
	if d := r.detail(t); d != "missing permission processes.manage" {
		t.Errorf("viewer POST: %q", d)
	}
	s.do(t, "PATCH", "/v1/processes/"+p.ID, viewer, `{"name": "x"}`).want(t, http.StatusForbidden)
	s.do(t, "DELETE", "/v1/processes/"+p.ID, viewer, nil).want(t, http.StatusForbidden)
	r = s.do(t, "GET", "/v1/processes", docsKey, nil).want(t, http.StatusForbidden)
	if d := r.detail(t); d != "key not allowed for app processes" {
		t.Errorf("docs key: %q", d)
	}
	// Another tenant sees nothing of it.
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/processes/" + p.ID, ""},
		{"GET", "/v1/processes/" + p.ID + "/versions", ""},
		{"PATCH", "/v1/processes/" + p.ID, `{"name": "mine"}`},
		{"DELETE", "/v1/processes/" + p.ID, ""},
	} {
		var body any
		if req.body != "" {
			body = req.body
		}
		r := s.do(t, req.method, req.path, other, body).want(t, http.StatusNotFound)
		if d := r.detail(t); d != "process not found" {
			t.Errorf("%s %s from another tenant: %q", req.method, req.path, d)
		}
	}
	var list []processOut
	s.do(t, "GET", "/v1/processes", other, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("another tenant lists %d processes", len(list))
	}
}

func TestStepTypesRoute(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_types"}`).Token
	var types []struct {
		Type         string         `json:"type"`
		Label        string         `json:"label"`
		Description  string         `json:"description"`
		ConfigSchema map[string]any `json:"config_schema"`
		Capabilities []string       `json:"capabilities"`
		CanRun       *bool          `json:"can_run"`
		Reason       *string        `json:"reason"`
	}
	s.do(t, "GET", "/v1/processes/step-types", admin, nil).want(t, http.StatusOK).decode(t, &types)
	var names []string
	byType := map[string]int{}
	for i, st := range types {
		names = append(names, st.Type)
		byType[st.Type] = i
		if st.Label == "" || st.Description == "" || st.ConfigSchema["type"] != "object" || st.CanRun == nil {
			t.Errorf("%s = %+v", st.Type, st)
			continue
		}
		if *st.CanRun != (st.Reason == nil) {
			t.Errorf("%s: can_run %v with reason %v", st.Type, *st.CanRun, st.Reason)
		}
	}
	want := []string{"intake", "validate", "route", "consolidate", "analyse", "draft", "monitor", "follow_up", "execute", "human_task", "wait"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("step types (-want +got):\n%s", diff)
	}
	for _, typ := range []string{"validate", "route", "human_task", "wait", "draft", "execute"} {
		if !*types[byType[typ]].CanRun {
			t.Errorf("%s cannot run: %s", typ, *types[byType[typ]].Reason)
		}
	}
	// follow_up runs on email.send, which the built-in outbox provides.
	if fu := types[byType["follow_up"]]; !*fu.CanRun {
		t.Errorf("follow_up cannot run: %s", *fu.Reason)
	}
	// intake reads documents through document.extract: can_run follows
	// whether the registry can resolve it, and says why when it cannot.
	in := types[byType["intake"]]
	_, err := s.ws.Capabilities().Resolve(t.Context(), "ten_types", "document.extract")
	if *in.CanRun != (err == nil) {
		t.Errorf("intake can_run = %v, but resolving document.extract gives %v", *in.CanRun, err)
	}
	if !*in.CanRun && !strings.Contains(*in.Reason, "document.extract") {
		t.Errorf("intake reason = %q", *in.Reason)
	}
}

func TestProcessesFourEyes(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	owner := s.devLogin(t, `{"tenant_id": "ten_4e", "user_id": "owner"}`).Token
	second := s.devLogin(t, `{"tenant_id": "ten_4e", "user_id": "second"}`).Token
	s.do(t, "PATCH", "/v1/workspace", owner, `{"four_eyes": true}`).want(t, http.StatusOK)

	var p processOut
	s.do(t, "POST", "/v1/processes", owner, invoiceProcess).want(t, http.StatusCreated).decode(t, &p)

	// Lowering the cap is tightening: applied at once.
	tight := strings.Replace(invoiceProcess, `"amount_cap_cents": 100000`, `"amount_cap_cents": 50000`, 1)
	var got processOut
	s.do(t, "PATCH", "/v1/processes/"+p.ID, owner, tight).want(t, http.StatusOK).decode(t, &got)
	if got.Version != 2 {
		t.Fatalf("tightening: version %d", got.Version)
	}

	// Removing the approval waits for a second person.
	wide := strings.Replace(tight, `"require_approval": true, `, ``, 1)
	if wide == tight {
		t.Fatal("the widening edit did not change the body")
	}
	var accepted struct {
		Change struct {
			ID      string `json:"id"`
			Kind    string `json:"kind"`
			Status  string `json:"status"`
			Summary string `json:"summary"`
		} `json:"change"`
	}
	s.do(t, "PATCH", "/v1/processes/"+p.ID, owner, wide).want(t, http.StatusAccepted).decode(t, &accepted)
	ch := accepted.Change
	if ch.ID == "" || ch.Kind != "process.update" || ch.Status != "pending" || !strings.Contains(ch.Summary, "step pay no longer requires approval") {
		t.Fatalf("202 body = %+v", accepted)
	}
	s.do(t, "GET", "/v1/processes/"+p.ID, owner, nil).want(t, http.StatusOK).decode(t, &got)
	if got.Version != 2 || got.Steps[1].Controls["require_approval"] != true {
		t.Errorf("applied before approval: %+v", got)
	}
	var pending []struct {
		ID string `json:"id"`
	}
	s.do(t, "GET", "/v1/changes?status=pending", second, nil).want(t, http.StatusOK).decode(t, &pending)
	if len(pending) != 1 || pending[0].ID != ch.ID {
		t.Fatalf("pending changes = %+v", pending)
	}

	// The requester cannot approve it; a second admin can.
	s.do(t, "POST", "/v1/changes/"+ch.ID+"/approve", owner, `{}`).want(t, http.StatusForbidden)
	s.do(t, "POST", "/v1/changes/"+ch.ID+"/approve", second, `{"note": "fine"}`).want(t, http.StatusOK)
	got = processOut{} // decoding into a used record would merge the controls maps
	s.do(t, "GET", "/v1/processes/"+p.ID, owner, nil).want(t, http.StatusOK).decode(t, &got)
	if got.Version != 3 || got.Steps[1].Controls["require_approval"] != nil {
		t.Errorf("after approval = %+v", got)
	}
	var versions []struct {
		Version   int    `json:"version"`
		CreatedBy string `json:"created_by"`
	}
	s.do(t, "GET", "/v1/processes/"+p.ID+"/versions", owner, nil).want(t, http.StatusOK).decode(t, &versions)
	if len(versions) != 3 || versions[2].Version != 3 || versions[2].CreatedBy != "owner" {
		t.Errorf("versions = %+v", versions)
	}
	s.do(t, "POST", "/v1/changes/"+ch.ID+"/approve", second, `{}`).want(t, http.StatusConflict)
}

func TestProcessCreateIdempotent(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_idem"}`).Token
	first := s.do(t, "POST", "/v1/processes", admin, invoiceProcess, "Idempotency-Key", "k1").want(t, http.StatusCreated)
	again := s.do(t, "POST", "/v1/processes", admin, invoiceProcess, "Idempotency-Key", "k1").want(t, http.StatusCreated)
	if string(first.Body) != string(again.Body) {
		t.Errorf("the replay differs:\n%s\n%s", first.Body, again.Body)
	}
	var list []processOut
	s.do(t, "GET", "/v1/processes", admin, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 {
		t.Errorf("%d processes after a replayed create, want 1", len(list))
	}
	s.do(t, "POST", "/v1/processes", admin, strings.Replace(invoiceProcess, "Supplier", "Other", 1),
		"Idempotency-Key", "k1").want(t, http.StatusConflict)
}
