package process

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/cockroachdb/errors"
)

// Capabilities the step types call by default.
const (
	CapDocumentExtract = "document.extract"
	CapEmailSend       = "email.send"
)

// builtinStepTypes is the registry of the built-in step types, in the order
// the API serves them. Each step type lives in one file (intake.go,
// validate.go ...): its config, the config's schema, its checks, the
// capabilities it needs and its work (Eval for a pure type, Run for one the
// engine's means drive). Adding a step type is adding such a file and a
// line here.
func builtinStepTypes() []StepType {
	return []StepType{
		intakeStep(),
		validateStep(),
		routeStep(),
		consolidateStep(),
		analyseStep(),
		draftStep(),
		monitorStep(),
		followUpStep(),
		executeStep(),
		humanTaskStep(),
		waitStep(),
	}
}

// StepDef declares a step type whose config is C: everything the type is,
// in one value. Define turns it into a StepType.
type StepDef[C any] struct {
	// Type is the name steps use ("intake").
	Type string
	// Label is a short human title.
	Label string
	// Description says what the step does.
	Description string
	// Capabilities are the capabilities a step of this type calls unless it
	// names its own.
	Capabilities []string
	// Check reports the violations of a config that passed its schema (the
	// schema is reflected from C), at loc: durations, filters, patterns,
	// cross-field rules. Nil checks nothing more.
	Check func(cfg *C, s Step, loc []any) []errs.Violation
	// Needs returns the capabilities a step of this type calls when it
	// names none of its own. Nil needs nothing.
	Needs func(s Step) []string
	// Eval does the work of a pure step: its output from its config, whose
	// references are resolved against the run's data (data is the run's
	// data, for a step that looks at it). The engine runs it (see
	// StepType.Run). An error marked ErrNoMatch fails the run and may come
	// with the output. A type has Eval or Run, not both.
	Eval func(cfg *C, data map[string]any) (any, error)
	// Run is the executor of a step type whose work needs the engine's
	// means (human_task, execute, wait, follow_up, monitor and draft:
	// tasks, approvals, timers, events, calls between them): called when
	// the run reaches the step and each time something wakes it, it
	// decides what the step does through env and returns true when the
	// step completed. The engine fails a run that reaches a step of a type
	// with neither Eval nor Run.
	Run func(env StepEnv) bool
	// Call, for a pure type, names the capability call that produces the
	// step's output instead of Eval, when the config asks for one (an
	// intake given a document calls document.extract): ok is false
	// otherwise.
	Call func(cfg *C, s Step) (capability string, args map[string]any, ok bool)
	// Result turns the result of the call Call names into the step's
	// output (an intake that extracted with ai.extract gives the same
	// output as one that read labels). Nil keeps the result as it is.
	Result func(cfg *C, s Step, result any) (any, error)
}

// Define makes the step type d declares.
func Define[C any](d StepDef[C]) StepType {
	t := StepType{
		Type:         d.Type,
		Label:        d.Label,
		Description:  d.Description,
		Capabilities: slices.Clone(d.Capabilities),
		Pure:         d.Eval != nil,
		config:       reflect.TypeFor[C](),
		needs:        d.Needs,
		run:          d.Run,
	}
	if t.Capabilities == nil {
		t.Capabilities = []string{}
	}
	if d.Check != nil {
		t.check = func(c any, s Step, loc []any) []errs.Violation { return d.Check(c.(*C), s, loc) }
	}
	if d.Eval != nil {
		t.eval = func(c any, data map[string]any) (any, error) { return d.Eval(c.(*C), data) }
	}
	if d.Call != nil {
		t.call = func(c any, s Step) (string, map[string]any, bool) { return d.Call(c.(*C), s) }
	}
	if d.Result != nil {
		t.result = func(c any, s Step, r any) (any, error) { return d.Result(c.(*C), s, r) }
	}
	return t
}

