package process

import (
	"github.com/cockroachdb/errors"
)

// The language-model capabilities steps call when their config asks for AI
// (capability.AIExtract ...). A step uses AI only when its config says so
// and the workspace has bound the capability; otherwise intake, route and
// draft stay rule- and template-based.
const (
	CapAIExtract  = "ai.extract"
	CapAIClassify = "ai.classify"
	CapAIDraft    = "ai.draft"
)

// AIRecord is what a step that used AI records in its output: the
// provider, the model and the tokens used (the ai part of every ai.*
// result).
type AIRecord struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	Usage    AIUsage `json:"usage"`
	Attempts int     `json:"attempts"`
}

// AIUsage counts a call's tokens.
type AIUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// aiExtractResult is the part of an ai.extract result an intake step reads.
type aiExtractResult struct {
	Values map[string]struct {
		Value any    `json:"value"`
		Text  string `json:"text"`
		Start int    `json:"start"`
		End   int    `json:"end"`
	} `json:"values"`
	Problems []IntakeProblem `json:"problems"`
	Missing  []string        `json:"missing"`
	AI       *AIRecord       `json:"ai"`
}

// intakeFromAI turns an ai.extract result into the intake step's output:
// the same fields, extracted values with evidence (page 1 of the text) and
// problems as label and regex extraction give, plus the AI record.
func intakeFromAI(cfg *IntakeConfig, result any) (any, error) {
	var r aiExtractResult
	if err := decodeInto(result, &r); err != nil {
		return nil, errors.Wrap(err, "ai.extract result")
	}
	out := IntakeOutput{Fields: map[string]any{}, Extracted: map[string]ExtractedValue{}, Problems: r.Problems,
		Missing: []string{}, AI: r.AI}
	if out.Problems == nil {
		out.Problems = []IntakeProblem{}
	}
	for k, v := range r.Values {
		out.Fields[k] = v.Value
		out.Extracted[k] = ExtractedValue{Value: v.Value, Text: v.Text, Page: 1, Start: v.Start, End: v.End}
	}
	for _, f := range cfg.Fields {
		if _, ok := r.Values[f.Key]; !ok && f.Required {
			out.Missing = append(out.Missing, f.Key)
		}
	}
	return out, nil
}

// aiExtractArgs are the ai.extract arguments of an intake step.
func (c IntakeConfig) aiExtractArgs() map[string]any {
	fields := make([]any, len(c.Fields))
	for i, f := range c.Fields {
		m := map[string]any{"key": f.Key, "label": f.Label}
		if f.Type != "" {
			m["type"] = f.Type
		}
		if len(f.Options) > 0 {
			m["options"] = f.Options
		}
		if f.Required {
			m["required"] = true
		}
		fields[i] = m
	}
	args := map[string]any{"text": c.Text, "fields": fields}
	if c.Instructions != "" {
		args["instructions"] = c.Instructions
	}
	return args
}

// RouteAI makes a route step classify a text with ai.classify: the rules
// then look at the classification ({label, confidence, reason}) instead of
// Input, so `{"label": "invoice", "confidence": {"gte": 0.8}}` routes
// confident invoices, and the default takes the rest.
type RouteAI struct {
	// Text is what to classify: usually "${trigger.data.body}".
	Text string `json:"text" jsonschema:"required,minLength=1,maxLength=200000"`
	// Labels are the classes to choose from.
	Labels []RouteLabel `json:"labels" jsonschema:"required,minItems=2,maxItems=50"`
	// Instructions are added to the model's prompt.
	Instructions string `json:"instructions,omitempty" jsonschema:"maxLength=4000"`
}

// RouteLabel is one class a route step's AI may choose.
type RouteLabel struct {
	Label       string `json:"label" jsonschema:"required,minLength=1,maxLength=80"`
	Description string `json:"description,omitempty" jsonschema:"maxLength=500"`
}

// Classification is what ai.classify answered a route step.
type Classification struct {
	Label      string  `json:"label"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason"`
}

// routeFromAI routes on an ai.classify result.
func routeFromAI(cfg *RouteConfig, result any) (any, error) {
	var r struct {
		Classification
		AI *AIRecord `json:"ai"`
	}
	if err := decodeInto(result, &r); err != nil {
		return nil, errors.Wrap(err, "ai.classify result")
	}
	c := r.Classification
	out := Route(*cfg, map[string]any{"label": c.Label, "confidence": c.Confidence, "reason": c.Reason})
	out.Classification = &c
	out.AI = r.AI
	return out, nil
}

func (a *RouteAI) args() map[string]any {
	labels := make([]any, len(a.Labels))
	for i, l := range a.Labels {
		m := map[string]any{"label": l.Label}
		if l.Description != "" {
			m["description"] = l.Description
		}
		labels[i] = m
	}
	args := map[string]any{"text": a.Text, "labels": labels}
	if a.Instructions != "" {
		args["instructions"] = a.Instructions
	}
	return args
}

// DraftAI makes a draft step write with ai.draft: the rendered template is
// the brief, and the model's text is the draft a person reviews (unless
// review is off).
type DraftAI struct {
	// Kind is reply, report, quote or other. Defaults to reply.
	Kind string `json:"kind,omitempty" jsonschema:"enum=reply,enum=report,enum=quote,enum=other"`
	// Data is what the draft may draw on: usually a reference such as
	// "${steps.intake.fields}". Fields the connection redacts are masked
	// before the prompt leaves.
	Data any `json:"data,omitempty"`
	// Tone ("friendly, brief") and MaxWords shape the text.
	Tone     string `json:"tone,omitempty" jsonschema:"maxLength=200"`
	MaxWords int    `json:"max_words,omitempty" jsonschema:"minimum=1,maximum=10000"`
}

// AIDraftArgs are the ai.draft arguments of a draft step whose references
// are resolved; ok is false when the step does not use AI.
func (c DraftConfig) AIDraftArgs() (args map[string]any, ok bool) {
	if c.AI == nil {
		return nil, false
	}
	kind := c.AI.Kind
	if kind == "" {
		kind = "reply"
	}
	args = map[string]any{"kind": kind, "brief": c.Template}
	if m, isMap := c.AI.Data.(map[string]any); isMap {
		args["data"] = m
	} else if c.AI.Data != nil {
		args["data"] = map[string]any{"value": c.AI.Data}
	}
	if c.AI.Tone != "" {
		args["tone"] = c.AI.Tone
	}
	if c.AI.MaxWords > 0 {
		args["max_words"] = c.AI.MaxWords
	}
	return args, true
}
