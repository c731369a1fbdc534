package process

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/refs"
)

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
		Run:         runExecute,
	})
}

// runExecute calls the step's capability behind its controls: an amount
// above amount_cap_cents, or the autonomy gate, asks a person to approve
// first; an action the gate let run on its own may be sampled for review
// afterwards.
func runExecute(env StepEnv) bool {
	def := env.Step()
	if env.Called() {
		if g, ok := env.Gate(); ok {
			if !g.Auto {
				var cfg ExecuteConfig
				if err := env.Config(&cfg); err != nil {
					return env.Fail(err)
				}
				env.RequestApproval(orEmpty(cfg.Args), g.Reason)
				return false
			}
			s := env.State()
			s.Auto, s.Sample = true, g.Sample
			env.SetState(s)
		}
		out, ok := env.CallOutcome()
		if !ok {
			return false
		}
		s := env.State()
		env.Complete(out, s.Auto)
		if s.Sample {
			env.CreateReview()
		}
		return true
	}
	if def.Capability == "" {
		return env.Fail(fmt.Errorf("step %s: an execute step needs a capability", def.Key))
	}
	var cfg ExecuteConfig
	if err := env.Config(&cfg); err != nil {
		return env.Fail(err)
	}
	args := orEmpty(cfg.Args)
	s := env.State()
	if s.Args != nil {
		args = s.Args
	}
	if !s.Approved && !s.Auto {
		if c := def.Controls.AmountCapCents; c != nil && cfg.AmountPath != "" {
			v, ok := refs.Lookup(env.Data(), cfg.AmountPath)
			amount, isNum := cents(v)
			if !ok || !isNum {
				return env.Fail(fmt.Errorf("step %s: amount_path %s holds no amount", def.Key, cfg.AmountPath))
			}
			s.AmountSeen = &amount
			env.SetState(s)
			if amount > *c {
				env.RequestApproval(args, fmt.Sprintf("amount %d cents is above the cap of %d cents", amount, *c))
				return false
			}
		}
		env.AskGate(args)
		return false
	}
	env.Call(def.Capability, args, "call", "")
	return false
}

// cents reads an amount as integer cents.
func cents(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok {
			return 0, false
		}
		f, _ := r.Float64()
		return int64(math.Round(f)), true
	case float64:
		return int64(math.Round(n)), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
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
