package runengine

import (
	"time"

	"github.com/bas-platform/bas/store"
)

// RunStatus is where a run is: running, waiting, or one of the ends
// (completed, failed, rejected, cancelled).
type RunStatus string

// Run statuses.
const (
	RunRunning   RunStatus = "running"
	RunWaiting   RunStatus = "waiting"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunRejected  RunStatus = "rejected"
	RunCancelled RunStatus = "cancelled"
	// RunPaused is a run held by a pause of it or of its process: it
	// takes no step, and what comes due or arrives meanwhile is kept for
	// its resume.
	RunPaused RunStatus = "paused"
)

// StepStatus is where a step of a run is.
type StepStatus string

// Step statuses.
const (
	StepPending         StepStatus = "pending"
	StepRunning         StepStatus = "running"
	StepWaitingApproval StepStatus = "waiting_approval"
	StepWaitingTask     StepStatus = "waiting_task"
	StepWaiting         StepStatus = "waiting"
	StepCompleted       StepStatus = "completed"
	StepFailed          StepStatus = "failed"
	StepSkipped         StepStatus = "skipped"
)

// TaskStatus is where a human task is.
type TaskStatus string

// Task statuses.
const (
	TaskOpen      TaskStatus = "open"
	TaskCompleted TaskStatus = "completed"
	TaskCancelled TaskStatus = "cancelled"
)

