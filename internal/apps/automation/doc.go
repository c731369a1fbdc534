// Package automation is the autonomy of a workspace: how much of each
// process's work AI actions do without a person, and how that changes as
// people come to trust them.
//
// # Settings
//
// Settings (interface.md 2.9, AutomationPatch) are kept for the workspace
// and for each process; a process's unset fields inherit the workspace's,
// the workspace's unset fields the defaults (DefaultPercent 0,
// DefaultMaxPercent 50, DefaultSamplePercent 10, ramp 0.9 over 20
// decisions, rollback below 0.7 over 10). A PATCH changes only the fields
// present; null clears. Widening changes (a higher percent or max_percent,
// a daily limit cleared or raised, a pause ended, an exception above the
// percent in force) wait for a second person when the workspace has
// four-eyes on, unless a break_glass_reason is given. Every change is
// written to the audit log with its before and after.
//
// # The gate
//
// Service implements runengine.Gate. Decide lets an item run without a
// person when nothing is paused, the item's bucket (Bucket: a hash of its
// key, so a retry decides the same) is below the percent in force, and no
// daily limit is reached; each answer is stored, so it is counted once
// (the engine's first ask of an item, runengine.GateRequest.New, has no
// stored answer and is not looked up).
// A temporary exception replaces the percent until it lapses by itself
// (the clock is compared; no timer is needed).
//
// When the workspace is its store's only writer (Config.Shared unset), the
// gate decides from memory: it keeps the day counts and the level in
// force of each process it decided (until the first end of an exception),
// so a new item's decision reads nothing from the store, whose reads wait
// for the commits in flight. Every write of levels in the process (a
// PATCH, a four-eyes approval until its transaction ended, a lapse, a ramp
// or rollback) empties that memory, and no decision uses it while one is
// under way.
//
// # The ramp and the rollback
//
// Observe records each person's verdict on a proposed action in the
// agreement ledger of package decisions. With auto_ramp on, when the
// agreement over the last ramp_min_decisions verdicts since the level last
// changed is at least ramp_min_agreement, percent steps up (RampSteps: 10,
// 25, 50, 75, 100) to at most max_percent. When the agreement over the last
// rollback_min_decisions verdicts falls below rollback_agreement, percent
// drops to 0 and the process pauses with the reason. Both are audited with
// the actor "system".
package automation
