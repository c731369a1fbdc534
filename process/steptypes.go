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

// StepType describes one of the eleven step types: what it does, its
// configuration's Go type and JSON Schema, and the capabilities it calls.
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
	// Pure is true when the step's work is a pure function of its resolved
	// config: validate, route, consolidate, analyse, and intake
	// from text.
	Pure bool `json:"-"`

	config    reflect.Type
	validator *schema.Validator
	check     func(c any, s Step, loc []any) []errs.Violation
}

// NewConfig returns a pointer to a zero config of the type
// (*IntakeConfig for intake ...).
func (t StepType) NewConfig() any {
	return reflect.New(t.config).Interface()
}

// DecodeConfig decodes a step's raw config into a pointer to the type's
// config struct. An empty or null config decodes as {}. It does not
// validate: DecodeIn and DecodePatch do.
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
// capability when it names one; otherwise document.extract for an intake
// given a document, email.send for a follow_up, nothing for the others.
func (t StepType) Needs(s Step) []string {
	if s.Capability != "" {
		return []string{s.Capability}
	}
	switch t.Type {
	case StepIntake:
		var c IntakeConfig
		if err := decodeJSON(nonEmpty(s.Config), &c); err == nil && c.DocumentID != "" {
			return []string{CapDocumentExtract}
		}
		return nil
	case StepFollowUp:
		return []string{CapEmailSend}
	}
	return nil
}

// stepTypeDefs lists the step types in the order the API serves them.
func stepTypeDefs() []StepType {
	return []StepType{
		{Type: StepIntake, Label: "Intake",
			Description:  "Takes a document or a message in and extracts its fields (document.extract for documents; labels and patterns for text).",
			Capabilities: []string{CapDocumentExtract}, Pure: true,
			config: reflect.TypeFor[IntakeConfig](), check: checkIntake},
		{Type: StepValidate, Label: "Validate",
			Description: "Checks a record against rules; every exception cites its evidence.",
			Pure:        true, config: reflect.TypeFor[ValidateConfig](), check: checkValidate},
		{Type: StepRoute, Label: "Route",
			Description: "Decides where the item goes next and who owns it, from a rule table.",
			Pure:        true, config: reflect.TypeFor[RouteConfig](), check: checkRoute},
		{Type: StepConsolidate, Label: "Consolidate",
			Description: "Pulls sources together and matches them by keys with tolerances (for example invoice to purchase order).",
			Pure:        true, config: reflect.TypeFor[ConsolidateConfig](), check: checkConsolidate},
		{Type: StepAnalyse, Label: "Analyse",
			Description: "Finds patterns and outliers in history: count, mean, spread, percentiles and outliers.",
			Pure:        true, config: reflect.TypeFor[AnalyseConfig](), check: checkAnalyse},
		{Type: StepDraft, Label: "Draft",
			Description: "Writes the output (reply, report, quote) from a template for a person to review.",
			config:      reflect.TypeFor[DraftConfig](), check: checkDraft},
		{Type: StepMonitor, Label: "Monitor",
			Description: "Watches for a condition over time: re-checks a value on an interval until it holds or times out.",
			config:      reflect.TypeFor[MonitorConfig](), check: checkMonitor},
		{Type: StepFollowUp, Label: "Follow up",
			Description:  "Chases a person or supplier for something missing, with reminders through email.send until a reply event or a limit.",
			Capabilities: []string{CapEmailSend},
			config:       reflect.TypeFor[FollowUpConfig](), check: checkFollowUp},
		{Type: StepExecute, Label: "Execute",
			Description: "Acts in a system of record (create, send, pay) through the step's capability, behind the autonomy rules.",
			config:      reflect.TypeFor[ExecuteConfig](), check: checkExecute},
		{Type: StepHumanTask, Label: "Human task",
			Description: "A task for a person: approve, decide or fill in fields.",
			config:      reflect.TypeFor[HumanTaskConfig](), check: checkHumanTask},
		{Type: StepWait, Label: "Wait",
			Description: "Waits for a time, or for an event (with a filter and a timeout).",
			config:      reflect.TypeFor[WaitConfig](), check: checkWait},
	}
}

// registry holds the step types with their schemas compiled.
type registry struct {
	list   []StepType
	byType map[string]int
}

// stepTypes builds the registry once; it is immutable afterwards.
var stepTypes = sync.OnceValue(func() *registry {
	defs := stepTypeDefs()
	r := &registry{list: defs, byType: make(map[string]int, len(defs))}
	for i := range defs {
		t := &r.list[i]
		t.ConfigSchema = schema.Reflect(reflect.New(t.config).Interface())
		v, err := schema.Compile(t.ConfigSchema)
		if err != nil {
			// The schemas are made from this package's own types: a failure
			// is a programming error, caught by the package's tests.
			panic(fmt.Sprintf("process: compile the %s config schema: %v", t.Type, err))
		}
		t.validator = v
		if t.Capabilities == nil {
			t.Capabilities = []string{}
		}
		r.byType[t.Type] = i
	}
	return r
})

// StepTypes returns the eleven step types in a fixed order.
func StepTypes() []StepType {
	return slices.Clone(stepTypes().list)
}

// LookupStepType returns the step type named name.
func LookupStepType(name string) (StepType, bool) {
	r := stepTypes()
	i, ok := r.byType[name]
	if !ok {
		return StepType{}, false
	}
	return r.list[i], true
}

// StepTypeNames lists the step type names in the order StepTypes gives.
func StepTypeNames() []string {
	r := stepTypes()
	out := make([]string, len(r.list))
	for i, t := range r.list {
		out[i] = t.Type
	}
	return out
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
	var err error
	switch c := config.(type) {
	case json.RawMessage:
		err = decodeJSON(nonEmpty(c), &v)
	case []byte:
		err = decodeJSON(nonEmpty(c), &v)
	case nil:
		err = decodeJSON([]byte("{}"), &v)
	default:
		err = decodeInto(c, &v)
	}
	return v, err
}
