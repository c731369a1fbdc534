package runengine

import (
	"context"

	"github.com/bas-platform/bas/internal/callwrites"
)

// GateRequest asks whether one automatic action may run without a person.
type GateRequest struct {
	Tenant     string
	ProcessID  string
	RunID      string
	StepKey    string
	Capability string
	// ItemKey identifies the item deterministically (run and step), so a
	// retry decides the same.
	ItemKey string
	// New says the item was never asked about before: the request comes
	// from a command before its run's first commit, and a run makes no
	// call (the gate's included) before that commit is durable unless the
	// call and the gate's answer both join the commit of its result (see
	// joiningGate): lost with the run, they left nothing stored either. A
	// gate that stores its answers has none to look up then.
	New bool
}

// GateDecision is the autonomy gate's answer.
type GateDecision struct {
	// Auto is true when the action runs without a person.
	Auto bool `json:"auto"`
	// Reason says why (for the approval's summary and the run's output).
	Reason string `json:"reason"`
	// Sample asks for an after-the-fact review task of an automatic action.
	Sample bool `json:"sample"`
}

// Outcome is what a person did with a proposed action, fed back to the gate
// so agreement can ramp automation up or roll it back.
type Outcome struct {
	Tenant    string
	ProcessID string
	RunID     string
	StepKey   string
	// Agreed is true when the approval was approved with the proposed
	// arguments unchanged; false for rejections and edited arguments.
	Agreed bool
	// Actor is who decided.
	Actor string
}

// Gate is the autonomy gate every execute step passes. Amount caps and
// require_approval are checked by the engine before the gate and always
// win over it.
type Gate interface {
	// Decide answers for one action. It may record the decision (daily
	// limits count automatic actions).
	Decide(ctx context.Context, req GateRequest) (GateDecision, error)
	// Observe receives the outcome of a decided approval.
	Observe(ctx context.Context, o Outcome) error
}

// DecidesAtOnce is implemented by a Gate whose Decide never blocks: it
// decides in memory, reading and writing no store (a read of Badger waits
// for the commits in flight to land). When the step's
// provider returns at once too (capability.ReturnsAtOnce), the engine asks
// the gate and makes the call in the worker that owns the run, instead of
// handing both to a call runner.
type DecidesAtOnce interface {
	DecidesAtOnce()
}

// joiningGate is implemented by a Gate that, asked with a
// callwrites.Writes in the context that Joins, hands every write of its
// answer there (its record, its counts) and keeps nothing in memory that
// the Writes' settled functions do not release: a call whose provider is a
// callwrites.Joiner may then be asked and made before its run's first
// commit is durable (see Engine.joinsCommit). Its argument, a type of an
// internal package, keeps a gate from outside this module from
// implementing it.
type joiningGate interface {
	JoinsCallWrites(callwrites.Mark) bool
}

// Supervised is the gate used when none is configured: every action waits
// for a person.
type Supervised struct{}

// Decide always answers not automatic.
func (Supervised) Decide(context.Context, GateRequest) (GateDecision, error) {
	return GateDecision{Auto: false, Reason: "supervised: automation is off"}, nil
}

// Observe does nothing.
func (Supervised) Observe(context.Context, Outcome) error { return nil }

// DecidesAtOnce marks Supervised as deciding in memory (see DecidesAtOnce).
func (Supervised) DecidesAtOnce() {}