// StepType describes one step type: what it does, its configuration's Go
// type and JSON Schema, the capabilities it calls and its work (Run). Define
// makes one.
type StepType struct {
	// Type is the name steps use ("intake").
	Type string `json:"type"`
	// Label is a short human title.
	Label string `json:"label"`
	// Description says what the step does.
	Description string `json:"description"`
	// ConfigSchema is the JSON Schema of the step's config.
	ConfigSchema json.RawMessage `json:"config_schema"`
	// Capabilities are the capabilities a step of this type calls unless it
	// names its own (intake: document.extract, used when it is given a
	// document; follow_up: email.send). An execute step calls the
	// capability it names.
	Capabilities []string `json:"capabilities"`
	// Pure is true when the step's work is a function of its resolved
	// config (see Eval): validate, route, consolidate, analyse, and intake
	// from text.
	Pure bool `json:"-"`

	config    reflect.Type
	validator *schema.Validator
	check     func(c any, s Step, loc []any) []errs.Violation
	needs     func(s Step) []string
	eval      func(c any, data map[string]any) (any, error)
	call      func(c any, s Step) (string, map[string]any, bool)
	result    func(c any, s Step, r any) (any, error)
	run       func(env StepEnv) bool
}

// NewConfig returns a pointer to a zero config of the type
// (*IntakeConfig for intake ...).
func (t StepType) NewConfig() any {
	return reflect.New(t.config).Interface()
}

// DecodeConfig decodes a step's raw config into a pointer to the type's
// config struct. An empty or null config decodes as {}. It does not
// validate; CheckStep does.
func (t StepType) DecodeConfig(raw json.RawMessage) (any, error) {
	v := t.NewConfig()
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return v, nil
	}
	if err := decodeJSON(raw, v); err != nil {
		return nil, errors.Wrapf(err, "%s config", t.Type)
	}
	return v, nil
}

// Needs returns the capabilities a step of this type calls: the step's own
// capability when it names one; otherwise what the type needs
// (document.extract for an intake given a document, email.send for a
// follow_up, nothing for the others).
func (t StepType) Needs(s Step) []string {
	if s.Capability != "" {
		return []string{s.Capability}
	}
	if t.needs == nil {
		return nil
	}
	return t.needs(s)
}

// checkConfig reports the violations of a decoded config beyond its
// schema.
func (t StepType) checkConfig(cfg any, s Step, loc []any) []errs.Violation {
	if t.check == nil {
		return nil
	}
	return t.check(cfg, s, loc)
}

// Call says whether a pure step with the decoded config cfg (a pointer
// from NewConfig or DecodeConfig) gets its output from a capability call
// instead of Eval, and which: the step's own capability when it names one,
// else the type's.
func (t StepType) Call(cfg any, s Step) (capability string, args map[string]any, ok bool) {
	if t.call == nil {
		return "", nil, false
	}
	capability, args, ok = t.call(cfg, s)
	if ok && s.Capability != "" {
		capability = s.Capability
	}
	return capability, args, ok
}

// Result turns the result of the call a pure step made (Call) into its
// output; a type without a Result hook keeps the result as it is.
func (t StepType) Result(cfg any, s Step, result any) (any, error) {
	if t.result == nil {
		return result, nil
	}
	return t.result(cfg, s, result)
}

// Eval does the work of a pure step whose decoded config is cfg (a pointer
// from NewConfig or DecodeConfig, with its references resolved) and returns
// its output; data is the run's data. A consolidate step with require_match
// whose sources do not match returns its output together with an error
// marked ErrNoMatch. A type with Run instead (Pure false) returns an
// error, as does a step that calls a capability instead (Call).
func (t StepType) Eval(cfg any, s Step, data map[string]any) (any, error) {
	if t.eval == nil {
		return nil, errors.Newf("step type %q is not evaluated in place", t.Type)
	}
	if capID, _, ok := t.Call(cfg, s); ok {
		return nil, errors.Newf("a %s step that calls %s is not evaluated in place", t.Type, capID)
	}
	return t.eval(cfg, data)
}

// ErrNoMatch marks the failure of a consolidate step with require_match
// whose sources did not match; Eval returns the output with it.
var ErrNoMatch = errors.New("process: sources do not match")

// StepRegistry is a set of step types with their config schemas compiled.
// It is immutable and safe for concurrent use.
type StepRegistry struct {
	list   []StepType
	byType map[string]int
}

