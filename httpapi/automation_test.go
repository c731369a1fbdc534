package httpapi_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// automationOut is the part of the automation settings the tests read.
type automationOut struct {
	Scope            string   `json:"scope"`
	ProcessID        *string  `json:"process_id"`
	AutoRamp         bool     `json:"auto_ramp"`
	Paused           bool     `json:"paused"`
	PausedReason     *string  `json:"paused_reason"`
	Percent          int      `json:"percent"`
	MaxPercent       int      `json:"max_percent"`
	SamplePercent    int      `json:"sample_percent"`
	DailyLimit       *int     `json:"daily_limit"`
	ExceptionPercent *int     `json:"exception_percent"`
	ExceptionUntil   *string  `json:"exception_until"`
	EffectivePercent int      `json:"effective_percent"`
	RampMinDecisions int      `json:"ramp_min_decisions"`
	Inherited        []string `json:"inherited"`
	AutomaticToday   int      `json:"automatic_today"`
	Agreement        *struct {
		Overall *float64 `json:"overall"`
		Items   int      `json:"items"`
		ByRule  []any    `json:"by_rule"`
	} `json:"agreement"`
}

// automationBounds checks every bound of interface.md 2.9 just inside and
// just outside, wrong types, rules between fields, several violations at
// once: body -> the violations ("loc:type", sorted), none for 200.
func automationBounds() map[string][]string {
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := map[string][]string{}
	for _, b := range []struct{ field, min, max, below, above string }{
		{"percent", "0", "50", "-1", "101"}, // max_percent is 50 by default: 100 is checked below
		{"max_percent", "0", "100", "-1", "101"},
		{"sample_percent", "0", "50", "-1", "51"},
		{"daily_limit", "0", "1000000", "-1", "1000001"},
		{"ramp_min_agreement", "0.5", "1.0", "0.49", "1.01"},
		{"ramp_min_decisions", "5", "1000", "4", "1001"},
		{"rollback_agreement", "0.5", "1", "0.499", "1.001"},
		{"rollback_min_decisions", "3", "1000", "2", "1001"},
	} {
		cases[fmt.Sprintf(`{%q: %s}`, b.field, b.min)] = nil
		cases[fmt.Sprintf(`{%q: %s}`, b.field, b.max)] = nil
		cases[fmt.Sprintf(`{%q: %s}`, b.field, b.below)] = []string{"body." + b.field + ":greater_than_equal"}
		cases[fmt.Sprintf(`{%q: %s}`, b.field, b.above)] = []string{"body." + b.field + ":less_than_equal"}
		cases[fmt.Sprintf(`{%q: null}`, b.field)] = nil
		cases[fmt.Sprintf(`{%q: "1"}`, b.field)] = []string{"body." + b.field + ":type_error"}
	}
	ex := func(pct, days, reason string) string {
		return fmt.Sprintf(`{"exception_percent": %s, "exception_days": %s, "exception_reason": %q}`, pct, days, reason)
	}
	cases[`{"percent": 100, "max_percent": 100}`] = nil
	cases[`{"percent": 60}`] = []string{"body.percent:value_error"} // above the default max_percent
	cases[ex("1", "1", "r")] = nil
	cases[ex("100", "90", x(500))] = nil
	cases[ex("0", "0", "r")] = []string{"body.exception_days:greater_than_equal", "body.exception_percent:greater_than_equal"}
	cases[ex("101", "91", x(501))] = []string{"body.exception_days:less_than_equal", "body.exception_percent:less_than_equal",
		"body.exception_reason:string_too_long"}
	cases[`{"exception_percent": 5}`] = []string{"body.exception_days:missing", "body.exception_reason:missing"}
	cases[`{"clear_exception": true, "exception_percent": 5, "exception_days": 1, "exception_reason": "r"}`] = []string{"body.clear_exception:value_error"}
	cases[`{"clear_daily_limit": true, "daily_limit": 1}`] = []string{"body.clear_daily_limit:value_error"}
	cases[`{"clear_daily_limit": true, "clear_exception": null}`] = nil
	cases[fmt.Sprintf(`{"paused_reason": %q}`, x(500))] = nil
	cases[fmt.Sprintf(`{"paused_reason": %q}`, x(501))] = []string{"body.paused_reason:string_too_long"}
	cases[fmt.Sprintf(`{"break_glass_reason": %q}`, x(2000))] = nil
	cases[fmt.Sprintf(`{"break_glass_reason": %q}`, x(2001))] = []string{"body.break_glass_reason:string_too_long"}
	cases[`{"auto_ramp": "on", "paused": 0, "clear_daily_limit": "yes", "percent": 1.5}`] = []string{
		"body.auto_ramp:type_error", "body.clear_daily_limit:type_error", "body.paused:type_error", "body.percent:type_error"}
	cases[`{"percent": 101, "sample_percent": 51, "daily_limit": -1, "exception_days": 91, "ramp_min_agreement": 0.1}`] = []string{
		"body.daily_limit:greater_than_equal", "body.exception_days:less_than_equal", "body.exception_percent:missing",
		"body.exception_reason:missing", "body.percent:less_than_equal", "body.ramp_min_agreement:greater_than_equal",
		"body.sample_percent:less_than_equal"}
	cases[`{"percent": `] = []string{"body:json_invalid"}
	cases[`{"unknown": 1}`] = []string{"body.unknown:extra_forbidden"}
	return cases
}

