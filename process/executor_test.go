package process_test

import (
	"strings"
	"testing"

	"github.com/bas-platform/bas/process"
)

// A step type has one executor: Eval (pure) or Run (driven by the engine's
// means), never both.
func TestStepTypeHasOneExecutor(t *testing.T) {
	t.Parallel()
	type cfg struct{}
	both := process.Define(process.StepDef[cfg]{
		Type: "both", Label: "Both",
		Eval: func(*cfg, map[string]any) (any, error) { return nil, nil },
		Run:  func(process.StepEnv) bool { return false },
	})
	_, err := process.NewStepRegistry(both)
	if err == nil || !strings.Contains(err.Error(), `step type "both" has both Eval and Run`) {
		t.Errorf("NewStepRegistry = %v, want it refused", err)
	}
	run := process.Define(process.StepDef[cfg]{Type: "run", Label: "Run", Run: func(process.StepEnv) bool { return false }})
	r, err := process.NewStepRegistry(run)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Lookup("run"); got.Pure {
		t.Error("a type with Run is pure")
	}
	if _, err := r.Eval("run", nil, nil); err == nil {
		t.Error("Eval of a type with Run succeeded")
	}
}
