package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const routeDecision = `{
  "name": "invoice-route",
  "description": "Which queue an invoice goes to",
  "input_schema": {"type": "object", "required": ["vendor"], "properties": {"vendor": {"type": "string"}, "amount": {"type": "number"}}},
  "output_schema": {"type": "object", "required": ["queue"], "properties": {"queue": {"enum": ["ap", "review", "legal"]}}},
  "thresholds": {"auto": 0.8}
}`

type evaluationOut struct {
	CaseID     string          `json:"case_id"`
	Output     json.RawMessage `json:"output"`
	Confidence float64         `json:"confidence"`
	Mode       string          `json:"mode"`
	RuleID     string          `json:"rule_id"`
}

type agreementOut struct {
	Overall *float64 `json:"overall"`
	Items   int      `json:"items"`
	ByRule  []struct {
		RuleID   string  `json:"rule_id"`
		Agree    int     `json:"agree"`
		Disagree int     `json:"disagree"`
		Rate     float64 `json:"rate"`
	} `json:"by_rule"`
}

func sortedViolations(t *testing.T, r *testResponse) []string {
	t.Helper()
	got := violationsOf(t, r)
	sort.Strings(got)
	return got
}

func TestDecisionsAPI(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_dec"}`).Token
	member := s.devLogin(t, `{"tenant_id": "ten_dec", "user_id": "m", "email": "m@example.com", "roles": ["member"]}`).Token
	viewer := s.devLogin(t, `{"tenant_id": "ten_dec", "user_id": "v", "email": "v@example.com", "roles": ["viewer"]}`).Token

	s.do(t, "POST", "/v1/decisions", member, routeDecision).want(t, http.StatusForbidden)
	var rec struct {
		ID          string             `json:"id"`
		Name        string             `json:"name"`
		Thresholds  map[string]float64 `json:"thresholds"`
		InputSchema map[string]any     `json:"input_schema"`
		CreatedBy   string             `json:"created_by"`
	}
	r := s.do(t, "POST", "/v1/decisions", admin, routeDecision).want(t, http.StatusCreated)
	r.decode(t, &rec)
	if got := r.Header.Get("Location"); got != "/api/v1/decisions/invoice-route" {
		t.Errorf("Location = %q", got)
	}
	if !strings.HasPrefix(rec.ID, "dec_") || rec.Thresholds["auto"] != 0.8 || rec.Thresholds["suggest"] != 0.6 || rec.InputSchema["type"] != "object" {
		t.Errorf("created = %+v", rec)
	}
	s.do(t, "POST", "/v1/decisions", admin, routeDecision).want(t, http.StatusConflict)
	var list []struct{ Name string }
	s.do(t, "GET", "/v1/decisions", viewer, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 || list[0].Name != "invoice-route" {
		t.Errorf("list = %+v", list)
	}
	s.do(t, "GET", "/v1/decisions/invoice-route", viewer, nil).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/decisions/nope", viewer, nil).want(t, http.StatusNotFound)

	// Nothing confirmed yet: manual.
	var ev evaluationOut
	s.do(t, "POST", "/v1/decisions/invoice-route/evaluate", member, `{"input": {"vendor": "acme"}}`).
		want(t, http.StatusOK).decode(t, &ev)
	if string(ev.Output) != "null" || ev.Confidence != 0 || ev.Mode != "manual" || ev.RuleID != "none" || !strings.HasPrefix(ev.CaseID, "dcs_") {
		t.Errorf("first evaluation = %+v", ev)
	}
	// A person gives the outcome of that case: the decision learns it.
	s.do(t, "POST", "/v1/decisions/invoice-route/feedback", member,
		fmt.Sprintf(`{"results": [{"rule_id": %q, "verdict": "disagree", "outcome": {"queue": "ap"}}]}`, ev.CaseID)).
		want(t, http.StatusForbidden)
	var ag agreementOut
	s.do(t, "POST", "/v1/decisions/invoice-route/feedback", admin,
		fmt.Sprintf(`{"results": [{"rule_id": %q, "verdict": "disagree", "note": null, "outcome": {"queue": "ap"}}]}`, ev.CaseID)).
		want(t, http.StatusOK).decode(t, &ag)
	if ag.Items != 1 || *ag.Overall != 0 || len(ag.ByRule) != 1 || ag.ByRule[0].RuleID != "none" {
		t.Errorf("agreement = %+v", ag)
	}
	var cs struct {
		Status  string          `json:"status"`
		Outcome json.RawMessage `json:"outcome"`
	}
	s.do(t, "GET", "/v1/decisions/invoice-route/cases/"+ev.CaseID, viewer, nil).want(t, http.StatusOK).decode(t, &cs)
	if cs.Status != "corrected" || string(cs.Outcome) != `{"queue":"ap"}` {
		t.Errorf("case = %+v", cs)
	}
	// Recorded outcomes teach it too.
	s.clock.Advance(time.Second)
	r = s.do(t, "POST", "/v1/decisions/invoice-route/outcomes", admin, `{"input": {"vendor": "acme"}, "output": {"queue": "ap"}}`).
		want(t, http.StatusCreated)
	if !strings.HasPrefix(r.Header.Get("Location"), "/api/v1/decisions/invoice-route/cases/dcs_") {
		t.Errorf("Location = %q", r.Header.Get("Location"))
	}
	s.clock.Advance(time.Second)
	s.do(t, "POST", "/v1/decisions/invoice-route/evaluate", member, `{"input": {"vendor": "acme"}}`).
		want(t, http.StatusOK).decode(t, &ev)
	if string(ev.Output) != `{"queue":"ap"}` || ev.Confidence != 1 || ev.Mode != "auto" || !strings.HasPrefix(ev.RuleID, "exact:") {
		t.Errorf("learned evaluation = %+v", ev)
	}
	s.do(t, "POST", "/v1/decisions/invoice-route/feedback", admin,
		fmt.Sprintf(`{"results": [{"rule_id": %q, "verdict": "agree"}]}`, ev.CaseID)).want(t, http.StatusOK)
	s.do(t, "POST", "/v1/decisions/invoice-route/feedback", admin,
		fmt.Sprintf(`{"results": [{"rule_id": %q, "verdict": "agree"}]}`, ev.CaseID)).want(t, http.StatusConflict)
	s.do(t, "GET", "/v1/decisions/invoice-route/agreement", viewer, nil).want(t, http.StatusOK).decode(t, &ag)
	if ag.Items != 2 || *ag.Overall != 0.5 || len(ag.ByRule) != 2 {
		t.Errorf("agreement = %+v", ag)
	}
	var cases []struct{ ID, Status string }
	s.do(t, "GET", "/v1/decisions/invoice-route/cases?limit=2", viewer, nil).want(t, http.StatusOK).decode(t, &cases)
	if len(cases) != 2 || cases[0].ID != ev.CaseID || cases[0].Status != "agreed" {
		t.Errorf("cases = %+v", cases)
	}

	// Delete: 204, then 404.
	s.do(t, "DELETE", "/v1/decisions/invoice-route", member, nil).want(t, http.StatusForbidden)
	s.do(t, "DELETE", "/v1/decisions/invoice-route", admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/decisions/invoice-route", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "POST", "/v1/decisions/invoice-route/evaluate", member, `{"input": {}}`).want(t, http.StatusNotFound)
}

func TestDecisionsValidationHTTP(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_decv"}`).Token
	s.do(t, "POST", "/v1/decisions", admin, routeDecision).want(t, http.StatusCreated)
	x := func(n int) string { return strings.Repeat("x", n) }
	items := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"rule_id": "dcs_%d", "verdict": "agree"}`, i)
		}
		return `{"results": [` + strings.Join(parts, ",") + `]}`
	}
	for _, test := range []struct {
		name, path, body string
		want             []string
	}{
		{"extra properties", "/v1/decisions", `{"name": "a", "description": "d", "colour": 1, "thresholds": {"auto": 0.9, "x": 1}}`,
			[]string{"body.colour:extra_forbidden", "body.thresholds.x:extra_forbidden"}},
		{"required", "/v1/decisions", `{}`, []string{"body.description:missing", "body.name:missing"}},
		{"name and thresholds bounds", "/v1/decisions", fmt.Sprintf(`{"name": %q, "description": "d", "thresholds": {"auto": 1.1, "suggest": -0.1}}`, x(81)),
			[]string{"body.name:string_too_long", "body.thresholds.auto:less_than_equal", "body.thresholds.suggest:greater_than_equal"}},
		{"suggest above auto", "/v1/decisions", `{"name": "b", "description": "d", "thresholds": {"auto": 0.5, "suggest": 0.7}}`,
			[]string{"body.thresholds.suggest:value_error"}},
		{"input_schema not a schema", "/v1/decisions", `{"name": "c", "description": "d", "input_schema": {"type": "nonsense"}}`,
			[]string{"body.input_schema:value_error"}},
		{"input missing", "/v1/decisions/invoice-route/evaluate", `{}`, []string{"body.input:missing"}},
		{"input against input_schema", "/v1/decisions/invoice-route/evaluate", `{"input": {"amount": "x"}}`,
			[]string{"body.input.amount:type_error", "body.input.vendor:missing"}},
		{"no results", "/v1/decisions/invoice-route/feedback", `{"results": []}`, []string{"body.results:too_short"}},
		{"201 results", "/v1/decisions/invoice-route/feedback", items(201), []string{"body.results:too_long"}},
		{"item bounds", "/v1/decisions/invoice-route/feedback",
			fmt.Sprintf(`{"results": [{"rule_id": %q, "verdict": "maybe", "note": %q}, {"rule_id": "", "verdict": "agree"}, {"verdict": "agree"}]}`, x(81), x(2001)),
			[]string{"body.results.0.note:string_too_long", "body.results.0.rule_id:string_too_long", "body.results.0.verdict:enum",
				"body.results.1.rule_id:string_too_short", "body.results.2.rule_id:missing"}},
		{"just inside, unknown cases", "/v1/decisions/invoice-route/feedback",
			fmt.Sprintf(`{"results": [{"rule_id": %q, "verdict": "agree", "note": %q}]}`, x(80), x(2000)),
			[]string{"body.results.0.rule_id:value_error"}},
		{"200 results of unknown cases", "/v1/decisions/invoice-route/feedback", items(200), nil},
		{"outcome output_schema", "/v1/decisions/invoice-route/outcomes", `{"input": {"vendor": "a"}, "output": {"queue": "moon"}}`,
			[]string{"body.output.queue:enum"}},
		{"malformed", "/v1/decisions/invoice-route/evaluate", `{"input": `, []string{"body:json_invalid"}},
	} {
		r := s.do(t, "POST", test.path, admin, test.body)
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d %s, want 422", test.name, r.Status, r.Body)
			continue
		}
		got := sortedViolations(t, r)
		if test.want == nil {
			// 200 unknown cases: each one is named, and the bound passed.
			if len(got) != 200 || got[0] != "body.results.0.rule_id:value_error" {
				t.Errorf("%s: %d violations, first %v", test.name, len(got), got[:1])
			}
			continue
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.name, diff)
		}
	}
}
