package bas

import (
	"context"
	"iter"

	"github.com/bas-platform/bas/runengine"
)

// The run engine's values, as the typed calls below hand them out. Each is
// a snapshot the caller may keep and change: it shares nothing with the
// engine.
type (
	// Run is one durable execution of a process version.
	Run = runengine.Run
	// StepRun is a step's state within a run.
	StepRun = runengine.StepRun
	// Subject is what a run is about.
	Subject = runengine.Subject
	// RunTrigger says how a run started.
	RunTrigger = runengine.RunTrigger
	// Task is a human task a step waits on (or a review of an automatic
	// action).
	Task = runengine.Task
	// Approval is an action waiting for a person's decision.
	Approval = runengine.Approval
	// Decision is the approval decided and its run as the decision left it.
	Decision = runengine.Decision
	// Event is an event on the workspace's bus.
	Event = runengine.Event
	// Published is an event published and the runs it started.
	Published = runengine.Published
	// Notice is an event delivered to a subscriber, with its cursor.
	Notice = runengine.Notice

	// RunStatus is where a run is.
	RunStatus = runengine.RunStatus
	// StepStatus is where a step of a run is.
	StepStatus = runengine.StepStatus
	// TaskStatus is where a human task is.
	TaskStatus = runengine.TaskStatus
	// ApprovalStatus is where an approval is.
	ApprovalStatus = runengine.ApprovalStatus

	// StartParams start a run (see Workspace.Start).
	StartParams = runengine.StartParams
	// CancelParams cancel a run.
	CancelParams = runengine.CancelParams
	// CompleteTaskParams complete a human task.
	CompleteTaskParams = runengine.CompleteTaskParams
	// DecideParams decide an approval.
	DecideParams = runengine.DecideParams
	// PublishParams publish an event.
	PublishParams = runengine.PublishParams
	// SubscribeParams choose the events a subscription delivers.
	SubscribeParams = runengine.SubscribeParams
	// RateLimit bounds runs' calls of a capability, or of the capabilities
	// under an id prefix (see Options.RateLimits).
	RateLimit = runengine.RateLimit
)

// Run statuses: running, waiting or paused, then one of the four ends.
const (
	RunRunning   = runengine.RunRunning
	RunWaiting   = runengine.RunWaiting
	RunPaused    = runengine.RunPaused
	RunCompleted = runengine.RunCompleted
	RunFailed    = runengine.RunFailed
	RunRejected  = runengine.RunRejected
	RunCancelled = runengine.RunCancelled
)

// Step statuses.
const (
	StepPending         = runengine.StepPending
	StepRunning         = runengine.StepRunning
	StepWaitingApproval = runengine.StepWaitingApproval
	StepWaitingTask     = runengine.StepWaitingTask
	StepWaiting         = runengine.StepWaiting
	StepCompleted       = runengine.StepCompleted
	StepFailed          = runengine.StepFailed
	StepSkipped         = runengine.StepSkipped
)

// Task statuses.
const (
	TaskOpen      = runengine.TaskOpen
	TaskCompleted = runengine.TaskCompleted
	TaskCancelled = runengine.TaskCancelled
)

// Approval statuses.
const (
	ApprovalPending   = runengine.ApprovalPending
	ApprovalApproved  = runengine.ApprovalApproved
	ApprovalRejected  = runengine.ApprovalRejected
	ApprovalExpired   = runengine.ApprovalExpired
	ApprovalCancelled = runengine.ApprovalCancelled
)

// IdempotencyWindow is how long a start's idempotency key returns the run
// it started.
const IdempotencyWindow = runengine.IdempotencyWindow

// MaxSubjectLen bounds a start's Subject.Type and Subject.Label, in
// characters (see StartParams.Subject).
const MaxSubjectLen = runengine.MaxSubjectLen

// ErrMissed is what a subscription yields when its subscriber fell behind
// and events were lost to it (see Workspace.Subscribe).
var ErrMissed = runengine.ErrMissed

