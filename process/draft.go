package process

import (
	"github.com/bas-platform/bas/internal/refs"
	"github.com/cockroachdb/errors"
)

// DraftConfig configures a draft step: render Template (with ${path}
// references) and, unless Review is false, give it to a person to approve
// or edit.
type DraftConfig struct {
	Title    string `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Template string `json:"template" jsonschema:"required,minLength=1,maxLength=50000"`
	Review   *bool  `json:"review,omitempty"`
	Assignee string `json:"assignee,omitempty" jsonschema:"maxLength=200"`
	// AI, when set, writes the draft with ai.draft: the rendered template
	// is the brief (see DraftAI). The workspace must bind ai.draft.
	AI *DraftAI `json:"ai,omitempty"`
}

// draftStep is the draft step type: its executor (runDraft) renders the
// template and, unless review is off, gives it to a person.
func draftStep() StepType {
	return Define(StepDef[DraftConfig]{
		Type: StepDraft, Label: "Draft",
		Description: "Writes the output (reply, report, quote) from a template for a person to review.",
		Needs: func(s Step) []string {
			var c DraftConfig
			if err := decodeJSON(nonEmpty(s.Config), &c); err == nil && c.AI != nil {
				return []string{CapAIDraft}
			}
			return nil
		},
		// Title and template bounds are the schema's; references are
		// checked for every config.
		Run: runDraft,
	})
}

// runDraft renders the template (or has ai.draft write the text) and,
// unless review is off, gives it to a person, who may edit it; the step
// completes with the text.
func runDraft(env StepEnv) bool {
	var cfg DraftConfig
	if err := env.Config(&cfg); err != nil {
		return env.Fail(err)
	}
	text := cfg.Template // references were resolved by Config
	drafted, aiRec := aiDraft(env.Output())
	if drafted != "" {
		text = drafted
	}
	if t, ok := env.TaskDone(); ok {
		orig := text
		if s, ok := t.Fields["text"].(string); ok && s != "" {
			text = s
		}
		out := map[string]any{"text": text, "outcome": t.Outcome, "edited": text != orig, "reviewed_by": t.CompletedBy}
		if aiRec != nil {
			out["ai"] = aiRec
		}
		return env.Complete(out, false)
	}
	if env.HasTask() {
		return false
	}
	if args, ok := cfg.AIDraftArgs(); ok && aiRec == nil {
		// ai.draft writes the text; the step keeps it (with the AI record)
		// as its output while a person reviews it.
		if !env.Called() {
			env.Call(CapAIDraft, args, "call", "")
			return false
		}
		o, ok := env.CallOutcome()
		if !ok {
			return false
		}
		m, _ := o.(map[string]any)
		text, _ = m["text"].(string)
		aiRec = m["ai"]
		if aiRec == nil {
			aiRec = map[string]any{}
		}
		env.SetOutput(map[string]any{"draft": text, "subject": m["subject"], "ai": aiRec})
	}
	if !cfg.Reviewed() {
		out := map[string]any{"text": text, "outcome": nil, "edited": false}
		if aiRec != nil {
			out["ai"] = aiRec
		}
		return env.Complete(out, true)
	}
	env.CreateTask(TaskSpec{Title: cfg.Title, Description: text, Actions: cfg.ReviewActions(),
		Fields: cfg.ReviewFields(), Assignee: cfg.Assignee})
	return false
}

// aiDraft returns the text and AI record ai.draft wrote for a draft step
// that is waiting for its review, from the step's output ("" and nil when
// it did not use AI).
func aiDraft(output any) (string, any) {
	m, ok := output.(map[string]any)
	if !ok || m["ai"] == nil {
		return "", nil
	}
	s, _ := m["draft"].(string)
	return s, m["ai"]
}

// Reviewed reports whether a person reviews the draft (unless review is
// false).
func (c DraftConfig) Reviewed() bool { return c.Review == nil || *c.Review }

// ReviewActions are the actions of the review task.
func (DraftConfig) ReviewActions() []string { return []string{"approve", "reject"} }

// ReviewFields are the fields of the review task: the text, which the
// reviewer may replace.
func (DraftConfig) ReviewFields() []map[string]any {
	return []map[string]any{{"key": "text", "label": "Text (leave empty to keep the draft)", "type": "text",
		"required": false, "options": nil}}
}

// DraftOutput is a draft step's rendered output, before a person reviews it.
type DraftOutput struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// render renders a draft template: every ${path} reference is replaced by
// the text of the value at that path of data (numbers in plain decimal,
// objects and lists as compact JSON), "$${" is a literal "${". A reference
// to a missing path is an error naming it. It is pure and deterministic.
func render(template string, data map[string]any) (string, error) {
	v, err := refs.Resolve(template, data)
	if err != nil {
		return "", errors.Wrap(err, "render template")
	}
	// A template that is exactly one reference resolves to the value
	// itself; a draft is always text.
	s, err := refs.Text(v)
	if err != nil {
		return "", errors.Wrap(err, "render template")
	}
	return s, nil
}
