package process

import (
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/cockroachdb/errors"
)

// IntakeConfig configures an intake step: take a document or a message in
// and extract its fields.
//
// With DocumentID the engine calls the document.extract capability (the
// document's type says which fields to extract, so Fields may be empty).
// With Text the step extracts Fields from the text itself (see Intake).
// Exactly one of the two is given.
type IntakeConfig struct {
	// DocumentID is the document to read: usually a reference such as
	// "${trigger.data.document_id}".
	DocumentID string `json:"document_id,omitempty" jsonschema:"maxLength=300"`
	// Text is the message to read: a reference such as
	// "${trigger.data.body}", or literal text.
	Text string `json:"text,omitempty" jsonschema:"maxLength=1000000"`
	// Fields are the fields to find in Text.
	Fields []IntakeField `json:"fields,omitempty" jsonschema:"maxItems=100"`
	// AI, with Text, finds Fields with ai.extract (the workspace's
	// language model) instead of labels and patterns; each value keeps
	// its quoted evidence. The workspace must bind ai.extract.
	AI bool `json:"ai,omitempty"`
	// Instructions are added to the model's prompt when AI is on.
	Instructions string `json:"instructions,omitempty" jsonschema:"maxLength=4000"`
}

// IntakeField is one field an intake step extracts.
type IntakeField struct {
	// Key names the field in the output (steps.<step>.fields.<key>).
	Key string `json:"key" jsonschema:"required,pattern=^[a-z][a-z0-9_]{0\\,39}$"`
	// Label is the field's label in the text ("Invoice number"); the label
	// method looks for it unless Extract names another.
	Label string `json:"label" jsonschema:"required,minLength=1,maxLength=120"`
	// Type is text, number, money, date, email or enum. Defaults to text.
	Type string `json:"type,omitempty" jsonschema:"enum=text,enum=number,enum=money,enum=date,enum=email,enum=enum"`
	// Required lists the field in the output's missing list when it is not
	// found.
	Required bool `json:"required,omitempty"`
	// Options are the values of an enum field.
	Options []string `json:"options,omitempty" jsonschema:"maxItems=100"`
	// Extract says how the value is found. Defaults to the label method
	// with Label.
	Extract *ExtractRule `json:"extract,omitempty"`
}

// ExtractRule says how a field's value is found in text.
//
// Method label takes the text after Label (or one of Aliases): on the same
// line after ':' or a tab, or the next line. Method regex takes capture
// group Group of Pattern (default 1, or the whole match when the pattern
// has no group).
type ExtractRule struct {
	Method  string   `json:"method" jsonschema:"required,enum=label,enum=regex"`
	Label   string   `json:"label,omitempty" jsonschema:"maxLength=120"`
	Aliases []string `json:"aliases,omitempty" jsonschema:"maxItems=20"`
	Pattern string   `json:"pattern,omitempty" jsonschema:"maxLength=1000"`
	Group   *int     `json:"group,omitempty" jsonschema:"minimum=0,maximum=99"`
}

// IntakeOutput is an intake step's output.
type IntakeOutput struct {
	// Fields maps each extracted field's key to its parsed value: text,
	// date (YYYY-MM-DD), email and enum as strings, number as a number,
	// money as integer cents.
	Fields map[string]any `json:"fields"`
	// Extracted maps each extracted field's key to its value and the
	// evidence of where it came from (text, page, start, end).
	Extracted map[string]ExtractedValue `json:"extracted"`
	// Problems are the fields not extracted, in field order, with the text
	// found when some was.
	Problems []IntakeProblem `json:"problems"`
	// Missing lists the keys of required fields that were not extracted.
	Missing []string `json:"missing"`
	// AI, when the fields were extracted with ai.extract, records the
	// provider, model and token usage.
	AI *AIRecord `json:"ai,omitempty"`
}

// ExtractedValue is an extracted value and the evidence of where it came
// from.
type ExtractedValue struct {
	// Value is the parsed value: string (text, date, email, enum), float64
	// (number) or int64 cents (money).
	Value any `json:"value"`
	// Text is the text the value was parsed from.
	Text string `json:"text"`
	// Page is the page number the text is on.
	Page int `json:"page"`
	// Start and End are the code-point offsets of Text in the page text.
	Start int `json:"start"`
	End   int `json:"end"`
	// Items, for a repeated field, is every value found, in order; the
	// fields above then describe the first.
	Items []ExtractedValue `json:"items,omitempty"`
}

// IntakeProblem is a field that could not be extracted.
type IntakeProblem struct {
	// Field is the field's key.
	Field string `json:"field"`
	// Kind is missing, type, option or rule.
	Kind string `json:"kind"`
	// Message says what went wrong, for a person.
	Message string `json:"message"`
	// Text, Page, Start and End cite the text that was found, when some was
	// (kinds type and option); Page is 0 otherwise.
	Text  string `json:"text,omitempty"`
	Page  int    `json:"page,omitempty"`
	Start int    `json:"start,omitempty"`
	End   int    `json:"end,omitempty"`
}

