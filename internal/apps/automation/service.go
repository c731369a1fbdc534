package automation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/foureyes"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// ChangeKind is the kind of the widening changes this service hands to the
// four-eyes queue; register ApplyChangeTx for it.
const ChangeKind = "automation.settings"

// Config configures New.
type Config struct {
	// Store is where settings, counters and gate decisions live. Required.
	Store store.Store
	// Clock tells the time: the UTC day of daily limits, exception expiry.
	// Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// ProcessExists returns nil when the process exists in the tenant and an
	// error marked errs.NotFound when it does not. Defaults to accepting
	// every id.
	ProcessExists func(ctx context.Context, tenant, processID string) error
	// Changes is the four-eyes queue. Without it widening changes apply at
	// once.
	Changes foureyes.Queue
	// WhatIfAgreement returns the agreement rate of the process's latest
	// what-if (nil when it has none, or compared nothing), read in the
	// ramp's transaction: a level with ramp_min_what_if ramps only when it
	// is at least that. Without it such a level never ramps.
	WhatIfAgreement func(r store.Reader, tenant, processID string) (*float64, error)
	// Shared tells that other processes write Store too (the nodes of a
	// cluster): each gate decision is then a commit of its own, counted in
	// a record read and written in that commit. Otherwise the gate keeps
	// the day counts in memory and hands a decision asked by the run
	// engine to the commit of the step that takes it (see gateMemo).
	Shared bool
}

// Service keeps the automation settings of each workspace and process and is
// the autonomy gate (runengine.Gate) every execute step passes: it decides
// which items run without a person, counts them against daily limits, and
// learns from people's verdicts to ramp automation up or roll it back. It
// is safe for concurrent use.
type Service struct {
	st      store.Store
	clock   clock.Clock
	log     *slog.Logger
	exists  func(ctx context.Context, tenant, processID string) error
	changes foureyes.Queue
	// deciders batch Decide per tenant (striped): decisions of one tenant
	// update the same daily counters, so concurrent transactions would only
	// conflict and retry; instead the decisions waiting while one
	// transaction commits share the next (see Decide).
	deciders [64]decider

	ids ids.Generator // makes the ids of the records and audit entries it writes

	whatIf func(r store.Reader, tenant, processID string) (*float64, error) // see Config.WhatIfAgreement

	memo *gateMemo // nil when Config.Shared
	// lvCache keeps the levels the gate read; nil when Config.Shared.
	// Every write of levels is bracketed by lvCache.writing.
	lvCache *levelCache
}

// New returns the automation service.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.ProcessExists == nil {
		cfg.ProcessExists = func(context.Context, string, string) error { return nil }
	}
	s := &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, exists: cfg.ProcessExists, changes: cfg.Changes,
		whatIf: cfg.WhatIfAgreement}
	if !cfg.Shared {
		s.memo = newGateMemo()
		s.lvCache = newLevelCache()
	}
	return s
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// loadLevel returns the stored level id, or nil when it was never written.
func loadLevel(r store.Reader, tenant, id string) (*Level, error) {
	l, err := levels.Get(r, tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return l, err
}

// load returns the workspace level and, when processID is set, the
// process's (nil when never written).
func load(r store.Reader, tenant, processID string) (ws, proc *Level, err error) {
	if ws, err = loadLevel(r, tenant, workspaceID); err != nil {
		return nil, nil, err
	}
	if processID != "" {
		if proc, err = loadLevel(r, tenant, processID); err != nil {
			return nil, nil, err
		}
	}
	return ws, proc, nil
}

// ProcessExists returns nil when processID exists in tenant, and an error
// marked errs.NotFound when it does not.
func (s *Service) ProcessExists(ctx context.Context, tenant, processID string) error {
	return s.exists(ctx, tenant, processID)
}

// Workspace returns the workspace's settings.
func (s *Service) Workspace(ctx context.Context, tenant string) (*View, error) {
	return s.view(ctx, tenant, "")
}

// Process returns the settings of processID, unset fields inherited from
// the workspace, with the agreement on its approvals. An unknown process is
// errs.NotFound.
func (s *Service) Process(ctx context.Context, tenant, processID string) (*View, error) {
	if err := s.exists(ctx, tenant, processID); err != nil {
		return nil, err
	}
	return s.view(ctx, tenant, processID)
}

func (s *Service) view(ctx context.Context, tenant, processID string) (*View, error) {
	var v *View
	err := s.st.View(ctx, func(r store.Reader) error {
		ws, proc, err := load(r, tenant, processID)
		if err != nil {
			return err
		}
		now := s.now()
		own := ws
		if processID != "" {
			own = proc
			if proc == nil {
				proc = &Level{ID: processID}
			}
		}
		v = resolve(ws, proc, now).view(processID, own)
		if v.AutomaticToday, err = countToday(r, tenant, processID, now); err != nil {
			return err
		}
		if processID != "" {
			v.Agreement, err = decisions.Summarize(r, tenant, decisions.ProcessScope(processID))
		}
		return err
	})
	return v, err
}

// Result is the outcome of an update: the settings now in force, or, when
// the change widens automation and waits for a second person, the queued
// change (Settings then shows the settings unchanged).
type Result struct {
	Settings *View
	// Change is the queued four-eyes change, nil when the patch applied.
	Change *foureyes.Change
}

// UpdateWorkspace applies p to the workspace's settings on behalf of actor.
// An empty patch changes (and audits) nothing.
func (s *Service) UpdateWorkspace(ctx context.Context, tenant, actor string, p Patch) (*Result, error) {
	return s.update(ctx, tenant, "", actor, p)
}

// UpdateProcess applies p to the settings of processID on behalf of actor.
// An unknown process is errs.NotFound.
func (s *Service) UpdateProcess(ctx context.Context, tenant, processID, actor string, p Patch) (*Result, error) {
	if err := s.exists(ctx, tenant, processID); err != nil {
		return nil, err
	}
	return s.update(ctx, tenant, processID, actor, p)
}

func (s *Service) update(ctx context.Context, tenant, processID, actor string, p Patch) (*Result, error) {
	if err := errs.Validation(p.Validate()...); err != nil {
		return nil, err
	}
	if p.Empty() {
		v, err := s.view(ctx, tenant, processID)
		return &Result{Settings: v}, err
	}
	fourEyes, err := foureyes.Required(ctx, s.changes, tenant)
	if err != nil {
		return nil, err
	}
	var change *foureyes.Change
	end := s.lvCache.writing()
	err = s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		change, err = s.applyTx(tx, tenant, processID, actor, p, applyMode{fourEyes: fourEyes})
		return err
	})
	end()
	if err != nil {
		return nil, err
	}
	res := &Result{Change: change}
	if res.Settings, err = s.view(ctx, tenant, processID); err != nil {
		return nil, err
	}
	return res, nil
}

