package ai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/cockroachdb/errors"
)

// task is one capability call turned into a chat request, and how its
// answer becomes the capability's result.
type task struct {
	name        string
	messages    []Message
	schema      json.RawMessage // the answer's JSON Schema; nil for free text
	maxTokens   int
	temperature *float64
	parse       func(content, finish string, meta capability.AIMeta) (any, error)
}

// answerSchemas compiles the answer schemas (one per field list or label
// set) once each.
var answerSchemas schema.Cache

// checkAnswer validates content against the answer's schema: every
// violation makes the answer invalid.
func checkAnswer(raw json.RawMessage, content string) error {
	v, err := answerSchemas.Compile(raw)
	if err != nil {
		return errors.Wrap(err, "compile the answer schema")
	}
	if vs := v.ValidateJSON(json.RawMessage(strings.TrimSpace(content)), "answer"); len(vs) > 0 {
		parts := make([]string, 0, min(len(vs), 5))
		for _, x := range vs[:min(len(vs), 5)] {
			parts = append(parts, x.String())
		}
		return invalid("it does not match the schema asked for: %s", strings.Join(parts, "; "))
	}
	return nil
}

func buildTask(call capability.Call, red *redactor) (*task, error) {
	decode := func(v any) error {
		if err := json.Unmarshal(call.Args, v); err != nil {
			return errs.Invalidf([]any{"args"}, "type_error", "%s", err.Error())
		}
		return nil
	}
	switch call.Capability {
	case capability.AIComplete:
		var a capability.AICompleteArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		return completeTask(a, red)
	case capability.AIExtract:
		var a capability.AIExtractArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		return extractTask(a, red), nil
	case capability.AIClassify:
		var a capability.AIClassifyArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		return classifyTask(a, red)
	case capability.AIDraft:
		var a capability.AIDraftArgs
		if err := decode(&a); err != nil {
			return nil, err
		}
		return draftTask(a, red)
	}
	return nil, errs.Invalidf([]any{"capability"}, "value_error", "the AI connector does not fill %s", call.Capability)
}

func completeTask(a capability.AICompleteArgs, red *redactor) (*task, error) {
	if (a.Prompt == "") == (len(a.Messages) == 0) {
		return nil, errs.Invalidf([]any{"args", "prompt"}, "value_error", "give prompt or messages, not both and not neither")
	}
	var msgs []Message
	if a.System != "" {
		msgs = append(msgs, Message{Role: "system", Content: red.labelled(red.text(a.System, nil))})
	}
	if a.Prompt != "" {
		msgs = append(msgs, Message{Role: "user", Content: red.labelled(red.text(a.Prompt, nil))})
	}
	for _, m := range a.Messages {
		msgs = append(msgs, Message{Role: m.Role, Content: red.labelled(red.text(m.Content, nil))})
	}
	return &task{name: "complete", messages: msgs, maxTokens: a.MaxTokens, temperature: a.Temperature,
		parse: func(content, finish string, meta capability.AIMeta) (any, error) {
			if finish == "" {
				finish = "stop"
			}
			return capability.AICompleteResult{Text: content, FinishReason: finish, AI: meta}, nil
		}}, nil
}

func obj(props map[string]any, required []string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and slices only
	}
	return b
}

const extractSystem = "You extract fields from a text. For every field, answer with quote: the exact characters of the text " +
	"that hold the field's value (copied verbatim, only the value, not its label), or null when the text does not give it. " +
	"Never invent or reformat a value. Characters shown as * are redacted; quote them as they appear. Answer with JSON only."