// Approval statuses. Cancelled is for approvals of a run cancelled while
// they were pending.
const (
	ApprovalPending   ApprovalStatus = "pending"
	ApprovalApproved  ApprovalStatus = "approved"
	ApprovalRejected  ApprovalStatus = "rejected"
	ApprovalExpired   ApprovalStatus = "expired"
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// ApprovalStatus is where an approval is.
type ApprovalStatus string

// Subject is what a run is about.
type Subject struct {
	Type  string `json:"type"`
	Label string `json:"label"`
}

// data is the subject as decoded JSON, as events and references see it.
func (s Subject) data() map[string]any { return map[string]any{"type": s.Type, "label": s.Label} }

// RunTrigger says how a run started.
type RunTrigger struct {
	// Type is manual, event or schedule.
	Type string `json:"type"`
	// Event is the event name of an event-started run.
	Event *string `json:"event"`
	// EventID is the id of that event.
	EventID string `json:"event_id,omitempty"`
	// EmittedBy is who published that event from outside (see
	// Event.EmittedBy); empty when an app or the engine emitted it.
	EmittedBy string `json:"emitted_by,omitempty"`
	// Data is the event's data (or the schedule's fire time).
	Data map[string]any `json:"data,omitempty"`
	// Cause is the run whose event started this run, and that run's
	// chain; nil when no run's event did.
	Cause *Cause `json:"cause,omitempty"`
}

// MaxChainDepth is how deep a chain of runs started by runs' events may
// go: a run no run's event started has depth 0, a run its event started
// depth 1, and so on. An event of a run at this depth starts no run; the
// cut is recorded (process.run.loop_stopped and an audit entry).
const MaxChainDepth = 8

// Cause is the causation an event carries when a run emitted it: the run,
// the first run of its chain, its depth, and the processes of the chain's
// runs (root first, the run's own last). A run never starts a run of a
// process already in the chain of the event that would start it.
type Cause struct {
	RunID     string   `json:"run_id"`
	RootRunID string   `json:"root_run_id"`
	Depth     int      `json:"depth"`
	Processes []string `json:"processes"`
}

// causeOf is the causation of the events r emits.
func causeOf(r *Run) *Cause {
	c := r.Trigger.Cause
	if c == nil {
		return &Cause{RunID: r.ID, RootRunID: r.ID, Processes: []string{r.ProcessID}}
	}
	procs := make([]string, len(c.Processes), len(c.Processes)+1)
	copy(procs, c.Processes)
	return &Cause{RunID: r.ID, RootRunID: c.RootRunID, Depth: c.Depth + 1, Processes: append(procs, r.ProcessID)}
}

// StepRun is a step's state within a run.
type StepRun struct {
	Key         string     `json:"key"`
	Type        string     `json:"type"`
	Name        string     `json:"name,omitempty"`
	Status      StepStatus `json:"status"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      any        `json:"output"`
	Error       *string    `json:"error"`
	ApprovalID  *string    `json:"approval_id"`
	TaskID      *string    `json:"task_id"`
	Attempts    int        `json:"attempts"`
	// internal is the engine's bookkeeping kept with the run record (see
	// UnmarshalJSON).
	internal stepInternal
}

// stepInternal is engine state of a step that callers need not read.
type stepInternal struct {
	Approved   bool           `json:"approved,omitempty"`
	Args       map[string]any `json:"args,omitempty"`       // approved (possibly edited) args
	Auto       bool           `json:"auto,omitempty"`       // the gate let it run
	Sample     bool           `json:"sample,omitempty"`     // review the automatic action afterwards
	Reminders  int            `json:"reminders,omitempty"`  // follow_up
	Checks     int            `json:"checks,omitempty"`     // monitor
	Deadline   *time.Time     `json:"deadline,omitempty"`   // wait/monitor/follow_up timeout
	WaitToken  string         `json:"wait_token,omitempty"` // matches timers and event waits
	WaitEvent  string         `json:"wait_event,omitempty"`
	SLAFired   bool           `json:"sla_fired,omitempty"`
	AmountSeen *int64         `json:"amount,omitempty"`
	// OutputBytes is the size of the output when it is stored apart (see
	// MaxInlineOutputBytes); 0 when the record holds it.
	OutputBytes int `json:"output_bytes,omitempty"`
	// RateReserved says a rate limit reserved the slot of the step's next
	// call (see RateLimit).
	RateReserved bool `json:"rate_reserved,omitempty"`
}

// Run is one durable execution of a process version.
type Run struct {
	ID             string     `json:"id"`
	Tenant         string     `json:"-"`
	ProcessID      string     `json:"process_id"`
	ProcessName    string     `json:"process_name"`
	ProcessVersion int        `json:"process_version"`
	Function       string     `json:"function"`
	Status         RunStatus  `json:"status"`
	Subject        Subject    `json:"subject"`
	Trigger        RunTrigger `json:"trigger"`
	CurrentStep    *string    `json:"current_step"`
	Steps          []StepRun  `json:"steps"`
	Overdue        bool       `json:"overdue"`
	StartedAt      time.Time  `json:"started_at"`
	CompletedAt    *time.Time `json:"completed_at"`
	Error          *string    `json:"error"`
	MinutesSaved   int        `json:"minutes_saved"`
	// RerunOf is the run this run reruns, from the step RerunFromStep;
	// both empty for a run that reruns none.
	RerunOf       string `json:"rerun_of,omitempty"`
	RerunFromStep string `json:"rerun_from_step,omitempty"`
	// RerunJob is the bulk job whose retry started this rerun (see
	// Engine.BulkRuns); empty for a run no job started.
	RerunJob string `json:"rerun_job,omitempty"`
	// Search holds the values of the process version's declared search
	// fields (lower case, at most MaxSearchValue bytes) found in the run's
	// data so far.
	Search map[string]string `json:"search,omitempty"`
	// WaitingReason says why a waiting run waits when it is not for a
	// person, a timer or an event of its steps (a rate limit).
	WaitingReason string `json:"waiting_reason,omitempty"`
	// Priority is low, normal or high; empty is normal (see PriorityHigh).
	Priority string `json:"priority,omitempty"`
	// Cursor is the index of the current step; Cursor and StartedBy are
	// kept with the run, not shown in its JSON.
	Cursor int `json:"cursor" jsonschema:"-"`
	// StartedBy is the actor who started a manual run.
	StartedBy string `json:"started_by,omitempty" jsonschema:"-"`
	// Paused is the state a paused run resumes to, and what came for it
	// while it was paused; nil unless paused. The run's JSON shows the
	// status it resumes to, when, whether by its process and slot_wait.
	Paused *pauseState `json:"paused,omitempty"`
}

// Finished reports whether the run has ended.
func (r *Run) Finished() bool {
	switch r.Status {
	case RunCompleted, RunFailed, RunRejected, RunCancelled:
		return true
	}
	return false
}

// Task is a human task (HumanTaskOut).
type Task struct {
	ID          string           `json:"id"`
	RunID       string           `json:"run_id"`
	ProcessID   string           `json:"process_id"`
	ProcessName string           `json:"process_name"`
	StepKey     string           `json:"step_key"`
	Title       string           `json:"title"`
	Description *string          `json:"description"`
	Subject     Subject          `json:"subject"`
	Actions     []string         `json:"actions"`
	Fields      []map[string]any `json:"fields"`
	Assignee    *string          `json:"assignee"`
	Status      TaskStatus       `json:"status"`
	Outcome     *string          `json:"outcome"`
	Values      map[string]any   `json:"values,omitempty"`
	CompletedBy *string          `json:"completed_by,omitempty"`
	DueAt       *time.Time       `json:"due_at"`
	CreatedAt   time.Time        `json:"created_at"`
	CompletedAt *time.Time       `json:"completed_at"`
	// Kind is "step" for a task a step waits on, "review" for an
	// after-the-fact review of an automatic action.
	Kind string `json:"kind"`
	// Priority is the run's priority when the task was created: low or
	// high; empty is normal (see Run.Priority).
	Priority string `json:"priority,omitempty"`
}

// Approval is an action waiting for a person (ApprovalOut).
type Approval struct {
	ID        string         `json:"id"`
	RunID     *string        `json:"run_id"`
	ProcessID string         `json:"process_id,omitempty"`
	StepKey   string         `json:"step_key,omitempty"`
	AppID     string         `json:"app_id"`
	Tool      string         `json:"tool"`
	Risk      string         `json:"risk"`
	Summary   string         `json:"summary"`
	Reason    string         `json:"reason,omitempty"`
	Args      map[string]any `json:"args"`
	Status    ApprovalStatus `json:"status"`
	CreatedAt time.Time      `json:"created_at"`
	ExpiresAt *time.Time     `json:"expires_at"`
	DecidedBy *string        `json:"decided_by"`
	DecidedAt *time.Time     `json:"decided_at"`
	Note      *string        `json:"note,omitempty"`
	Edited    bool           `json:"edited,omitempty"`
	// Digest is the SHA-256 (hex) of what the approval shows: its tool,
	// summary and args. A decision naming another digest is refused.
	Digest string `json:"digest"`
	// ApprovalsRequired is how many distinct people must approve (set
	// when more than one); Approvals are those who have.
	ApprovalsRequired int            `json:"approvals_required,omitempty"`
	Approvals         []ApprovalVote `json:"approvals,omitempty"`
}

// ApprovalVote is one person's approval of an approval that needs several.
type ApprovalVote struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// assigneeOf is the task's assignee, "*" when unassigned.
func assigneeOf(t *Task) string {
	if t.Assignee == nil || *t.Assignee == "" {
		return "*"
	}
	return *t.Assignee
}

var runs = &store.Collection[Run]{
	Name:     "run",
	ID:       func(r *Run) string { return r.ID },
	NotFound: "run not found",
	// Runs are decoded from the engine's binary stored form, which leaves
	// the id to the record's key (see appendStoredRun).
	DecodeWithID: decodeStoredRun,
	Indexes: []store.Index[Run]{
		{Name: "process", Values: func(r *Run) [][]any { return [][]any{{r.ProcessID}} },
			Same: func(old, r *Run) bool { return old.ProcessID == r.ProcessID }},
		// Running runs are listed from the engine's active index, which
		// holds exactly them.
		{Name: "status", Values: func(r *Run) [][]any {
			if r.Status == RunRunning {
				return nil
			}
			return statusValues(r.Status)
		}, Same: func(old, r *Run) bool { return old.Status == r.Status }},
		{Name: "overdue", Values: func(r *Run) [][]any {
			if r.Overdue && !r.Finished() {
				return [][]any{{}}
			}
			return nil
		}},
		// Runs a pause of their process paused, which its resume resumes.
		{Name: "paused-by-process", Values: func(r *Run) [][]any {
			if r.Status == RunPaused && r.Paused != nil && r.Paused.ByProcess {
				return [][]any{{r.ProcessID}}
			}
			return nil
		}},
	},
}

// runStatusValues are the status index's values of each status a run may
// have there, made once: Values is asked at every change of a run's status.
// They are only read.
var runStatusValues = func() map[RunStatus][][]any {
	m := map[RunStatus][][]any{}
	for _, s := range []RunStatus{RunWaiting, RunPaused, RunCompleted, RunFailed, RunRejected, RunCancelled} {
		m[s] = [][]any{{string(s)}}
	}
	return m
}()

// statusValues is the status index's values of status.
func statusValues(status RunStatus) [][]any {
	if v, ok := runStatusValues[status]; ok {
		return v
	}
	return [][]any{{string(status)}}
}

var tasks = &store.Collection[Task]{
	Name:     "task",
	ID:       func(t *Task) string { return t.ID },
	NotFound: "task not found",
	Indexes: []store.Index[Task]{
		{Name: "status", Values: func(t *Task) [][]any { return [][]any{{string(t.Status)}} }},
		{Name: "assignee", Values: func(t *Task) [][]any { return [][]any{{string(t.Status), assigneeOf(t)}} }},
		{Name: "run", Values: func(t *Task) [][]any { return [][]any{{t.RunID}} }},
	},
}

var approvals = &store.Collection[Approval]{
	Name:     "approval",
	ID:       func(a *Approval) string { return a.ID },
	NotFound: "approval not found",
	Indexes: []store.Index[Approval]{
		{Name: "status", Values: func(a *Approval) [][]any { return [][]any{{string(a.Status)}} }},
	},
}
