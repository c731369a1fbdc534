package process

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// partsEnv is a StepEnv that can make part of the run's data: it records
// what a step asked of it.
type partsEnv struct {
	StepEnv
	data  map[string]any
	asked [][]string // the roots of each DataParts; nil for Data
}

func (e *partsEnv) Data() map[string]any {
	e.asked = append(e.asked, nil)
	return e.data
}

func (e *partsEnv) DataParts(roots []string) map[string]any {
	e.asked = append(e.asked, roots)
	out := map[string]any{}
	for _, r := range roots {
		if v, ok := e.data[r]; ok {
			out[r] = v
		}
	}
	return out
}

// TestStepDataOnlyWhatTheRouteReads: a prepared route step is evaluated on
// the keys of the run's data its rules look at, each once, and decides as
// on the whole data; a route with an input reads none of it; one not
// prepared (its config had references) and an env that cannot make parts
// are given the whole data.
func TestStepDataOnlyWhatTheRouteReads(t *testing.T) {
	t.Parallel()
	data := map[string]any{
		"subject": map[string]any{"type": "delivery", "label": "PO-1"},
		"trigger": map[string]any{"type": "manual", "data": map[string]any{"amount": json.Number("5")}},
		"steps":   map[string]any{"check": map[string]any{"ok": true}},
		"run":     map[string]any{"id": "run_1", "process_id": "proc_1", "process_name": "P"},
	}
	route := func(prepare bool, input any, when ...map[string]any) *RouteConfig {
		cfg := &RouteConfig{Input: input, Default: RouteTarget{Queue: "default"}}
		for i, w := range when {
			cfg.Rules = append(cfg.Rules, RouteRule{When: w, Queue: "q" + string(rune('0'+i))})
		}
		if prepare {
			cfg.Prepare()
		}
		return cfg
	}
	for _, test := range []struct {
		name      string
		cfg       *RouteConfig
		noParts   bool
		wantAsked [][]string
		wantQueue string
	}{
		{"subject", route(true, nil, map[string]any{"subject.type": "delivery"}), false,
			[][]string{{"subject"}}, "q0"},
		{"steps and subject, each once", route(true, nil, map[string]any{"steps.check.ok": false},
			map[string]any{"subject.label": "PO-1", "steps.check.ok": true}), false,
			[][]string{{"steps", "subject"}}, "q1"},
		{"trigger", route(true, nil, map[string]any{"trigger.data.amount": map[string]any{"gt": 4}}), false,
			[][]string{{"trigger"}}, "q0"},
		{"run, no match", route(true, nil, map[string]any{"run.process_name": "Q"}), false,
			[][]string{{"run"}}, "default"},
		{"a key the data has not", route(true, nil, map[string]any{"amount": 5}), false,
			[][]string{{"amount"}}, "default"},
		{"input", route(true, map[string]any{"kind": "a"}, map[string]any{"kind": "a"}), false,
			[][]string{nil}, "q0"},
		{"not prepared", route(false, nil, map[string]any{"subject.type": "delivery"}), false,
			[][]string{nil}, "q0"},
		{"an env without parts", route(true, nil, map[string]any{"subject.type": "delivery"}), true,
			[][]string{nil}, "q0"},
	} {
		t.Run(test.name, func(t *testing.T) {
			env := &partsEnv{data: data}
			var got map[string]any
			if test.noParts {
				got = stepData(struct{ StepEnv }{env}, test.cfg)
			} else {
				got = stepData(env, test.cfg)
			}
			if test.noParts {
				if diff := cmp.Diff(data, got); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			} else if diff := cmp.Diff(test.wantAsked, env.asked); diff != "" {
				t.Errorf("asked of the env (-want +got):\n%s", diff)
			}
			out, err := routeStep().Eval(test.cfg, Step{Type: StepRoute}, got)
			if err != nil {
				t.Fatal(err)
			}
			if q := out.(RouteOutput).Queue; q != test.wantQueue {
				t.Errorf("queue %q, want %q", q, test.wantQueue)
			}
		})
	}
}