func extractTask(a capability.AIExtractArgs, red *redactor) *task {
	text := red.labelled(red.text(a.Text, nil))
	props := map[string]any{}
	keys := make([]string, len(a.Fields))
	var list strings.Builder
	for i, f := range a.Fields {
		keys[i] = f.Key
		props[f.Key] = obj(map[string]any{"quote": map[string]any{"type": []string{"string", "null"}}}, []string{"quote"})
		typ := f.Type
		if typ == "" {
			typ = extract.TypeText
		}
		fmt.Fprintf(&list, "- %s: %s (%s)", f.Key, f.Label, typ)
		if len(f.Options) > 0 {
			fmt.Fprintf(&list, ", one of: %s", strings.Join(f.Options, ", "))
		}
		if f.Description != "" {
			fmt.Fprintf(&list, ". %s", f.Description)
		}
		list.WriteByte('\n')
	}
	sch := mustJSON(obj(map[string]any{"fields": obj(props, keys)}, []string{"fields"}))
	user := "Fields:\n" + list.String()
	if a.Instructions != "" {
		user += "\nInstructions: " + a.Instructions + "\n"
	}
	user += "\nText:\n<<<\n" + text + "\n>>>"
	return &task{name: "extract", schema: sch,
		messages: []Message{{Role: "system", Content: extractSystem}, {Role: "user", Content: user}},
		parse: func(content, _ string, meta capability.AIMeta) (any, error) {
			if err := checkAnswer(sch, content); err != nil {
				return nil, err
			}
			var ans struct {
				Fields map[string]struct {
					Quote *string `json:"quote"`
				} `json:"fields"`
			}
			if err := decodeAnswer(content, &ans); err != nil {
				return nil, err
			}
			return extractResult(a, text, ans.Fields, meta)
		}}
}

// extractResult locates each quote in the text the model saw (redacted text
// keeps every offset), takes the evidence from the original text and
// parses it by the field's type, as label and regex extraction do.
func extractResult(a capability.AIExtractArgs, seen string, ans map[string]struct {
	Quote *string `json:"quote"`
}, meta capability.AIMeta) (capability.AIExtractResult, error) {
	out := capability.AIExtractResult{Values: map[string]capability.AIExtractValue{}, Problems: []capability.AIExtractProblem{},
		Missing: []string{}, AI: meta}
	orig := []rune(a.Text)
	seenR := []rune(seen)
	for _, f := range a.Fields {
		q := ans[f.Key].Quote
		if q == nil || strings.TrimSpace(*q) == "" {
			out.Problems = append(out.Problems, capability.AIExtractProblem{Field: f.Key, Kind: "missing", Message: f.Label + " is not in the text"})
			if f.Required {
				out.Missing = append(out.Missing, f.Key)
			}
			continue
		}
		quote := strings.TrimSpace(*q)
		start, ok := locate(seenR, []rune(quote))
		if !ok {
			return out, invalid("the quote %q for %s is not in the text", truncate(quote, 80), f.Key)
		}
		end := start + utf8.RuneCountInString(quote)
		evidence := string(orig[start:end])
		typ := f.Type
		if typ == "" {
			typ = extract.TypeText
		}
		v, err := extract.ParseValue(typ, f.Options, evidence)
		if err != nil {
			out.Problems = append(out.Problems, capability.AIExtractProblem{Field: f.Key, Kind: "type",
				Message: fmt.Sprintf("%s: %s", f.Label, err.Error()), Text: evidence})
			if f.Required {
				out.Missing = append(out.Missing, f.Key)
			}
			continue
		}
		out.Values[f.Key] = capability.AIExtractValue{Value: v, Text: evidence, Start: start, End: end}
	}
	return out, nil
}

// locate finds q in s (exactly, else ignoring case) and returns its
// code-point offset.
func locate(s, q []rune) (int, bool) {
	if len(q) == 0 || len(q) > len(s) {
		return 0, false
	}
	for _, fold := range []bool{false, true} {
		for i := 0; i+len(q) <= len(s); i++ {
			if fold {
				if strings.EqualFold(string(s[i:i+len(q)]), string(q)) {
					return i, true
				}
			} else if slices.Equal(s[i:i+len(q)], q) {
				return i, true
			}
		}
	}
	return 0, false
}

const classifySystem = "You classify a text into exactly one of the labels given. Answer with the label, your confidence " +
	"that it is right (0 to 1) and a one-sentence reason. Answer with JSON only."

