package runengine

import (
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/process"
)

// stepPure runs the rule-based step types: intake (of text; a document
// goes through document.extract), validate, route, consolidate and
// analyse. Their logic is in package process; here they meet run data.
func (x *exec) stepPure(def *process.Step, st *StepRun) bool {
	var out any
	var err error
	switch def.Type {
	case process.StepIntake:
		var cfg process.IntakeConfig
		if err := x.config(def, &cfg); err != nil {
			return x.stepFail(st, err)
		}
		if cfg.DocumentID != "" {
			if x.res == nil {
				capID := def.Capability
				if capID == "" {
					capID = "document.extract"
				}
				x.call(def, st, capID, map[string]any{"document_id": cfg.DocumentID}, "call", "")
				return false
			}
			o, ok := x.callOutcome(def, st)
			if !ok {
				return false
			}
			out = o
			break
		}
		out, err = process.Intake(cfg, cfg.Text)
	case process.StepValidate:
		var cfg process.ValidateConfig
		if err := x.config(def, &cfg); err != nil {
			return x.stepFail(st, err)
		}
		rec, ok := cfg.Record.(map[string]any)
		if !ok {
			return x.stepFail(st, fmt.Errorf("step %s: record must be an object", def.Key))
		}
		out = process.Validate(cfg, rec)
	case process.StepRoute:
		var cfg process.RouteConfig
		if err := x.config(def, &cfg); err != nil {
			return x.stepFail(st, err)
		}
		in, ok := cfg.Input.(map[string]any)
		if cfg.Input == nil {
			in, ok = x.data(), true
		}
		if !ok {
			return x.stepFail(st, fmt.Errorf("step %s: input must be an object", def.Key))
		}
		out = process.Route(cfg, in)
	case process.StepConsolidate:
		var cfg process.ConsolidateConfig
		if err := x.config(def, &cfg); err != nil {
			return x.stepFail(st, err)
		}
		res := process.Consolidate(cfg, cfg.Left, cfg.Right)
		if cfg.RequireMatch && !res.Matched {
			x.failRun(st, RunFailed, fmt.Sprintf("step %s: the sources do not match", def.Key))
			return false
		}
		out = res
	case process.StepAnalyse:
		var cfg process.AnalyseConfig
		if err := x.config(def, &cfg); err != nil {
			return x.stepFail(st, err)
		}
		list, ok := cfg.Values.([]any)
		if !ok {
			return x.stepFail(st, fmt.Errorf("step %s: values must be a list", def.Key))
		}
		out, err = process.Analyse(cfg, list)
	default:
		return x.stepFail(st, fmt.Errorf("step %s: unknown step type %q", def.Key, def.Type))
	}
	if err != nil {
		return x.stepFail(st, fmt.Errorf("step %s: %w", def.Key, err))
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
