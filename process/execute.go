package process

import "github.com/bas-platform/bas/internal/errs"

// ExecuteConfig configures an execute step: call the step's capability
// with Args, behind the autonomy gate. AmountPath names where the amount
// compared with amount_cap_cents is found (e.g. steps.extract.fields.total).
type ExecuteConfig struct {
	Args       map[string]any `json:"args,omitempty"`
	AmountPath string         `json:"amount_path,omitempty" jsonschema:"maxLength=300"`
	// Risk labels the approval a person sees (low, medium, high). Defaults
	// to medium.
	Risk string `json:"risk,omitempty" jsonschema:"enum=low,enum=medium,enum=high"`
}

// executeStep is the execute step type: the engine calls the step's
// capability behind the autonomy gate.
func executeStep() StepType {
	return Define(StepDef[ExecuteConfig]{
		Type: StepExecute, Label: "Execute",
		Description: "Acts in a system of record (create, send, pay) through the step's capability, behind the autonomy rules.",
		Check:       checkExecute,
	})
}

func checkExecute(cfg *ExecuteConfig, s Step, loc []any) []errs.Violation {
	var v violations
	if s.Capability == "" {
		// loc is [..., "steps", i, "config"]: the capability is the step's.
		v.add(at(loc[:len(loc)-1], "capability"), "missing", "an execute step needs the capability it calls")
	}
	checkPath(&v, cfg.AmountPath, at(loc, "amount_path"), false)
	if s.Capability == "email.send" {
		// The arguments that become mail headers.
		for _, k := range [...]string{"to", "cc", "subject", "reply_to"} {
			checkOneLine(&v, cfg.Args[k], at(loc, "args", k))
		}
	}
	return v.vs
}