func classifyTask(a capability.AIClassifyArgs, red *redactor) (*task, error) {
	labels := make([]string, len(a.Labels))
	var list strings.Builder
	for i, l := range a.Labels {
		if slices.Contains(labels[:i], l.Label) {
			return nil, errs.Invalidf([]any{"args", "labels", i, "label"}, "value_error", "duplicates label %q", l.Label)
		}
		labels[i] = l.Label
		list.WriteString("- " + l.Label)
		if l.Description != "" {
			list.WriteString(": " + l.Description)
		}
		list.WriteByte('\n')
	}
	sch := mustJSON(obj(map[string]any{
		"label":      map[string]any{"type": "string", "enum": labels},
		"confidence": map[string]any{"type": "number"}, // bounds are checked here: strict mode does not take them everywhere
		"reason":     map[string]any{"type": "string"},
	}, []string{"label", "confidence", "reason"}))
	user := "Labels:\n" + list.String()
	if a.Instructions != "" {
		user += "\nInstructions: " + a.Instructions + "\n"
	}
	user += "\nText:\n<<<\n" + red.labelled(red.text(a.Text, nil)) + "\n>>>"
	return &task{name: "classify", schema: sch,
		messages: []Message{{Role: "system", Content: classifySystem}, {Role: "user", Content: user}},
		parse: func(content, _ string, meta capability.AIMeta) (any, error) {
			if err := checkAnswer(sch, content); err != nil {
				return nil, err
			}
			var ans struct {
				Label      string      `json:"label"`
				Confidence json.Number `json:"confidence"`
				Reason     string      `json:"reason"`
			}
			if err := decodeAnswer(content, &ans); err != nil {
				return nil, err
			}
			conf, err := ans.Confidence.Float64()
			if err != nil || conf < 0 || conf > 1 {
				return nil, invalid("confidence %s is not between 0 and 1", ans.Confidence)
			}
			if !slices.Contains(labels, ans.Label) {
				return nil, invalid("label %q is not one of those offered", ans.Label)
			}
			return capability.AIClassifyResult{Label: ans.Label, Confidence: conf, Reason: ans.Reason, AI: meta}, nil
		}}, nil
}

const draftSystem = "You write business correspondence for a company: replies, reports and quotes. Write from the brief " +
	"and the data given; never invent facts, amounts, dates or commitments that the data does not hold. Characters shown " +
	"as * are redacted: do not repeat them. Answer with JSON only: a subject line and the text."

func draftTask(a capability.AIDraftArgs, red *redactor) (*task, error) {
	var lits []string
	data := red.data(anyMap(a.Data), &lits)
	raw, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return nil, errs.Invalidf([]any{"args", "data"}, "type_error", "%s", err.Error())
	}
	user := "Write a " + a.Kind + ".\n\nBrief:\n" + red.labelled(red.text(a.Brief, lits))
	if a.Tone != "" {
		user += "\n\nTone: " + a.Tone
	}
	if a.MaxWords > 0 {
		user += fmt.Sprintf("\n\nAt most %d words.", a.MaxWords)
	}
	if len(a.Data) > 0 {
		user += "\n\nData:\n" + string(raw)
	}
	sch := mustJSON(obj(map[string]any{
		"subject": map[string]any{"type": "string"},
		"text":    map[string]any{"type": "string"},
	}, []string{"subject", "text"}))
	return &task{name: "draft", schema: sch,
		messages: []Message{{Role: "system", Content: draftSystem}, {Role: "user", Content: user}},
		parse: func(content, finish string, meta capability.AIMeta) (any, error) {
			if finish == "length" {
				return nil, invalid("the draft was cut off at the token limit")
			}
			if err := checkAnswer(sch, content); err != nil {
				return nil, err
			}
			var ans struct {
				Subject string `json:"subject"`
				Text    string `json:"text"`
			}
			if err := decodeAnswer(content, &ans); err != nil {
				return nil, err
			}
			if strings.TrimSpace(ans.Text) == "" {
				return nil, invalid("the draft is empty")
			}
			return capability.AIDraftResult{Subject: ans.Subject, Text: ans.Text, AI: meta}, nil
		}}, nil
}

func anyMap(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
