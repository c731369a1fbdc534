package process

import "encoding/json"

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

// WaitConfig configures a wait step: a Duration, or an Event (with a Filter)
// with an optional Timeout.
type WaitConfig struct {
	Duration string          `json:"duration,omitempty" jsonschema:"maxLength=40"`
	Event    string          `json:"event,omitempty" jsonschema:"maxLength=200"`
	Filter   json.RawMessage `json:"filter,omitempty"`
	Timeout  string          `json:"timeout,omitempty" jsonschema:"maxLength=40"`
}

// FollowUpConfig configures a follow_up step: reminders through email.send
// every Every until an UntilEvent (matching Filter) arrives or MaxReminders
// have gone out.
type FollowUpConfig struct {
	To           any             `json:"to" jsonschema:"required"`
	Subject      string          `json:"subject" jsonschema:"required,minLength=1,maxLength=300"`
	Body         string          `json:"body" jsonschema:"required,minLength=1,maxLength=20000"`
	Every        string          `json:"every,omitempty" jsonschema:"maxLength=40"`
	MaxReminders int             `json:"max_reminders,omitempty" jsonschema:"minimum=1,maximum=50"`
	UntilEvent   string          `json:"until_event,omitempty" jsonschema:"maxLength=200"`
	Filter       json.RawMessage `json:"filter,omitempty"`
}

// MonitorConfig configures a monitor step: every Interval, read Value (a
// reference, or the result of calling the step's capability with Args) and
// check Condition (a filter over {"value": ...}) until it holds or Timeout
// passes.
type MonitorConfig struct {
	Value     any             `json:"value,omitempty"`
	Args      map[string]any  `json:"args,omitempty"`
	Condition json.RawMessage `json:"condition" jsonschema:"required"`
	Interval  string          `json:"interval,omitempty" jsonschema:"maxLength=40"`
	Timeout   string          `json:"timeout,omitempty" jsonschema:"maxLength=40"`
	// FailOnTimeout fails the step (and the run) when the timeout passes;
	// otherwise the step completes with held=false.
	FailOnTimeout bool `json:"fail_on_timeout,omitempty"`
}

// DraftConfig configures a draft step: render Template (with ${path}
// references) and, unless Review is false, give it to a person to approve
// or edit.
type DraftConfig struct {
	Title    string `json:"title" jsonschema:"required,minLength=1,maxLength=200"`
	Template string `json:"template" jsonschema:"required,minLength=1,maxLength=50000"`
	Review   *bool  `json:"review,omitempty"`
	Assignee string `json:"assignee,omitempty" jsonschema:"maxLength=200"`
}
