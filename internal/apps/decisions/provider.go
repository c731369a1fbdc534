package decisions

import (
	"context"
	"encoding/json"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// ProviderID is the id of the built-in decisions provider.
const ProviderID = "builtin.decisions"

// Provider is the built-in provider of decision.evaluate. It needs no model:
// it answers with what people confirmed before. For an input it weighs the
// decision's confirmed cases (agreed, corrected or recorded outcomes) whose
// input is the same (canonical JSON, see Canonical); when there are none,
// those whose fields named in the input_schema's top-level "required" list
// are the same. The output confirmed most often wins (a tie goes to the one
// confirmed most recently) and its share of the weighed cases is the
// confidence; with no matching case the output is null, the confidence 0
// and the mode manual. Confirmed outcomes are counted per match key as they
// are confirmed, so an evaluation reads one or two small records however
// many cases there are.
type Provider struct {
	st store.Store
}

var _ capability.Provider = (*Provider)(nil)

// NewProvider returns the built-in provider reading decisions and cases
// from st.
func NewProvider(st store.Store) *Provider { return &Provider{st: st} }

// Info describes the provider.
func (p *Provider) Info() capability.Info {
	return capability.Info{
		ID:           ProviderID,
		Name:         "Decisions (learns from confirmed outcomes)",
		Kind:         capability.KindBuiltin,
		Capabilities: []string{capability.DecisionEvaluate},
	}
}

// evaluateArgs are decision.evaluate's arguments, with the input kept raw so
// numbers stay exact.
type evaluateArgs struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Result is decision.evaluate's result: capability.DecisionEvaluateResult
// with the rule the output came from and the number of cases weighed.
type Result struct {
	Output     json.RawMessage `json:"output"`
	Confidence float64         `json:"confidence"`
	Mode       string          `json:"mode"`
	RuleID     string          `json:"rule_id"`
	Cases      int             `json:"cases"`
}

// Call evaluates a decision for call.Tenant. An unknown decision is
// errs.NotFound; another capability is errs.Invalid.
func (p *Provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	if call.Capability != capability.DecisionEvaluate {
		return nil, errs.Invalidf([]any{"capability"}, "value_error", "%s does not provide %s", ProviderID, call.Capability)
	}
	var args evaluateArgs
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return nil, errs.Invalidf([]any{"args"}, "type_error", "arguments are not {name, input}")
	}
	if !isObject(args.Input) {
		return nil, errs.Invalidf([]any{"args", "input"}, "type_error", "must be an object")
	}
	var res *Result
	err := p.st.View(ctx, func(r store.Reader) error {
		rec, err := records.Get(r, call.Tenant, args.Name)
		if err != nil {
			return err
		}
		res, err = evaluate(r, call.Tenant, rec, args.Input)
		return err
	})
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	return out, errors.Wrap(err, "encode decision result")
}

// evaluate weighs rec's confirmed cases for input.
func evaluate(r store.Reader, tenant string, rec *Record, input json.RawMessage) (*Result, error) {
	exact, fields, err := matchKeys(rec, input)
	if err != nil {
		return nil, errs.Invalidf([]any{"input"}, "json_invalid", "is not valid JSON")
	}
	m, err := bestMatch(r, tenant, rec, exact, fields)
	if err != nil {
		return nil, err
	}
	mode := ModeManual
	if m.Cases > 0 {
		mode = rec.Thresholds.Mode(m.Confidence)
	}
	return &Result{Output: m.Output, Confidence: m.Confidence, Mode: mode, RuleID: m.RuleID, Cases: m.Cases}, nil
}