func TestAutomationBoundsHTTP(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_bounds"}`).Token
	var p processOut
	s.do(t, "POST", "/v1/processes", admin, invoiceProcess).want(t, http.StatusCreated).decode(t, &p)
	for body, want := range automationBounds() {
		for _, path := range []string{"/v1/automation", "/v1/processes/" + p.ID + "/automation"} {
			// Each body starts from the defaults.
			s.do(t, "PATCH", "/v1/automation", admin, `{"percent": null, "max_percent": null}`).want(t, http.StatusOK)
			s.do(t, "PATCH", "/v1/processes/"+p.ID+"/automation", admin, `{"percent": null, "max_percent": null}`).want(t, http.StatusOK)
			r := s.do(t, "PATCH", path, admin, body)
			if want == nil {
				if r.Status != http.StatusOK {
					t.Errorf("PATCH %s %s: %d %s, want 200", path, body, r.Status, r.Body)
				}
				continue
			}
			if r.Status != http.StatusUnprocessableEntity {
				t.Errorf("PATCH %s %s: %d %s, want 422", path, body, r.Status, r.Body)
				continue
			}
			got := violationsOf(t, r)
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("PATCH %s %s (-want +got):\n%s", path, body, diff)
			}
		}
	}
}

func TestAutomationAPI(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	admin := s.devLogin(t, `{"tenant_id": "ten_auto"}`).Token
	member := s.devLogin(t, `{"tenant_id": "ten_auto", "user_id": "m", "email": "m@example.com", "roles": ["member"]}`).Token
	var p processOut
	s.do(t, "POST", "/v1/processes", admin, invoiceProcess).want(t, http.StatusCreated).decode(t, &p)

	var ws automationOut
	s.do(t, "GET", "/v1/automation", member, nil).want(t, http.StatusOK).decode(t, &ws)
	if ws.Scope != "workspace" || ws.ProcessID != nil || ws.Percent != 0 || ws.MaxPercent != 50 || ws.SamplePercent != 10 ||
		ws.RampMinDecisions != 20 || len(ws.Inherited) != 15 || ws.Agreement != nil {
		t.Errorf("defaults = %+v", ws)
	}
	s.do(t, "PATCH", "/v1/automation", member, `{"percent": 10}`).want(t, http.StatusForbidden)
	s.do(t, "PATCH", "/v1/automation", admin, `{"percent": 20, "max_percent": 80, "auto_ramp": true}`).
		want(t, http.StatusOK).decode(t, &ws)
	if ws.Percent != 20 || ws.MaxPercent != 80 || !ws.AutoRamp || ws.EffectivePercent != 20 {
		t.Errorf("after PATCH = %+v", ws)
	}

	var proc automationOut
	s.clock.Advance(time.Second)
	s.do(t, "PATCH", "/v1/processes/"+p.ID+"/automation", admin,
		`{"percent": 40, "exception_percent": 90, "exception_days": 3, "exception_reason": "backlog"}`).
		want(t, http.StatusOK).decode(t, &proc)
	if proc.Scope != "process" || *proc.ProcessID != p.ID || proc.Percent != 40 || proc.MaxPercent != 80 ||
		proc.EffectivePercent != 90 || *proc.ExceptionUntil != "2025-03-04T09:00:01Z" {
		t.Errorf("process = %+v", proc)
	}
	if contains(proc.Inherited, "percent") || !contains(proc.Inherited, "max_percent") || !contains(proc.Inherited, "auto_ramp") {
		t.Errorf("inherited = %v", proc.Inherited)
	}
	if proc.Agreement == nil || proc.Agreement.Overall != nil || proc.Agreement.Items != 0 || proc.Agreement.ByRule == nil {
		t.Errorf("agreement = %+v", proc.Agreement)
	}
	// The exception lapses by itself.
	s.clock.Advance(3 * 24 * time.Hour)
	s.do(t, "GET", "/v1/processes/"+p.ID+"/automation", member, nil).want(t, http.StatusOK).decode(t, &proc)
	if proc.ExceptionPercent != nil || proc.EffectivePercent != 40 {
		t.Errorf("after the exception = %+v", proc)
	}

	// Unknown and other tenants' processes are 404.
	s.do(t, "GET", "/v1/processes/prc_nope/automation", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "PATCH", "/v1/processes/prc_nope/automation", admin, `{"percent": 1}`).want(t, http.StatusNotFound)
	other := s.devLogin(t, `{"tenant_id": "ten_other"}`).Token
	s.do(t, "GET", "/v1/processes/"+p.ID+"/automation", other, nil).want(t, http.StatusNotFound)

	// A key limited to the processes app may not reach the automation app,
	// even under /v1/processes.
	key := s.newKey(t, admin, `{"name": "procs", "apps": ["processes"]}`)
	s.do(t, "GET", "/v1/processes/"+p.ID, key.Secret, nil).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/processes/"+p.ID+"/automation", key.Secret, nil).want(t, http.StatusForbidden)

	// Every change is in the audit log with before and after.
	var entries []struct {
		Action   string         `json:"action"`
		Actor    string         `json:"actor"`
		EntityID string         `json:"entity_id"`
		Before   map[string]any `json:"before"`
		After    map[string]any `json:"after"`
	}
	s.do(t, "GET", "/v1/audit?entity=automation", admin, nil).want(t, http.StatusOK).decode(t, &entries)
	if len(entries) != 2 || entries[0].EntityID != p.ID || entries[1].EntityID != "workspace" ||
		entries[0].After["percent"] != float64(40) || entries[1].After["max_percent"] != float64(80) ||
		entries[0].Action != "automation.updated" {
		t.Errorf("audit = %+v", entries)
	}
}

