package process

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type obj = map[string]any

// baseBody is a valid process body.
func baseBody() obj {
	return obj{
		"name":    "Supplier invoice",
		"trigger": obj{"type": "manual"},
		"steps":   []any{obj{"key": "review", "type": "human_task", "config": obj{"title": "Review the invoice"}}},
	}
}

// withStep is a valid body whose only step is s.
func withStep(s obj) obj {
	b := baseBody()
	b["steps"] = []any{s}
	return b
}

// where lists violations as "loc:type", sorted.
func where(vs []errs.Violation) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Where()+":"+v.Type)
	}
	return out
}

func decodeViolations(t *testing.T, body obj) []errs.Violation {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeIn(raw)
	vs := errs.Violations(err)
	if err != nil && len(vs) == 0 {
		t.Fatalf("DecodeIn: %v", err)
	}
	for _, v := range vs {
		if v.Msg == "" {
			t.Errorf("violation without a message: %+v", v)
		}
	}
	return vs
}

func steps(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = obj{"key": fmt.Sprintf("s%d", i), "type": "wait", "config": obj{"duration": "1h"}}
	}
	return out
}

func TestDecodeInBounds(t *testing.T) {
	t.Parallel()
	set := func(k string, v any) obj { b := baseBody(); b[k] = v; return b }
	stepKey := func(k string) obj { return withStep(obj{"key": k, "type": "wait", "config": obj{"duration": "1h"}}) }
	for _, test := range []struct {
		name string
		body obj
		want []string
	}{
		{"valid", baseBody(), nil},
		{"name of 200 characters", set("name", strings.Repeat("n", 200)), nil},
		{"name of 200 multibyte characters", set("name", strings.Repeat("é", 200)), nil},
		{"name of 201 characters", set("name", strings.Repeat("n", 201)), []string{"name:string_too_long"}},
		{"empty name", set("name", ""), []string{"name:string_too_short"}},
		{"description of 4000", set("description", strings.Repeat("d", 4000)), nil},
		{"description of 4001", set("description", strings.Repeat("d", 4001)), []string{"description:string_too_long"}},
		{"null description", set("description", nil), nil},
		{"function of 80", set("function", strings.Repeat("f", 80)), nil},
		{"function of 81", set("function", strings.Repeat("f", 81)), []string{"function:string_too_long"}},
		{"1 step", set("steps", steps(1)), nil},
		{"50 steps", set("steps", steps(50)), nil},
		{"51 steps", set("steps", steps(51)), []string{"steps:too_long"}},
		{"no steps", set("steps", []any{}), []string{"steps:too_short"}},
		{"key of 40", stepKey("k" + strings.Repeat("x", 39)), nil},
		{"key of 41", stepKey("k" + strings.Repeat("x", 40)), []string{"steps.0.key:string_pattern_mismatch"}},
		{"key of 1", stepKey("k"), nil},
		{"key with digits and underscores", stepKey("step_2"), nil},
		{"key starting with a digit", stepKey("2step"), []string{"steps.0.key:string_pattern_mismatch"}},
		{"key starting with an underscore", stepKey("_step"), []string{"steps.0.key:string_pattern_mismatch"}},
		{"key with upper case", stepKey("Step"), []string{"steps.0.key:string_pattern_mismatch"}},
		{"key with a dash", stepKey("my-step"), []string{"steps.0.key:string_pattern_mismatch"}},
		{"duplicate keys", set("steps", []any{
			obj{"key": "a", "type": "wait", "config": obj{"duration": "1h"}},
			obj{"key": "a", "type": "wait", "config": obj{"duration": "2h"}},
		}), []string{"steps.1.key:value_error"}},
		{"step name of 200", withStep(obj{"key": "a", "name": strings.Repeat("n", 200), "type": "wait", "config": obj{"duration": "1h"}}), nil},
		{"step name of 201", withStep(obj{"key": "a", "name": strings.Repeat("n", 201), "type": "wait", "config": obj{"duration": "1h"}}),
			[]string{"steps.0.name:string_too_long"}},
		{"unknown step type", withStep(obj{"key": "a", "type": "teleport"}), []string{"steps.0.type:enum"}},
		{"unknown fields outside configs are ignored", (func() obj {
			b := withStep(obj{"key": "a", "type": "wait", "config": obj{"duration": "1h"}, "colour": "red",
				"controls": obj{"sla_hours": 2, "extra": true}})
			b["owner"] = "me"
			b["trigger"] = obj{"type": "manual", "note": "x"}
			return b
		})(), nil},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got := where(decodeViolations(t, test.body))
			if diff := cmp.Diff(test.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeInMalformed(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		body string
		want []string
	}{
		{`{"name": `, []string{":json_invalid"}},
		{`[1, 2]`, []string{":type_error"}},
		{`{"name": "x"} trailing`, []string{":json_invalid"}},
	} {
		_, err := DecodeIn([]byte(test.body))
		if diff := cmp.Diff(test.want, where(errs.Violations(err))); diff != "" {
			t.Errorf("DecodeIn(%s) (-want +got):\n%s", test.body, diff)
		}
	}
}

func TestTriggerChecks(t *testing.T) {
	t.Parallel()
	trig := func(tr obj) obj { b := baseBody(); b["trigger"] = tr; return b }
	for _, test := range []struct {
		name string
		tr   obj
		want []string
	}{
		{"manual", obj{"type": "manual"}, nil},
		{"event", obj{"type": "event", "event": "docs.document.validated"}, nil},
		{"event with filter", obj{"type": "event", "event": "docs.document.validated",
			"filter": obj{"amount_cents": obj{"gte": 1000}, "type": "invoice"}}, nil},
		{"event without a name", obj{"type": "event"}, []string{"trigger.event:missing"}},
		{"event with a bad name", obj{"type": "event", "event": "docs document"}, []string{"trigger.event:string_pattern_mismatch"}},
		{"event with a bad filter", obj{"type": "event", "event": "x.y", "filter": obj{"amount": obj{"between": 1}}},
			[]string{"trigger.filter.amount:value_error"}},
		{"event with cron", obj{"type": "event", "event": "x.y", "cron": "* * * * *"}, []string{"trigger.cron:value_error"}},
		{"schedule", obj{"type": "schedule", "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}, nil},
		{"schedule in UTC by default", obj{"type": "schedule", "cron": "*/15 * * * *"}, nil},
		{"schedule without cron", obj{"type": "schedule"}, []string{"trigger.cron:missing"}},
		{"schedule with a bad cron", obj{"type": "schedule", "cron": "61 * * * *"}, []string{"trigger.cron:value_error"}},
		{"schedule with a bad zone", obj{"type": "schedule", "cron": "0 9 * * *", "timezone": "Mars/Olympus"},
			[]string{"trigger.timezone:value_error"}},
		{"schedule with a filter", obj{"type": "schedule", "cron": "0 9 * * *", "filter": obj{"a": 1}},
			[]string{"trigger.filter:value_error"}},
		{"manual with an event", obj{"type": "manual", "event": "x.y", "timezone": "UTC"},
			[]string{"trigger.event:value_error", "trigger.timezone:value_error"}},
		{"unknown type", obj{"type": "telepathy"}, []string{"trigger.type:enum"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got := where(decodeViolations(t, trig(test.tr)))
			if diff := cmp.Diff(test.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStepConfigChecks(t *testing.T) {
	t.Parallel()
	s := func(typ string, config any) obj { return obj{"key": "s", "type": typ, "config": config} }
	withCap := func(o obj, capability string) obj { o["capability"] = capability; return o }
	withControls := func(o obj, c obj) obj { o["controls"] = c; return o }
	const c = "steps.0.config."
	for _, test := range []struct {
		name string
		step obj
		want []string
	}{
		// human_task
		{"human task", s("human_task", obj{"title": "Approve", "actions": []any{"approve", "reject"},
			"fields": []any{obj{"key": "reason", "label": "Reason", "type": "enum", "options": []any{"a", "b"}}}, "due_hours": 24}), nil},
		{"human task without config", obj{"key": "s", "type": "human_task"}, []string{c + "title:missing"}},
		{"human task with duplicate actions", s("human_task", obj{"title": "t", "actions": []any{"ok", "ok"}}), []string{c + "actions.1:value_error"}},
		{"human task enum without options", s("human_task", obj{"title": "t", "fields": []any{obj{"key": "k", "label": "K", "type": "enum"}}}),
			[]string{c + "fields.0.options:missing"}},
		{"human task with an unknown field", s("human_task", obj{"title": "t", "titel": "typo"}), []string{c + "titel:extra_forbidden"}},
		{"human task due_hours 0", s("human_task", obj{"title": "t", "due_hours": 0}), []string{c + "due_hours:greater_than_equal"}},
		// wait
		{"wait 48h", s("wait", obj{"duration": "48h"}), nil},
		{"wait for an event", s("wait", obj{"event": "crm.deal.won", "filter": obj{"deal_id": "${trigger.data.deal_id}"}, "timeout": "72h"}), nil},
		{"wait for nothing", s("wait", obj{}), []string{c + "duration:missing"}},
		{"wait for both", s("wait", obj{"duration": "1h", "event": "x.y"}), []string{c + "event:value_error"}},
		{"wait 0s", s("wait", obj{"duration": "0s"}), []string{c + "duration:greater_than_equal"}},
		{"wait -1h", s("wait", obj{"duration": "-1h"}), []string{c + "duration:greater_than_equal"}},
		{"wait 2 days", s("wait", obj{"duration": "2d"}), []string{c + "duration:value_error"}},
		{"wait 1ns", s("wait", obj{"duration": "1ns"}), nil},
		{"wait with a timeout but no event", s("wait", obj{"duration": "1h", "timeout": "2h"}), []string{c + "timeout:value_error"}},
		{"wait with a bad filter", s("wait", obj{"event": "x.y", "filter": obj{"a": obj{}}}), []string{c + "filter.a:value_error"}},
		{"wait with a referenced duration", s("wait", obj{"duration": "${trigger.data.wait}"}), nil},
		// intake
		{"intake of a document", s("intake", obj{"document_id": "${trigger.data.document_id}"}), nil},
		{"intake of text", s("intake", obj{"text": "${trigger.data.body}", "fields": []any{
			obj{"key": "number", "label": "Invoice number", "extract": obj{"method": "label", "aliases": []any{"Invoice no"}}},
			obj{"key": "total", "label": "Total", "type": "money", "extract": obj{"method": "regex", "pattern": `Total: (\S+)`, "group": 1}},
		}}), nil},
		{"intake of nothing", s("intake", obj{}), []string{c + "text:missing"}},
		{"intake of both", s("intake", obj{"document_id": "doc_1", "text": "x"}), []string{c + "text:value_error"}},
		{"intake of text without fields", s("intake", obj{"text": "x"}), []string{c + "fields:missing"}},
		{"intake with a bad pattern", s("intake", obj{"text": "x", "fields": []any{
			obj{"key": "a", "label": "A", "extract": obj{"method": "regex", "pattern": "("}},
			obj{"key": "a", "label": "B", "extract": obj{"method": "regex", "pattern": "(x)", "group": 2}},
		}}), []string{c + "fields.0.extract.pattern:value_error", c + "fields.1.key:value_error", c + "fields.1.extract.group:value_error"}},
		// validate
		{"validate", s("validate", obj{"record": "${trigger.data.fields}", "rules": []any{
			obj{"field": "total", "check": "required"},
			obj{"field": "total", "check": "sum_equals", "fields": []any{"subtotal", "tax"}, "tolerance_cents": 1},
			obj{"field": "due", "check": "after", "value_field": "issued", "severity": "warning"},
			obj{"field": "currency", "check": "in", "value": []any{"EUR", "USD"}},
			obj{"field": "total", "check": "max", "value": "${trigger.data.limit}"},
		}}), nil},
		{"validate a literal string", s("validate", obj{"record": "invoice", "rules": []any{obj{"field": "a", "check": "required"}}}),
			[]string{c + "record:value_error"}},
		{"validate rules that lack operands", s("validate", obj{"record": obj{"a": 1}, "rules": []any{
			obj{"field": "a", "check": "min"},
			obj{"field": "a", "check": "matches", "value": "("},
			obj{"field": "a", "check": "in", "value": "x"},
			obj{"field": "a", "check": "type", "value": "float"},
			obj{"field": "a", "check": "sum_equals"},
			obj{"field": "a", "check": "before", "value": "yesterday"},
			obj{"field": "a", "check": "equals", "value": 1, "value_field": "b"},
			obj{"field": "a..b", "check": "required"},
			obj{"field": "a", "check": "min", "value": 1},
		}}), []string{c + "rules.0.value:missing", c + "rules.1.value:value_error", c + "rules.2.value:type_error",
			c + "rules.3.value:enum", c + "rules.4.fields:missing", c + "rules.5.value:value_error", c + "rules.6.value:value_error",
			c + "rules.7.field:value_error", c + "rules.8.id:value_error"}},
		{"validate with an unknown check", s("validate", obj{"record": obj{}, "rules": []any{obj{"field": "a", "check": "fuzzy"}}}),
			[]string{c + "rules.0.check:enum"}},
		// route
		{"route", s("route", obj{"input": "${trigger.data}", "rules": []any{
			obj{"when": obj{"amount_cents": obj{"gte": 100000}}, "queue": "cfo", "priority": "high"},
			obj{"when": obj{}, "owner": "ops@acme.test"},
		}, "default": obj{"queue": "general"}}), nil},
		{"route with a bad filter and no target", s("route", obj{"rules": []any{obj{"when": obj{"a": obj{"near": 1}}}},
			"default": obj{}}), []string{c + "rules.0.when.a:value_error", c + "rules.0:missing", c + "default.queue:missing"}},
		// consolidate
		{"consolidate", s("consolidate", obj{"left": "${trigger.data.fields}", "right": "${trigger.data.orders}",
			"keys":       []any{obj{"left": "po_number", "right": "number"}},
			"tolerances": []any{obj{"left": "total", "right": "amount_cents", "percent": 1}}, "require_match": true}), nil},
		{"consolidate with bad paths", s("consolidate", obj{"left": 5, "right": "pos",
			"keys": []any{obj{"left": "a.", "right": "${x}"}}}),
			[]string{c + "left:type_error", c + "right:value_error", c + "keys.0.left:value_error", c + "keys.0.right:value_error"}},
		{"consolidate percent over 100", s("consolidate", obj{"left": obj{}, "right": []any{},
			"keys": []any{obj{"left": "a", "right": "b"}}, "tolerances": []any{obj{"left": "a", "right": "b", "percent": 100.5}}}),
			[]string{c + "tolerances.0.percent:less_than_equal"}},
		// analyse
		{"analyse", s("analyse", obj{"values": "${trigger.data.items}", "field": "amount", "z_threshold": 2.5}), nil},
		{"analyse an object", s("analyse", obj{"values": obj{}}), []string{c + "values:type_error"}},
		// draft
		{"draft", s("draft", obj{"title": "Reply", "template": "Dear ${subject.label}"}), nil},
		{"draft with a broken reference", s("draft", obj{"title": "Reply", "template": "Dear ${subject.label"}),
			[]string{c + "template:value_error"}},
		// monitor
		{"monitor a value", s("monitor", obj{"value": "${trigger.data.status}", "condition": obj{"value": "paid"},
			"interval": "1h", "timeout": "72h"}), nil},
		{"monitor through a capability", withCap(s("monitor", obj{"args": obj{"id": "${trigger.data.id}"},
			"condition": obj{"value.status": "shipped"}, "interval": "30m"}), "erp.order.get"), nil},
		{"monitor of nothing", s("monitor", obj{"condition": obj{"value": 1}, "interval": "0s"}),
			[]string{c + "value:missing", c + "interval:greater_than_equal"}},
		// follow_up
		{"follow up", s("follow_up", obj{"to": "${trigger.data.supplier_email}", "subject": "Missing PO", "body": "Please send it.",
			"every": "48h", "max_reminders": 3, "until_event": "docs.document.received", "filter": obj{"supplier": "acme"}}), nil},
		{"follow up a list", s("follow_up", obj{"to": []any{"a@acme.test", "b@acme.test"}, "subject": "s", "body": "b"}), nil},
		{"follow up bad addresses", s("follow_up", obj{"to": []any{"not an address", 5}, "subject": "s", "body": "b",
			"filter": obj{"a": 1}}), []string{c + "to.0:value_error", c + "to.1:type_error", c + "filter:value_error"}},
		{"follow up 51 reminders", s("follow_up", obj{"to": "a@acme.test", "subject": "s", "body": "b", "max_reminders": 51}),
			[]string{c + "max_reminders:less_than_equal"}},
		// execute
		{"execute", withCap(s("execute", obj{"args": obj{"amount_cents": "${trigger.data.total}"},
			"amount_path": "steps.intake.fields.total"}), "payments.pay"), nil},
		{"execute without a capability", s("execute", obj{}), []string{"steps.0.capability:missing"}},
		{"execute with a bad capability", withCap(s("execute", obj{}), "Pay Now"), []string{"steps.0.capability:string_pattern_mismatch"}},
		{"execute with a reference as amount path", withCap(s("execute", obj{"amount_path": "${trigger.data.x}"}), "payments.pay"),
			[]string{c + "amount_path:value_error"}},
		// controls
		{"controls", withControls(withCap(s("execute", obj{}), "payments.pay"),
			obj{"require_approval": true, "sla_hours": 4, "amount_cap_cents": 0, "allowed_tools": []any{"payments.pay"}}), nil},
		{"allowed tools without the step's capability", withControls(withCap(s("execute", obj{}), "payments.pay"),
			obj{"allowed_tools": []any{"email.send", "email.send"}}),
			[]string{"steps.0.controls.allowed_tools.1:value_error", "steps.0.controls.allowed_tools:value_error"}},
		{"empty allowed tools", withControls(s("wait", obj{"duration": "1h"}), obj{"allowed_tools": []any{}}),
			[]string{"steps.0.controls.allowed_tools:too_short"}},
		{"follow up must allow email.send", withControls(s("follow_up", obj{"to": "a@acme.test", "subject": "s", "body": "b"}),
			obj{"allowed_tools": []any{"sms.send"}}), []string{"steps.0.controls.allowed_tools:value_error"}},
		{"negative cap and zero sla", withControls(s("wait", obj{"duration": "1h"}), obj{"amount_cap_cents": -1, "sla_hours": 0}),
			[]string{"steps.0.controls.amount_cap_cents:greater_than_equal", "steps.0.controls.sla_hours:greater_than_equal"}},
		// configs that are not objects
		{"config is a list", s("wait", []any{}), []string{"steps.0.config:type_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got := where(decodeViolations(t, withStep(test.step)))
			if diff := cmp.Diff(test.want, got, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryViolationAtOnce sends a body with problems everywhere and gets
// them all in one error.
func TestEveryViolationAtOnce(t *testing.T) {
	t.Parallel()
	body := obj{
		"name":        strings.Repeat("x", 201),
		"description": strings.Repeat("d", 4001),
		"trigger":     obj{"type": "schedule", "cron": "not a cron"},
		"steps": []any{
			obj{"key": "Bad", "type": "wait", "config": obj{"duration": "soon"}},
			obj{"key": "ok", "type": "human_task", "config": obj{}},
			obj{"key": "ok", "type": "execute"},
			obj{"key": "x", "type": "nope"},
		},
	}
	got := where(decodeViolations(t, body))
	want := []string{
		"name:string_too_long",
		"description:string_too_long",
		"trigger.cron:value_error",
		"steps.0.key:string_pattern_mismatch",
		"steps.0.config.duration:value_error",
		"steps.1.config.title:missing",
		"steps.2.key:value_error",
		"steps.2.capability:missing",
		"steps.3.type:enum",
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

func TestDecodePatch(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		body string
		want []string
		same func(p ProcessPatch) bool
	}{
		{name: "empty", body: `{}`, same: func(p ProcessPatch) bool { return p.Empty() }},
		{name: "name only", body: `{"name": "New"}`, same: func(p ProcessPatch) bool { return *p.Name == "New" && p.Steps == nil && p.Trigger == nil }},
		{name: "null clears description and function", body: `{"description": null, "function": null}`,
			same: func(p ProcessPatch) bool { return *p.Description == "" && *p.Function == "" }},
		{name: "null name", body: `{"name": null, "enabled": null, "steps": null}`,
			want: []string{"name:type_error", "steps:type_error", "enabled:type_error"}},
		{name: "name of 201", body: `{"name": "` + strings.Repeat("n", 201) + `"}`, want: []string{"name:string_too_long"}},
		{name: "name of 200", body: `{"name": "` + strings.Repeat("n", 200) + `"}`},
		{name: "empty steps", body: `{"steps": []}`, want: []string{"steps:too_short"}},
		{name: "bad step", body: `{"steps": [{"key": "a", "type": "wait", "config": {}}]}`, want: []string{"steps.0.config.duration:missing"}},
		{name: "bad trigger", body: `{"trigger": {"type": "event"}}`, want: []string{"trigger.event:missing"}},
		{name: "an unknown field is refused", body: `{"color": "red"}`, want: []string{"color:extra_forbidden"}},
		{name: "not an object", body: `"x"`, want: []string{":type_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			p, err := DecodePatch([]byte(test.body))
			if diff := cmp.Diff(test.want, where(errs.Violations(err)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if test.same != nil && !test.same(p) {
				t.Errorf("patch = %+v", p)
			}
		})
	}
}
