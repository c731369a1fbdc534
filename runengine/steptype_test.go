package runengine_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// A step type is one declaration: its config (whose JSON Schema is
// reflected), its checks and its work. This file adds the "tally" step
// type (the sum of a list of numbers) and registers it with one line; the
// process service checks definitions that use it and the engine runs it.

// TallyConfig configures a tally step.
type TallyConfig struct {
	Values []any  `json:"values" jsonschema:"required,maxItems=1000"`
	Label  string `json:"label,omitempty" jsonschema:"maxLength=40"`
}

func tallyStep() process.StepType {
	return process.Define(process.StepDef[TallyConfig]{
		Type: "tally", Label: "Tally", Description: "Adds numbers up.",
		Check: func(cfg *TallyConfig, _ process.Step, loc []any) []errs.Violation {
			if len(cfg.Values) == 0 {
				return []errs.Violation{{Loc: append(loc, "values"), Msg: "must list at least 1 number", Type: "too_short"}}
			}
			return nil
		},
		Eval: func(cfg *TallyConfig, _ map[string]any) (any, error) {
			sum := new(big.Rat)
			for _, v := range cfg.Values {
				r, ok := new(big.Rat).SetString(toString(v))
				if !ok {
					return nil, errs.Invalidf(nil, "type_error", "%v is not a number", v)
				}
				sum.Add(sum, r)
			}
			f, _ := sum.Float64()
			return map[string]any{"label": cfg.Label, "total": f}, nil
		},
	})
}

func toString(v any) string {
	switch n := v.(type) {
	case interface{ String() string }:
		return n.String()
	case float64:
		return big.NewFloat(n).Text('g', -1)
	}
	return ""
}

func TestAddedStepType(t *testing.T) {
	t.Parallel()
	types, err := process.NewStepRegistry(append(process.StepTypes(), tallyStep())...) // the registry line
	if err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	b := &bundle{st: st, clk: clk, prov: &testProvider{}, gate: &autoGate{auto: true}}
	b.procs = process.NewService(process.Config{Store: st, Clock: clk, StepTypes: types})
	b.reg = registry.New(registry.Config{Store: st, Clock: clk})
	b.eng, err = runengine.New(runengine.Config{Store: st, Clock: clk, Capabilities: b.reg, Processes: b.procs,
		Gate: b.gate, RetryBase: time.Second, StepTypes: types})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.eng.Close()
		st.Close()
	})

	tally, ok := types.Lookup("tally")
	if !ok || !tally.Pure || len(tally.ConfigSchema) == 0 {
		t.Fatalf("tally = %+v, %v", tally, ok)
	}
	if _, builtin := process.LookupStepType("tally"); builtin {
		t.Error("registering a step type changed the built-in set")
	}

	// The type's schema and checks guard definitions.
	ctx := context.Background()
	in := process.ProcessIn{Name: "Tally", Trigger: process.Trigger{Type: "manual"}, Steps: []process.Step{
		{Key: "sum", Type: "tally", Config: []byte(`{"values":[],"colour":"red"}`)},
	}}
	_, err = b.procs.Create(ctx, tenant, "usr_test", in)
	want := []errs.Violation{
		{Loc: []any{"steps", 0, "config", "colour"}, Msg: "is not allowed", Type: "extra_forbidden"},
	}
	if diff := cmp.Diff(want, errs.Violations(err), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Msg" }, cmp.Ignore())); diff != "" {
		t.Errorf("schema violations (-want +got):\n%s", diff)
	}
	in.Steps[0].Config = []byte(`{"values":[]}`)
	_, err = b.procs.Create(ctx, tenant, "usr_test", in)
	want = []errs.Violation{{Loc: []any{"steps", 0, "config", "values"}, Msg: "must list at least 1 number", Type: "too_short"}}
	if diff := cmp.Diff(want, errs.Violations(err)); diff != "" {
		t.Errorf("check violations (-want +got):\n%s", diff)
	}

	// The engine runs it, references resolved.
	in.Steps[0].Config = []byte(`{"values":[1.5,2,3],"label":"${subject.label}"}`)
	def, err := b.procs.Create(ctx, tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	r := b.waitRun(t, b.start(t, def.ID), "completed", status(runengine.RunCompleted))
	if diff := cmp.Diff(map[string]any{"label": "INV-1", "total": 6.5}, r.Steps[0].Output); diff != "" {
		t.Errorf("tally output (-want +got):\n%s", diff)
	}
	// The built-in registry refuses the type.
	if vs := process.CheckStep(process.Step{Key: "sum", Type: "tally"}); len(vs) != 1 || vs[0].Type != "enum" {
		t.Errorf("built-in check of a tally step = %v", vs)
	}
}