// NewStepRegistry returns the set of the given step types, in that order. It
// fails when two share a name or a config schema does not compile.
func NewStepRegistry(types ...StepType) (*StepRegistry, error) {
	r := &StepRegistry{list: slices.Clone(types), byType: make(map[string]int, len(types))}
	for i := range r.list {
		t := &r.list[i]
		if t.config == nil {
			return nil, errors.Newf("step type %q: not made by Define", t.Type)
		}
		if _, dup := r.byType[t.Type]; dup {
			return nil, errors.Newf("step type %q is defined twice", t.Type)
		}
		if t.eval != nil && t.run != nil {
			return nil, errors.Newf("step type %q has both Eval and Run", t.Type)
		}
		t.ConfigSchema = schema.Reflect(reflect.New(t.config).Interface())
		v, err := schema.Compile(t.ConfigSchema)
		if err != nil {
			return nil, errors.Wrapf(err, "compile the %s config schema", t.Type)
		}
		t.validator = v
		r.byType[t.Type] = i
	}
	return r, nil
}

// builtin builds the built-in step types once; they are immutable
// afterwards.
var builtin = sync.OnceValue(func() *StepRegistry {
	r, err := NewStepRegistry(builtinStepTypes()...)
	if err != nil {
		// The schemas are made from this package's own types: a failure
		// is a programming error, caught by the package's tests.
		panic(fmt.Sprintf("process: %v", err))
	}
	return r
})

// BuiltinStepRegistry returns the registry of the eleven built-in step
// types.
func BuiltinStepRegistry() *StepRegistry { return builtin() }

// List returns the step types in their order.
func (r *StepRegistry) List() []StepType { return slices.Clone(r.list) }

// Lookup returns the step type named name.
func (r *StepRegistry) Lookup(name string) (StepType, bool) {
	i, ok := r.byType[name]
	if !ok {
		return StepType{}, false
	}
	return r.list[i], true
}

// Names lists the step type names in their order.
func (r *StepRegistry) Names() []string {
	out := make([]string, len(r.list))
	for i, t := range r.list {
		out[i] = t.Type
	}
	return out
}

// StepTypes returns the eleven built-in step types in a fixed order.
func StepTypes() []StepType { return builtin().List() }

// LookupStepType returns the built-in step type named name.
func LookupStepType(name string) (StepType, bool) { return builtin().Lookup(name) }

// StepTypeNames lists the built-in step type names in the order StepTypes
// gives.
func StepTypeNames() []string { return builtin().Names() }

// Eval does the work of a pure built-in step (StepType.Eval) from its
// config: resolved is the config with its references already resolved
// against the run's data (refs.Resolve), as raw JSON or a decoded value;
// data is the run's data, which a route step without input looks at.
func Eval(stepType string, resolved any, data map[string]any) (any, error) {
	return builtin().Eval(stepType, resolved, data)
}

// Eval does the work of a pure step of the set (see the function Eval).
func (r *StepRegistry) Eval(stepType string, resolved any, data map[string]any) (any, error) {
	t, ok := r.Lookup(stepType)
	if !ok {
		return nil, errors.Newf("step type %q is not evaluated in place", stepType)
	}
	cfg := t.NewConfig()
	if err := decodeResolved(resolved, cfg); err != nil {
		return nil, err
	}
	return t.Eval(cfg, Step{Type: stepType}, data)
}

// nonEmpty turns an absent or null config into {}.
func nonEmpty(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// Decode converts a config (raw JSON, or a decoded JSON value such as the
// result of resolving references) into the config struct T, keeping numbers
// exact.
func Decode[T any](config any) (T, error) {
	var v T
	err := decodeResolved(config, &v)
	return v, err
}

// decodeResolved decodes config (raw JSON or a decoded value) into the
// pointer v, keeping numbers exact.
func decodeResolved(config any, v any) error {
	switch c := config.(type) {
	case json.RawMessage:
		return decodeJSON(nonEmpty(c), v)
	case []byte:
		return decodeJSON(nonEmpty(c), v)
	case nil:
		return decodeJSON([]byte("{}"), v)
	default:
		return decodeInto(c, v)
	}
}
