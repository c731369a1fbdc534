package templates

import (
	"strings"
	"testing"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
)

// The embedded catalog loads: Load runs every check (ids unique, steps
// valid against their step types' schemas, execute arguments named by
// their capabilities' schemas, requires standard capabilities a built-in
// app fills and listing every capability a step calls).
func TestEmbeddedCatalog(t *testing.T) {
	t.Parallel()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	list := c.Templates()
	if len(list) < 30 {
		t.Errorf("%d templates, want at least 30", len(list))
	}
	functions := map[string]int{}
	ids := map[string]bool{}
	standard := map[string]bool{}
	for _, sc := range registry.Standard() {
		standard[sc.ID] = true
	}
	for _, tpl := range list {
		functions[tpl.Function]++
		if ids[tpl.ID] {
			t.Errorf("id %s twice", tpl.ID)
		}
		ids[tpl.ID] = true
		for _, r := range tpl.Requires {
			if !standard[r] {
				t.Errorf("%s requires %s, not a catalog capability", tpl.ID, r)
			}
		}
		if vs := tpl.ProcessIn().Check(); len(vs) > 0 {
			t.Errorf("%s: %v", tpl.ID, vs)
		}
		for _, s := range tpl.Steps {
			if _, ok := process.LookupStepType(s.Type); !ok {
				t.Errorf("%s: step type %s", tpl.ID, s.Type)
			}
		}
	}
	for _, fn := range Functions {
		if functions[fn] == 0 {
			t.Errorf("no template of %s", fn)
		}
	}
	for _, id := range []string{"validate_supplier_invoice", "chase_receivable", "onboard_supplier"} {
		if tpl, ok := c.Get(id); !ok || tpl.Status != StatusAvailable {
			t.Errorf("interface template %s missing or not available", id)
		}
	}
}

// Parse finds every kind of problem, and reports them all at once.
func TestParseRejects(t *testing.T) {
	t.Parallel()
	good := `{"id": "ok_one", "name": "One", "function": "finance", "segment": "AP", "description": "d", "status": "available",
		"effort": null, "hours_saved_per_month": null, "risk": null, "requires": ["email.send"], "trigger": {"type": "manual"},
		"steps": [{"key": "send", "type": "execute", "name": "Send", "capability": "email.send", "config": {"args": {"to": "a@example.com", "subject": "s", "body": "b"}}}]}`
	for _, test := range []struct {
		name, file string
		want       string
	}{
		{"duplicate id", `[` + good + `,` + good + `]`, `template id "ok_one" is used twice`},
		{"bad step config", `[{"id": "bad_cfg", "name": "x", "function": "finance", "segment": "s", "description": "d", "status": "available", "requires": [],
			"trigger": {"type": "manual"}, "steps": [{"key": "t", "type": "human_task", "name": "T", "config": {}}]}]`, `title`},
		{"unknown step type", `[{"id": "bad_type", "name": "x", "function": "finance", "segment": "s", "description": "d", "status": "available", "requires": [],
			"trigger": {"type": "manual"}, "steps": [{"key": "t", "type": "teleport", "name": "T"}]}]`, `must be one of`},
		{"requires an external capability", `[{"id": "ext_cap", "name": "x", "function": "finance", "segment": "s", "description": "d", "status": "available", "requires": ["ledger.post"],
			"trigger": {"type": "manual"}, "steps": [{"key": "p", "type": "execute", "name": "P", "capability": "ledger.post", "config": {"args": {}}}]}]`, `requires ledger.post, which is no standard capability a built-in app fills`},
		{"a called capability not in requires", `[{"id": "not_listed", "name": "x", "function": "finance", "segment": "s", "description": "d", "status": "available", "requires": [],
			"trigger": {"type": "manual"}, "steps": [{"key": "s", "type": "execute", "name": "S", "capability": "email.send", "config": {"args": {"to": "a@example.com", "subject": "s", "body": "b"}}}]}]`, `calls email.send, which requires does not list`},
		{"an argument the capability does not take", `[{"id": "bad_arg", "name": "x", "function": "finance", "segment": "s", "description": "d", "status": "available", "requires": ["email.send"],
			"trigger": {"type": "manual"}, "steps": [{"key": "s", "type": "execute", "name": "S", "capability": "email.send", "config": {"args": {"to": "a@example.com", "subject": "s", "body": "b", "bcc": "x"}}}]}]`, `email.send takes no argument "bcc"`},
		{"a missing required argument", `[{"id": "no_arg", "name": "x", "function": "finance", "segment": "s", "description": "d", "status": "available", "requires": ["email.send"],
			"trigger": {"type": "manual"}, "steps": [{"key": "s", "type": "execute", "name": "S", "capability": "email.send", "config": {"args": {"to": "a@example.com", "body": "b"}}}]}]`, `email.send needs the argument "subject"`},
		{"bad id, function and status", `[{"id": "Bad Id", "name": "x", "function": "astrology", "segment": "s", "description": "d", "status": "soon", "requires": [],
			"trigger": {"type": "manual"}, "steps": [{"key": "t", "type": "wait", "name": "W", "config": {"duration": "1h"}}]}]`, `function "astrology"`},
		{"unknown field", `[{"id": "x_unknown", "colour": "red"}]`, `unknown field "colour"`},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := Parse(map[string][]byte{"f.json": []byte(test.file)})
			if err == nil || !contains(err.Error(), test.want) {
				t.Errorf("error %v, want one mentioning %q", err, test.want)
			}
		})
	}
	if _, err := Parse(map[string][]byte{"f.json": []byte(`[` + good + `]`)}); err != nil {
		t.Errorf("a good file: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
