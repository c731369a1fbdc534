// Package process is what to run: process definitions and their immutable
// versions, triggers, the eleven step types with their configuration
// schemas, per-step controls and the widening rule.
//
// A Definition is a chain of Steps started by a Trigger. Editing the steps or
// the trigger makes a new Version; a run keeps the version it started on.
//
// # Definitions
//
// Service keeps definitions and versions in the store, under the tenant:
// Create, Get, List, Update (PATCH semantics; a widening edit waits for a
// second person when the workspace has four-eyes on, see Widening), Archive
// and Versions. Input arrives as ProcessIn and ProcessPatch; DecodeIn and
// DecodePatch read them from JSON and report every violation at once, in
// api.md's 422 shape. Create, Update, DecodeIn, DecodePatch, Check,
// CheckTrigger and CheckSteps locate violations at the input's field names,
// as the rest of the Go API does (["steps", 0, "type"], ["trigger",
// "cron"], ["search", name]); a violation of the input as a whole (JSON
// that is not an object) has an empty location. The HTTP API puts them
// under "body". OnChange hooks run in the
// transaction of every change (the run engine indexes triggers with them);
// ByEvent and Needed serve the engine and the capability gaps.
//
// # Step types
//
// StepTypes lists the eleven types with the JSON Schema of their configs
// (served by GET /v1/processes/step-types) and the capabilities they call.
// DecodeIn and DecodePatch check a step's config against its schema and
// the rules a schema cannot say (durations, filters, patterns, references,
// cross-field rules). The deterministic work of intake (from text), validate, route,
// consolidate and analyse is done by pure functions (Intake, Validate,
// Route, Consolidate, Analyse). They do no I/O: the engine resolves references, waits,
// schedules and calls capabilities.
//
// Each step type lives in one file: its config, schema, checks and
// executor, declared with Define and registered by a line in
// steptypes.go. A pure type's executor is its Eval; the types whose work
// needs the engine's means (human_task, execute, wait, follow_up, monitor,
// draft) have a Run that decides, each time the step is reached or woken,
// what it does through a StepEnv: call a capability, ask the autonomy
// gate, give a person a task or an approval, set a timer, wait for an
// event, complete or fail. The engine implements StepEnv once and runs
// every step through StepType.Run; the records, keys and commits stay
// its own.
package process

import (
	"encoding/json"
	"time"
)

// Trigger types.
const (
	TriggerManual   = "manual"
	TriggerEvent    = "event"
	TriggerSchedule = "schedule"
)

// Trigger starts runs of a process.
type Trigger struct {
	// Type is manual, event or schedule.
	Type string `json:"type" jsonschema:"required,enum=manual,enum=event,enum=schedule"`
	// Event is the event name an event trigger listens for.
	Event string `json:"event,omitempty" jsonschema:"maxLength=200"`
	// Filter narrows an event trigger (api.md's filter language).
	Filter json.RawMessage `json:"filter,omitempty"`
	// Cron is a schedule trigger's five-field expression.
	Cron string `json:"cron,omitempty" jsonschema:"maxLength=200"`
	// Timezone is the IANA zone the cron is evaluated in. Defaults to UTC.
	Timezone string `json:"timezone,omitempty" jsonschema:"maxLength=64"`
}

// Controls are the per-step controls any step may carry.
type Controls struct {
	// RequireApproval makes a person approve before the step runs;
	// rejecting stops the run.
	RequireApproval bool `json:"require_approval,omitempty"`
	// SLAHours marks the run overdue after waiting this long on the step.
	SLAHours *float64 `json:"sla_hours,omitempty" jsonschema:"exclusiveMinimum=0,maximum=87600"`
	// AmountCapCents: above this amount a person must approve.
	AmountCapCents *int64 `json:"amount_cap_cents,omitempty" jsonschema:"minimum=0"`
	// AllowedTools, when set, are the only capabilities the step may call.
	AllowedTools []string `json:"allowed_tools,omitempty" jsonschema:"maxItems=50"`
	// ApprovalsRequired is how many distinct people must approve the
	// step's approval (1 when unset).
	ApprovalsRequired int `json:"approvals_required,omitempty" jsonschema:"minimum=1,maximum=5"`
	// SeparateDuties keeps the run's requester, and whoever completed an
	// earlier human step of the run, from approving the step's approval.
	SeparateDuties bool `json:"separate_duties,omitempty"`
}

// Step is one link of the chain.
type Step struct {
	// Key names the step in the run and in references (steps.<key>...).
	Key string `json:"key" jsonschema:"required,pattern=^[a-z][a-z0-9_]{0\\,39}$"`
	// Type is one of the eleven step types.
	Type string `json:"type" jsonschema:"required"`
	// Name is a human title.
	Name string `json:"name,omitempty" jsonschema:"maxLength=200"`
	// Capability is the capability the step calls (required for execute;
	// optional override for others).
	Capability string `json:"capability,omitempty" jsonschema:"maxLength=120"`
	// Config is validated against the step type's schema.
	Config json.RawMessage `json:"config,omitempty"`
	// Controls are the per-step controls.
	Controls Controls `json:"controls"`
}

// Definition is a process: the current version of its steps and trigger,
// and its descriptive fields.
type Definition struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Function    string  `json:"function"`
	Trigger     Trigger `json:"trigger"`
	Steps       []Step  `json:"steps"`
	Enabled     bool    `json:"enabled"`
	Archived    bool    `json:"archived"`
	Version     int     `json:"version"`
	TemplateID  *string `json:"template_id"`
	// Search names values of a run's data that run search indexes (see
	// ProcessIn.Search); empty when none.
	Search    map[string]string `json:"search,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// Version is an immutable snapshot of a process's trigger and steps.
type Version struct {
	ProcessID string  `json:"process_id"`
	Name      string  `json:"name"`
	Function  string  `json:"function"`
	Version   int     `json:"version"`
	Trigger   Trigger `json:"trigger"`
	Steps     []Step  `json:"steps"`
	// Search is the version's declared search fields (see ProcessIn.Search).
	Search    map[string]string `json:"search,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	CreatedBy string            `json:"created_by"`
}

// Step types.
const (
	StepIntake      = "intake"
	StepValidate    = "validate"
	StepRoute       = "route"
	StepConsolidate = "consolidate"
	StepAnalyse     = "analyse"
	StepDraft       = "draft"
	StepMonitor     = "monitor"
	StepFollowUp    = "follow_up"
	StepExecute     = "execute"
	StepHumanTask   = "human_task"
	StepWait        = "wait"
)