func TestAutomationFourEyesHTTP(t *testing.T) {
	t.Parallel()
	s := newProcessServer(t)
	owner := s.devLogin(t, `{"tenant_id": "ten_a4e", "user_id": "owner"}`).Token
	second := s.devLogin(t, `{"tenant_id": "ten_a4e", "user_id": "second", "email": "s@example.com"}`).Token
	s.do(t, "PATCH", "/v1/workspace", owner, `{"four_eyes": true}`).want(t, http.StatusOK)

	// Narrowing: at once.
	s.do(t, "PATCH", "/v1/automation", owner, `{"sample_percent": 30}`).want(t, http.StatusOK)
	// Widening: 202 {change}, nothing applied.
	var accepted struct {
		Change struct {
			ID, Kind, Status, Summary string
		} `json:"change"`
	}
	s.clock.Advance(time.Second)
	s.do(t, "PATCH", "/v1/automation", owner, `{"percent": 25}`).want(t, http.StatusAccepted).decode(t, &accepted)
	ch := accepted.Change
	if ch.Kind != "automation.settings" || ch.Status != "pending" || !strings.Contains(ch.Summary, "raises percent from 0 to 25") {
		t.Fatalf("change = %+v", ch)
	}
	var ws automationOut
	s.do(t, "GET", "/v1/automation", owner, nil).want(t, http.StatusOK).decode(t, &ws)
	if ws.Percent != 0 || ws.SamplePercent != 30 {
		t.Errorf("before approval = %+v", ws)
	}
	s.do(t, "POST", "/v1/changes/"+ch.ID+"/approve", owner, `{}`).want(t, http.StatusForbidden)
	s.clock.Advance(time.Second)
	s.do(t, "POST", "/v1/changes/"+ch.ID+"/approve", second, `{}`).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/automation", owner, nil).want(t, http.StatusOK).decode(t, &ws)
	if ws.Percent != 25 {
		t.Errorf("after approval = %+v", ws)
	}
	// Break-glass: applied at once, audited with its reason.
	s.clock.Advance(time.Second)
	s.do(t, "PATCH", "/v1/automation", owner, `{"max_percent": 90, "break_glass_reason": "month end"}`).
		want(t, http.StatusOK).decode(t, &ws)
	if ws.MaxPercent != 90 {
		t.Errorf("break-glass = %+v", ws)
	}
	var entries []struct{ Action, Actor, Reason string }
	s.do(t, "GET", "/v1/audit?entity=automation", owner, nil).want(t, http.StatusOK).decode(t, &entries)
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+" "+e.Reason)
	}
	want := []string{"automation.break_glass month end", "automation.change_approved requested by owner", "automation.updated "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}
