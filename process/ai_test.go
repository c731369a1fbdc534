package process

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAISteps: a step calls an ai.* capability only when its config asks
// for AI, and turns the result into the output the rule-based step gives.
func TestAISteps(t *testing.T) {
	t.Parallel()
	type call struct {
		Cap  string
		Args map[string]any
		OK   bool
	}
	callOf := func(typ, cfg string) call {
		st, _ := LookupStepType(typ)
		c, err := st.DecodeConfig(json.RawMessage(cfg))
		if err != nil {
			t.Fatal(err)
		}
		id, args, ok := st.Call(c, Step{Type: typ, Config: json.RawMessage(cfg)})
		return call{id, args, ok}
	}
	for _, tc := range []struct {
		name, typ, cfg string
		want           call
		needs          []string
	}{
		{"intake by labels", "intake", `{"text":"x","fields":[{"key":"n","label":"N"}]}`, call{}, nil},
		{"intake with ai", "intake", `{"text":"x","ai":true,"instructions":"be exact","fields":[{"key":"n","label":"N","type":"money","required":true}]}`,
			call{"ai.extract", map[string]any{"text": "x", "instructions": "be exact",
				"fields": []any{map[string]any{"key": "n", "label": "N", "type": "money", "required": true}}}, true},
			[]string{"ai.extract"}},
		{"route by rules", "route", `{"rules":[{"when":{"a":1},"queue":"q"}],"default":{"queue":"d"}}`, call{}, nil},
		{"route with ai", "route", `{"ai":{"text":"t","labels":[{"label":"a","description":"A"},{"label":"b"}]},"rules":[{"when":{"label":"a"},"queue":"q"}],"default":{"queue":"d"}}`,
			call{"ai.classify", map[string]any{"text": "t", "labels": []any{map[string]any{"label": "a", "description": "A"}, map[string]any{"label": "b"}}}, true},
			[]string{"ai.classify"}},
	} {
		if d := cmp.Diff(tc.want, callOf(tc.typ, tc.cfg)); d != "" {
			t.Errorf("%s: call (-want +got):\n%s", tc.name, d)
		}
		st, _ := LookupStepType(tc.typ)
		if d := cmp.Diff(tc.needs, st.Needs(Step{Type: tc.typ, Config: json.RawMessage(tc.cfg)})); d != "" {
			t.Errorf("%s: needs (-want +got):\n%s", tc.name, d)
		}
	}

	route, _ := LookupStepType("route")
	cfg, _ := route.DecodeConfig(json.RawMessage(`{"ai":{"text":"t","labels":[{"label":"a"},{"label":"b"}]},
		"rules":[{"when":{"label":"a","confidence":{"gte":0.8}},"queue":"q"}],"default":{"queue":"d"}}`))
	for _, tc := range []struct {
		conf  float64
		queue string
	}{{0.8, "q"}, {0.79, "d"}} {
		out, err := route.Result(cfg, Step{Type: "route"}, map[string]any{"label": "a", "confidence": tc.conf, "reason": "r",
			"ai": map[string]any{"provider": "p", "model": "m", "attempts": 1, "usage": map[string]any{"total_tokens": 3}}})
		if err != nil {
			t.Fatal(err)
		}
		ro := out.(RouteOutput)
		if ro.Queue != tc.queue || ro.Classification.Label != "a" || ro.AI.Model != "m" || ro.AI.Usage.TotalTokens != 3 {
			t.Errorf("confidence %v: %+v", tc.conf, ro)
		}
	}

	draft := DraftConfig{Template: "brief", AI: &DraftAI{Data: map[string]any{"n": 1}, Tone: "warm"}}
	args, ok := draft.AIDraftArgs()
	if d := cmp.Diff(map[string]any{"kind": "reply", "brief": "brief", "data": map[string]any{"n": 1}, "tone": "warm"}, args); d != "" || !ok {
		t.Errorf("draft args (-want +got):\n%s", d)
	}
	if _, ok := (DraftConfig{Template: "x"}).AIDraftArgs(); ok {
		t.Errorf("a draft without ai calls ai.draft")
	}
}

func TestAIStepChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, typ, cfg string
		want           []string
	}{
		{"ai with a document", "intake", `{"document_id":"doc_1","ai":true}`, []string{"config.ai"}},
		{"duplicate labels", "route", `{"ai":{"text":"t","labels":[{"label":"a"},{"label":"a"}]},"rules":[{"when":{"label":"a"},"queue":"q"}],"default":{"queue":"d"}}`,
			[]string{"config.ai.labels.1.label"}},
		{"one label", "route", `{"ai":{"text":"t","labels":[{"label":"a"}]},"rules":[{"when":{"label":"a"},"queue":"q"}],"default":{"queue":"d"}}`,
			[]string{"config.ai.labels"}},
		{"two labels", "route", `{"ai":{"text":"t","labels":[{"label":"a"},{"label":"b"}]},"rules":[{"when":{"label":"a"},"queue":"q"}],"default":{"queue":"d"}}`, nil},
		{"draft kind", "draft", `{"title":"T","template":"x","ai":{"kind":"poem"}}`, []string{"config.ai.kind"}},
		{"draft ai", "draft", `{"title":"T","template":"x","ai":{"kind":"quote","max_words":10000}}`, nil},
		{"draft max words", "draft", `{"title":"T","template":"x","ai":{"max_words":10001}}`, []string{"config.ai.max_words"}},
	} {
		var got []string
		for _, v := range CheckStep(Step{Key: "s", Type: tc.typ, Config: json.RawMessage(tc.cfg)}) {
			got = append(got, locString(v.Loc))
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: violations (-want +got):\n%s", tc.name, d)
		}
	}
}

func locString(loc []any) string {
	s := ""
	for i, p := range loc {
		if i > 0 {
			s += "."
		}
		b, _ := json.Marshal(p)
		if str, ok := p.(string); ok {
			s += str
		} else {
			s += string(b)
		}
	}
	return s
}
