package runengine

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/process"
)

// stepPure runs a pure step type (process.StepType.Eval): its work is in
// package process, beside its config; here it meets run data. A pure step
// that calls a capability instead (an intake given a document calls
// document.extract) completes with the call's result.
func (x *exec) stepPure(t process.StepType, def *process.Step, st *StepRun) bool {
	cfg := t.NewConfig()
	if err := x.config(def, cfg); err != nil {
		return x.stepFail(st, err)
	}
	var out any
	if capID, args, ok := t.Call(cfg, *def); ok {
		if x.res == nil {
			x.call(def, st, capID, args, "call", "")
			return false
		}
		o, ok := x.callOutcome(def, st)
		if !ok {
			return false
		}
		var err error
		if out, err = t.Result(cfg, *def, o); err != nil {
			return x.stepFail(st, fmt.Errorf("step %s: %w", def.Key, err))
		}
	} else {
		var err error
		out, err = t.Eval(cfg, *def, x.data())
		if err != nil {
			return x.stepFail(st, fmt.Errorf("step %s: %w", def.Key, err))
		}
	}
	v, err := toAny(out)
	if err != nil {
		return x.stepFail(st, fmt.Errorf("step %s: output: %w", def.Key, err))
	}
	x.completeStep(def, st, v, true)
	return true
}

// toAny turns a Go value into its decoded JSON form, so references can
// walk it.
func toAny(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}