func extractedValue(v extract.Value) ExtractedValue {
	out := ExtractedValue{Value: v.Value, Text: v.Text, Page: v.Page, Start: v.Start, End: v.End}
	if v.Items != nil {
		out.Items = make([]ExtractedValue, len(v.Items))
		for i, item := range v.Items {
			out.Items[i] = extractedValue(item)
		}
	}
	return out
}

// extractFields returns the fields in the form package extract takes.
func (c IntakeConfig) extractFields() []extract.Field {
	out := make([]extract.Field, len(c.Fields))
	for i, f := range c.Fields {
		ef := extract.Field{Key: f.Key, Label: f.Label, Type: f.Type, Options: f.Options}
		if ef.Type == "" {
			ef.Type = extract.TypeText
		}
		if f.Extract != nil {
			ef.Extract = &extract.Rule{Method: f.Extract.Method, Label: f.Extract.Label,
				Aliases: f.Extract.Aliases, Pattern: f.Extract.Pattern, Group: f.Extract.Group}
		}
		out[i] = ef
	}
	return out
}

// Intake extracts cfg's fields from text (form feeds separate pages). A
// field that is not found or does not parse is a problem in the output, not
// an error; required ones are also listed in Missing. The error is for
// fields whose rules are unusable, which definition-time validation
// rejects. It is pure and deterministic.
func Intake(cfg IntakeConfig, text string) (IntakeOutput, error) {
	x, err := extract.New(cfg.extractFields())
	if err != nil {
		return IntakeOutput{}, errors.Wrap(err, "intake fields")
	}
	vals, problems := x.Extract(extract.FromText(text))
	out := IntakeOutput{
		Fields:    make(map[string]any, len(vals)),
		Extracted: make(map[string]ExtractedValue, len(vals)),
		Problems:  make([]IntakeProblem, len(problems)),
		Missing:   []string{},
	}
	for i, p := range problems {
		out.Problems[i] = IntakeProblem(p)
	}
	for k, v := range vals {
		out.Fields[k] = v.Value
		out.Extracted[k] = extractedValue(v)
	}
	for _, f := range cfg.Fields {
		if _, ok := vals[f.Key]; !ok && f.Required {
			out.Missing = append(out.Missing, f.Key)
		}
	}
	return out, nil
}

// intakeStep is the intake step type: a document goes through
// document.extract, a message is read in place (Intake).
func intakeStep() StepType {
	return Define(StepDef[IntakeConfig]{
		Type: StepIntake, Label: "Intake",
		Description:  "Takes a document or a message in and extracts its fields (document.extract for documents; labels and patterns for text).",
		Capabilities: []string{CapDocumentExtract},
		Check:        checkIntake,
		Needs: func(s Step) []string {
			var c IntakeConfig
			if err := decodeJSON(nonEmpty(s.Config), &c); err == nil && c.DocumentID != "" {
				return []string{CapDocumentExtract}
			} else if err == nil && c.AI {
				return []string{CapAIExtract}
			}
			return nil
		},
		Call: func(cfg *IntakeConfig, _ Step) (string, map[string]any, bool) {
			if cfg.AI && cfg.Text != "" {
				return CapAIExtract, cfg.aiExtractArgs(), true
			}
			if cfg.DocumentID == "" {
				return "", nil, false
			}
			return CapDocumentExtract, map[string]any{"document_id": cfg.DocumentID}, true
		},
		Eval: func(cfg *IntakeConfig, _ map[string]any) (any, error) { return Intake(*cfg, cfg.Text) },
		Result: func(cfg *IntakeConfig, s Step, result any) (any, error) {
			if !cfg.AI || cfg.Text == "" || s.Capability != "" {
				return result, nil
			}
			return intakeFromAI(cfg, result)
		},
	})
}

func checkIntake(cfg *IntakeConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	switch {
	case cfg.DocumentID == "" && cfg.Text == "":
		v.add(at(loc, "text"), "missing", "an intake step needs document_id (a document) or text (a message)")
	case cfg.DocumentID != "" && cfg.Text != "":
		v.add(at(loc, "text"), "value_error", "give document_id or text, not both")
	case cfg.Text != "" && len(cfg.Fields) == 0:
		v.add(at(loc, "fields"), "missing", "an intake step reading text needs fields to extract")
	case cfg.AI && cfg.DocumentID != "":
		v.add(at(loc, "ai"), "value_error", "ai extracts from text; a document is extracted by its type's rules")
	}
	seen := map[string]int{}
	efs := cfg.extractFields()
	for i, f := range cfg.Fields {
		floc := at(loc, "fields", i)
		if first, dup := seen[f.Key]; dup && f.Key != "" {
			v.add(at(floc, "key"), "value_error", "duplicates the key of field %d", first)
		}
		seen[f.Key] = i
		for _, x := range efs[i].Check() {
			if x.Type == "missing" && len(x.Loc) == 1 && x.Loc[0] == "key" {
				continue // the schema reports a missing key
			}
			x.Loc = append(at(floc), x.Loc...)
			v.addAll([]errs.Violation{x})
		}
		if len(f.Options) > 0 && f.Type != extract.TypeEnum {
			v.add(at(floc, "options"), "value_error", "options are only for enum fields")
		}
	}
	return v.vs
}
