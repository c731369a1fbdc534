package process

import (
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/cockroachdb/errors"
)

// ErrNoMatch marks the failure of a consolidate step with require_match
// whose sources did not match; eval returns the output with it.
var ErrNoMatch = errors.New("process: sources do not match")

// eval does the work of a pure step (StepType.Pure) and returns its output:
// intake from text (IntakeOutput), validate (ValidateOutput), route
// (RouteOutput), consolidate (ConsolidateOutput) and analyse
// (AnalyseOutput). resolved is the step's config with its references
// already resolved against the run's data (refs.Resolve), as raw JSON or a
// decoded value; data is the run's data, which a route step without input
// looks at.
//
// A consolidate step with require_match whose sources do not match returns
// its output together with an error marked ErrNoMatch, so the run can keep
// the output on the failed step. An intake given a document is not pure
// (the engine calls document.extract), nor are the other step types: eval
// returns an error for them.
func eval(stepType string, resolved any, data map[string]any) (any, error) {
	switch stepType {
	case StepIntake:
		cfg, err := Decode[IntakeConfig](resolved)
		if err != nil {
			return nil, err
		}
		if cfg.DocumentID != "" {
			return nil, errors.New("an intake step given a document calls document.extract; it is not evaluated in place")
		}
		return Intake(cfg, cfg.Text)
	case StepValidate:
		cfg, err := Decode[ValidateConfig](resolved)
		if err != nil {
			return nil, err
		}
		record, ok := jsonvalue.AsObject(cfg.Record)
		if !ok {
			return nil, errors.Newf("validate: record must be an object, found %s", describe(cfg.Record))
		}
		return Validate(cfg, record), nil
	case StepRoute:
		cfg, err := Decode[RouteConfig](resolved)
		if err != nil {
			return nil, err
		}
		input := data
		if cfg.Input != nil {
			m, ok := jsonvalue.AsObject(cfg.Input)
			if !ok {
				return nil, errors.Newf("route: input must be an object, found %s", describe(cfg.Input))
			}
			input = m
		}
		return Route(cfg, input), nil
	case StepConsolidate:
		cfg, err := Decode[ConsolidateConfig](resolved)
		if err != nil {
			return nil, err
		}
		for side, v := range map[string]any{"left": cfg.Left, "right": cfg.Right} {
			if _, isStr := v.(string); isStr {
				return nil, errors.Newf("consolidate: %s must be an object or a list, found %s", side, describe(v))
			}
		}
		out := Consolidate(cfg, cfg.Left, cfg.Right)
		if cfg.RequireMatch && !out.Matched {
			return out, errors.Mark(errors.Newf("consolidate: %d of %d left items unmatched, %d matches outside tolerance",
				len(out.UnmatchedLeft), len(items(cfg.Left)), outside(out)), ErrNoMatch)
		}
		return out, nil
	case StepAnalyse:
		cfg, err := Decode[AnalyseConfig](resolved)
		if err != nil {
			return nil, err
		}
		values, ok := jsonvalue.AsList(cfg.Values)
		if !ok {
			return nil, errors.Newf("analyse: values must be a list, found %s", describe(cfg.Values))
		}
		return Analyse(cfg, values)
	}
	return nil, errors.Newf("step type %q is not evaluated in place", stepType)
}

func outside(out ConsolidateOutput) int {
	n := 0
	for _, m := range out.Matches {
		if !m.WithinTolerance {
			n++
		}
	}
	return n
}
