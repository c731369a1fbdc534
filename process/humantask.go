package process

import (
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
)

// TaskField is a field a person fills in on a human task.
type TaskField struct {
	Key      string   `json:"key" jsonschema:"required,pattern=^[a-z][a-z0-9_]{0\\,39}$"`
	Label    string   `json:"label" jsonschema:"required,minLength=1,maxLength=120"`
	Type     string   `json:"type,omitempty" jsonschema:"enum=text,enum=number,enum=money,enum=date,enum=email,enum=enum,enum=boolean"`
	Required bool     `json:"required,omitempty"`
	Options  []string `json:"options,omitempty" jsonschema:"maxItems=100"`
}

// HumanTaskConfig configures a human_task step: the task a person works.
// The task's outcome is the chosen action; the submitted fields are the
// step's output.
type HumanTaskConfig struct {
	Title       string      `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Description string      `json:"description,omitempty" jsonschema:"maxLength=4000"`
	Actions     []string    `json:"actions,omitempty" jsonschema:"maxItems=10"`
	Fields      []TaskField `json:"fields,omitempty" jsonschema:"maxItems=50"`
	Assignee    string      `json:"assignee,omitempty" jsonschema:"maxLength=200"`
	DueHours    *float64    `json:"due_hours,omitempty" jsonschema:"exclusiveMinimum=0,maximum=87600"`
}

// humanTaskStep is the human_task step type: the engine gives a person a
// task and waits for it.
func humanTaskStep() StepType {
	return Define(StepDef[HumanTaskConfig]{
		Type: StepHumanTask, Label: "Human task",
		Description: "A task for a person: approve, decide or fill in fields.",
		Check:       checkHumanTask,
		Run:         runHumanTask,
	})
}

// runHumanTask gives a person the step's task, and completes the step with
// the chosen action and the fields when the person completes it.
func runHumanTask(env StepEnv) bool {
	if t, ok := env.TaskDone(); ok {
		return env.Complete(map[string]any{"outcome": t.Outcome, "fields": t.Fields, "completed_by": t.CompletedBy}, false)
	}
	if env.HasTask() {
		return false
	}
	var cfg HumanTaskConfig
	if err := env.Config(&cfg); err != nil {
		return env.Fail(err)
	}
	env.CreateTask(TaskSpec{Title: cfg.Title, Description: cfg.Description, Actions: cfg.TaskActions(),
		Fields: cfg.TaskFields(), Assignee: cfg.Assignee, DueHours: cfg.DueHours})
	return false
}

func checkHumanTask(cfg *HumanTaskConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	seen := map[string]bool{}
	for i, a := range cfg.Actions {
		aloc := at(loc, "actions", i)
		switch {
		case strings.TrimSpace(a) == "":
			v.add(aloc, "string_too_short", "an action needs a name")
		case utf8.RuneCountInString(a) > 40:
			v.add(aloc, "string_too_long", "must have at most 40 characters")
		case seen[a]:
			v.add(aloc, "value_error", "is listed twice")
		}
		seen[a] = true
	}
	keys := map[string]int{}
	for i, f := range cfg.Fields {
		floc := at(loc, "fields", i)
		if first, dup := keys[f.Key]; dup && f.Key != "" {
			v.add(at(floc, "key"), "value_error", "duplicates the key of field %d", first)
		}
		keys[f.Key] = i
		switch {
		case f.Type == "enum" && len(f.Options) == 0:
			v.add(at(floc, "options"), "missing", "an enum field needs options")
		case f.Type != "enum" && len(f.Options) > 0:
			v.add(at(floc, "options"), "value_error", "options are only for enum fields")
		}
	}
	return v.vs
}

// TaskActions are the actions the step's task offers: the configured ones,
// or "complete".
func (c HumanTaskConfig) TaskActions() []string {
	if len(c.Actions) == 0 {
		return []string{"complete"}
	}
	return c.Actions
}

// TaskFields are the fields the step's task asks for, as the task shows
// them (a field without a type is text).
func (c HumanTaskConfig) TaskFields() []map[string]any {
	fields := make([]map[string]any, len(c.Fields))
	for i, f := range c.Fields {
		typ := f.Type
		if typ == "" {
			typ = "text"
		}
		fields[i] = map[string]any{"key": f.Key, "label": f.Label, "type": typ, "required": f.Required, "options": f.Options}
	}
	return fields
}