// changePayload is what a queued widening change carries.
type changePayload struct {
	ProcessID   string `json:"process_id,omitempty"`
	Patch       Patch  `json:"patch"`
	RequestedBy string `json:"requested_by"`
}

// ApplyChangeTx applies a widening change a second person approved, inside
// the transaction that marks it approved (it is the four-eyes queue's apply
// function for ChangeKind). The patch is checked again against the
// settings as they are now; approver is the second person. The gate reads
// levels from the store, not from memory, until that transaction ended
// (foureyes.AfterDecided; for good when ctx cannot tell).
func (s *Service) ApplyChangeTx(ctx context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	if end := s.lvCache.writing(); !foureyes.AfterDecided(ctx, end) {
		s.log.Warn("automation: a change applied in a transaction whose end is not told; the gate reads its levels from the store from now on")
	}
	var cp changePayload
	if err := json.Unmarshal(payload, &cp); err != nil {
		return errors.Wrap(err, "decode automation change")
	}
	if cp.ProcessID != "" {
		if err := s.exists(ctx, tenant, cp.ProcessID); err != nil {
			return err
		}
	}
	if err := errs.Validation(cp.Patch.Validate()...); err != nil {
		return err
	}
	_, err := s.applyTx(tx, tenant, cp.ProcessID, approver, cp.Patch, applyMode{requestedBy: cp.RequestedBy, approved: true})
	return err
}

// applyMode says how applyTx treats a widening change.
type applyMode struct {
	// fourEyes: widening changes wait for a second person unless the patch
	// carries a break-glass reason.
	fourEyes bool
	// approved: a second person approved the change requestedBy asked for.
	approved    bool
	requestedBy string
}

// applyTx applies p at the level of processID ("" for the workspace) on
// behalf of actor in tx, or, when it widens automation under four-eyes,
// queues it and returns the change.
func (s *Service) applyTx(tx store.Txn, tenant, processID, actor string, p Patch, mode applyMode) (*foureyes.Change, error) {
	now := s.now()
	ws, proc, err := load(tx, tenant, processID)
	if err != nil {
		return nil, err
	}
	if ws == nil {
		ws = &Level{ID: workspaceID}
	}
	if processID != "" && proc == nil {
		proc = &Level{ID: processID}
	}
	target := ws
	if processID != "" {
		target = proc
	}
	before := resolve(ws, proc, now)
	next := target.clone()
	next.apply(p, now, actor)
	if processID != "" {
		proc = next
	} else {
		ws = next
	}
	after := resolve(ws, proc, now)
	if pct, ok := p.Percent.Value(); ok && pct > after.maxPercent {
		return nil, errs.Invalidf([]any{"percent"}, "value_error", "must not exceed max_percent (%d)", after.maxPercent)
	}
	if next.Percent != nil && *next.Percent > after.maxPercent {
		// A lower max_percent pulls the level's own percent down with it.
		next.Percent = ptr(after.maxPercent)
		after = resolve(ws, proc, now)
	}
	breakGlass, _ := p.BreakGlassReason.Value()
	breakGlass = strings.TrimSpace(breakGlass)
	widens := widening(before, after)
	if len(widens) > 0 && mode.fourEyes && breakGlass == "" {
		summary := fmt.Sprintf("Automation of %s: %s", scopeName(processID), strings.Join(widens, "; "))
		return s.changes.ProposeChangeTx(tx, tenant, ChangeKind, actor, summary,
			changePayload{ProcessID: processID, Patch: p, RequestedBy: actor})
	}
	if processID != "" && (before.percent != after.percent || before.paused != after.paused) {
		seq, err := decisions.LastSeq(tx, tenant, decisions.ProcessScope(processID))
		if err != nil {
			return nil, err
		}
		next.RampFrom, next.RollbackFrom = seq, seq
	}
	next.UpdatedAt, next.UpdatedBy = &now, actor
	if err := levels.Put(tx, tenant, next); err != nil {
		return nil, err
	}
	entry := audit.Entry{
		At: now, Actor: actor, Action: "automation.updated", Entity: "automation", EntityID: target.ID,
		Before: audit.Marshal(target), After: audit.Marshal(next), Reason: breakGlass,
	}
	switch {
	case mode.approved:
		entry.Action, entry.Reason = "automation.change_approved", "requested by "+mode.requestedBy
	case len(widens) > 0 && mode.fourEyes:
		entry.Action = "automation.break_glass"
	}
	return nil, audit.Write(tx, tenant, &s.ids, entry)
}

func scopeName(processID string) string {
	if processID == "" {
		return "the workspace"
	}
	return "process " + processID
}