// Start starts a run of a process's current version and returns it once
// the start is durable. With p.IdempotencyKey set, a start repeated within
// IdempotencyWindow returns the run the first one started (the key is
// written in the same commit as that start), so a retried Start never makes
// two runs. An unknown process is ErrNotFound, a disabled or archived one
// ErrConflict, bad params ErrInvalid (see Violations), located at their
// names (["priority"], ["subject", "label"]) as every call of this package
// locates them; the HTTP API puts them under "body". A Subject is optional
// here, where the HTTP API requires one; given, it is checked as there.
func (ws *Workspace) Start(ctx context.Context, p StartParams) (*Run, error) {
	return kind(ws.engine.Start(ctx, p))
}

// WaitRun returns the run once it has ended (completed, failed, rejected or
// cancelled), or ctx's error when ctx ends first. It does not poll: the
// engine wakes it once the run's end is durable.
func (ws *Workspace) WaitRun(ctx context.Context, tenant, runID string) (*Run, error) {
	return kind(ws.engine.WaitRun(ctx, tenant, runID))
}

// WaitRunUntil returns the run once cond holds for it (it waits for a
// person, say), checking it at once and after each committed change of the
// run, or ctx's error when ctx ends first. A run that ends without
// satisfying cond is returned with an ErrConflict error. A nil cond is
// ErrInvalid (to wait for a run's end, use WaitRun).
func (ws *Workspace) WaitRunUntil(ctx context.Context, tenant, runID string, cond func(*Run) bool) (*Run, error) {
	return kind(ws.engine.WaitRunUntil(ctx, tenant, runID, cond))
}

// Subscribe delivers a tenant's events once their commit is durable (runs
// started and completed, tasks created and completed, approvals requested
// and decided, app events, published events). The engine never waits for
// a subscriber: one that falls behind the last Options.SubscribeBuffer
// events gets ErrMissed with the cursor it goes on from, and reads the
// state again (ListRuns, ListTasks, ListApprovals of ws.Engine()). The
// subscription starts when Subscribe is called and ends with ctx or the
// loop over it. On a cluster node (Options.Cluster) it delivers every
// node's events, another node's a little later; see
// runengine.Engine.Subscribe.
func (ws *Workspace) Subscribe(ctx context.Context, p SubscribeParams) iter.Seq2[Notice, error] {
	return ws.engine.Subscribe(ctx, p)
}

// Cancel stops a run that has not finished (ErrConflict when it has) and
// returns it.
func (ws *Workspace) Cancel(ctx context.Context, p CancelParams) (*Run, error) {
	return kind(ws.engine.Cancel(ctx, p))
}

// CompleteTask completes an open task with one of its actions and returns
// it; the run goes on once the completion is durable.
func (ws *Workspace) CompleteTask(ctx context.Context, p CompleteTaskParams) (*Task, error) {
	return kind(ws.engine.CompleteTask(ctx, p))
}

// Decide approves or rejects a pending approval; a rejection stops its run.
func (ws *Workspace) Decide(ctx context.Context, p DecideParams) (*Decision, error) {
	return kind(ws.engine.Decide(ctx, p))
}

// Publish emits an event durably, starts the runs it triggers and wakes the
// runs waiting for it; it returns the event and the runs it started.
func (ws *Workspace) Publish(ctx context.Context, p PublishParams) (*Published, error) {
	return kind(ws.engine.Publish(ctx, p))
}

// GetRun returns a run of tenant (ErrNotFound for another tenant's).
func (ws *Workspace) GetRun(ctx context.Context, tenant, runID string) (*Run, error) {
	return kind(ws.engine.GetRun(ctx, tenant, runID))
}

// GetTask returns a task of tenant.
func (ws *Workspace) GetTask(ctx context.Context, tenant, taskID string) (*Task, error) {
	return kind(ws.engine.GetTask(ctx, tenant, taskID))
}

// GetApproval returns an approval of tenant.
func (ws *Workspace) GetApproval(ctx context.Context, tenant, approvalID string) (*Approval, error) {
	return kind(ws.engine.GetApproval(ctx, tenant, approvalID))
}
