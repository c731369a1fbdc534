package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// ChangeKindUpdate is the kind of the widening-change queue's entries that
// hold a process update waiting for a second person.
const ChangeKindUpdate = "process.update"

// ChangeQueue is the widening-change queue (the workspace's access app):
// whether a tenant has four-eyes on, and queueing a change for a second
// person. Approving a change of ChangeKindUpdate must call ApplyChangeTx.
type ChangeQueue interface {
	// FourEyes reports whether tenant's widening changes wait for a second
	// person.
	FourEyes(ctx context.Context, tenant string) (bool, error)
	// ProposeChangeTx queues a change inside tx and returns its id.
	ProposeChangeTx(tx store.Txn, tenant, kind, requester, summary string, payload any) (string, error)
}

// ProposedChange is an update waiting for a second person: it applies
// when someone else approves the change in the change queue.
type ProposedChange struct {
	// ID is the change's id in the queue.
	ID string
	// Summary says in a line what approving it does.
	Summary string
}

// Config configures NewService.
type Config struct {
	// Store is where definitions and versions live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// StepTypes are the step types definitions may use. Defaults to
	// process.BuiltinStepRegistry(); give the run engine the same.
	StepTypes *StepRegistry
	// Access is the four-eyes queue. Defaults to none: widening changes
	// then apply at once, as with four-eyes off. Register ApplyChangeTx for
	// ChangeKindUpdate with the queue.
	Access ChangeQueue
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.StepTypes == nil {
		c.StepTypes = builtin()
	}
	return c
}

// ChangeHook is called in the transaction of every create, update (that
// changes something), archive and applied change of a process, with the
// definition before (nil on create) and after (Archived on archive). An
// error aborts the change. It must have no outside effects: the
// transaction may run again on a conflict.
type ChangeHook func(tx store.Txn, tenant string, old, new *Definition) error

// Service keeps process definitions and their immutable versions. It is
// safe for concurrent use.
type Service struct {
	st     store.Store
	clock  clock.Clock
	log    *slog.Logger
	access ChangeQueue
	types  *StepRegistry

	mu    sync.RWMutex
	hooks []ChangeHook

	// loaded keeps the last decoded definition of each process with its
	// stored bytes (tenant+"/"+id to *loadedDef), so Load decodes only
	// when the bytes changed.
	loaded sync.Map

	ids ids.Generator // makes the ids of the records and audit entries it writes
}

type loadedDef struct {
	raw []byte
	def *Definition
}

// NewService returns the process service.
func NewService(cfg Config) *Service {
	cfg = cfg.withDefaults()
	return &Service{st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, access: cfg.Access, types: cfg.StepTypes}
}

// OnChange registers fn to run in the transaction of every create, update,
// archive and applied change (see ChangeHook). Register hooks when the
// workspace opens.
func (s *Service) OnChange(fn ChangeHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, fn)
}

func (s *Service) runHooks(tx store.Txn, tenant string, old, new *Definition) error {
	s.mu.RLock()
	hooks := slices.Clone(s.hooks)
	s.mu.RUnlock()
	for _, h := range hooks {
		if err := h(tx, tenant, old, new); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

// Definition states, as kept in the indexes.
const (
	stateEnabled  = "enabled"
	stateDisabled = "disabled"
	stateArchived = "archived"
)

func stateOf(d *Definition) string {
	switch {
	case d.Archived:
		return stateArchived
	case d.Enabled:
		return stateEnabled
	}
	return stateDisabled
}

var definitions = &store.Collection[Definition]{
	Name:     "proc",
	ID:       func(d *Definition) string { return d.ID },
	NotFound: "process not found",
	Indexes: []store.Index[Definition]{
		{Name: "state", Values: func(d *Definition) [][]any { return [][]any{{stateOf(d)}} }},
		{Name: "live", Values: func(d *Definition) [][]any {
			if d.Archived {
				return nil
			}
			return [][]any{{}}
		}},
		{Name: "function", Values: func(d *Definition) [][]any {
			if d.Archived {
				return nil
			}
			return [][]any{{d.Function}}
		}},
		{Name: "function_state", Values: func(d *Definition) [][]any { return [][]any{{d.Function, stateOf(d)}} }},
		{Name: "event", Values: func(d *Definition) [][]any {
			if d.Archived || !d.Enabled || d.Trigger.Type != TriggerEvent {
				return nil
			}
			return [][]any{{d.Trigger.Event}}
		}},
	},
}

func versionID(process string, n int) string { return fmt.Sprintf("%s/%d", process, n) }

var versions = &store.Collection[Version]{
	Name:     "proc-version",
	ID:       func(v *Version) string { return versionID(v.ProcessID, v.Version) },
	NotFound: "process version not found",
	Indexes: []store.Index[Version]{
		{Name: "process", Values: func(v *Version) [][]any { return [][]any{{v.ProcessID, v.Version}} }},
	},
}

// Create validates in (every violation at once, errs.Invalid) and creates
// the process with version 1, audited as actor.
func (s *Service) Create(ctx context.Context, tenant, actor string, in ProcessIn) (*Definition, error) {
	var d *Definition
	err := s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		d, err = s.CreateTx(tx, tenant, actor, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// CreateTx is Create inside the caller's transaction, so several processes
// (a template installation) are created all or none. in is validated
// again.
func (s *Service) CreateTx(tx store.Txn, tenant, actor string, in ProcessIn) (*Definition, error) {
	if err := validateIn(in, s.types); err != nil {
		return nil, err
	}
	now := s.now()
	d := &Definition{
		ID:          s.ids.New("prc", now),
		Name:        in.Name,
		Description: in.Description,
		Function:    in.Function,
		Trigger:     normTrigger(in.Trigger),
		Steps:       normSteps(in.Steps),
		Enabled:     in.Enabled == nil || *in.Enabled,
		Search:      normSearch(in.Search),
		Version:     1,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	if in.TemplateID != "" {
		t := in.TemplateID
		d.TemplateID = &t
	}
	if err := definitions.Put(tx, tenant, d); err != nil {
		return nil, err
	}
	if err := versions.Put(tx, tenant, versionOf(d, actor, now)); err != nil {
		return nil, err
	}
	if err := audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "process.create",
		Entity: "process", EntityID: d.ID, After: audit.Marshal(d)}); err != nil {
		return nil, err
	}
	if err := s.runHooks(tx, tenant, nil, d); err != nil {
		return nil, err
	}
	return d, nil
}

func versionOf(d *Definition, actor string, now time.Time) *Version {
	return &Version{ProcessID: d.ID, Name: d.Name, Function: d.Function, Version: d.Version,
		Trigger: d.Trigger, Steps: d.Steps, Search: d.Search, CreatedAt: now, CreatedBy: actor}
}

// normSearch stores no declared search fields as nil.
func normSearch(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// normTrigger stores a trigger in one form: compact filter JSON (none when
// empty or null), UTC for a schedule without a timezone.
func normTrigger(t Trigger) Trigger {
	t.Filter = compact(t.Filter, false)
	if t.Type == TriggerSchedule && t.Timezone == "" {
		t.Timezone = "UTC"
	}
	t.Cron = strings.TrimSpace(t.Cron)
	return t
}

// normSteps copies steps with compact config JSON ({} when none).
func normSteps(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i, st := range steps {
		st.Config = compact(st.Config, true)
		st.Controls.AllowedTools = slices.Clone(st.Controls.AllowedTools)
		out[i] = st
	}
	return out
}

func compact(raw json.RawMessage, object bool) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		if object {
			return json.RawMessage("{}")
		}
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return slices.Clone(t)
	}
	return b.Bytes()
}

// Get returns the tenant's process id, archived or not. Another tenant's
// id is errs.NotFound.
func (s *Service) Get(ctx context.Context, tenant, id string) (*Definition, error) {
	var d *Definition
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		d, err = definitions.Get(r, tenant, id)
		return err
	})
	return d, err
}

// Check returns errs.NotFound ("process not found") unless the process
// exists in tenant; it reads no more than the key.
func (s *Service) Check(ctx context.Context, tenant, id string) error {
	return s.st.View(ctx, func(r store.Reader) error {
		ok, err := definitions.Exists(r, tenant, id)
		if err == nil && !ok {
			return errs.NotFoundf("process not found")
		}
		return err
	})
}

// Load is Get inside a transaction, for readers on a hot path (every run
// start): the definition returned is shared by every Load of the same
// stored bytes and must not be modified.
func (s *Service) Load(r store.Reader, tenant, id string) (*Definition, error) {
	raw, err := definitions.GetRaw(r, tenant, id)
	if err != nil {
		return nil, err
	}
	k := tenant + "/" + id
	if v, ok := s.loaded.Load(k); ok {
		if l := v.(*loadedDef); bytes.Equal(l.raw, raw) {
			return l.def, nil
		}
	}
	def := new(Definition)
	if err := json.Unmarshal(raw, def); err != nil {
		return nil, errors.Wrapf(err, "decode process %s", id)
	}
	s.loaded.Store(k, &loadedDef{raw: raw, def: def})
	return def, nil
}

// Query narrows List.
type Query struct {
	// Enabled, when set, keeps processes that are (or are not) enabled.
	Enabled *bool
	// Archived lists the archived processes instead of the others
	// (Enabled is then ignored: archived processes start no runs).
	Archived bool
	// Function keeps processes of this function.
	Function string
}

// List returns one page of the tenant's processes matching q, newest first,
// and the cursor of the next page ("" at the end). Every filter is served
// from an index.
func (s *Service) List(ctx context.Context, tenant string, q Query, p store.Page) ([]*Definition, string, error) {
	index, values := "live", []any{}
	state := ""
	switch {
	case q.Archived:
		state = stateArchived
	case q.Enabled != nil && *q.Enabled:
		state = stateEnabled
	case q.Enabled != nil:
		state = stateDisabled
	}
	switch {
	case q.Function != "" && state != "":
		index, values = "function_state", []any{q.Function, state}
	case q.Function != "":
		index, values = "function", []any{q.Function}
	case state != "":
		index, values = "state", []any{state}
	}
	var (
		out  []*Definition
		next string
	)
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		out, next, err = definitions.ListBy(r, tenant, index, values, p)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// Update applies patch to the tenant's process id for actor (every
// violation at once, errs.Invalid). A change to the steps or the trigger
// makes a new version; name, description, function and enabled do not. A
// patch that changes nothing writes nothing.
//
// When the new steps loosen a control (Widening) and the tenant has
// four-eyes on, nothing is applied: the patch is queued as a change for a
// second person and returned; approving it in the change queue applies it
// (if the process has not moved to another version meanwhile). Otherwise
// the updated process is returned. Exactly one of the two results is set.
// An archived process is errs.Conflict. A patch of the steps or the search
// fields after which a search field reads a step the process does not have
// is errs.Invalid at ["search",name]; a patch of the steps alone
// leaves a field the process held already reading none as it was.
func (s *Service) Update(ctx context.Context, tenant, actor, id string, patch ProcessPatch) (*Definition, *ProposedChange, error) {
	if err := validatePatch(patch, s.types); err != nil {
		return nil, nil, err
	}
	fourEyes := false
	if patch.Steps != nil {
		on, err := s.fourEyes(ctx, tenant)
		if err != nil {
			return nil, nil, err
		}
		fourEyes = on
	}
	var (
		out    *Definition
		change *ProposedChange
	)
	err := s.st.Update(ctx, func(tx store.Txn) error {
		out, change = nil, nil
		cur, err := definitions.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if cur.Archived {
			return errs.Conflictf("process is archived")
		}
		next := applyPatch(cur, patch)
		if patch.Search != nil || patch.Steps != nil {
			// The search fields and the steps of the result, one of
			// them the process's own: a field must read a step it has.
			var v, was violations
			checkSearchSteps(&v, next.Search, next.Steps)
			if patch.Search == nil {
				// The process's own fields: one that read no step before
				// (stored before they were checked) is left as it was.
				checkSearchSteps(&was, cur.Search, cur.Steps)
				v.vs = slices.DeleteFunc(v.vs, func(x errs.Violation) bool {
					return slices.ContainsFunc(was.vs, func(y errs.Violation) bool { return slices.Equal(x.Loc, y.Loc) })
				})
			}
			if len(v.vs) > 0 {
				return errs.Validation(v.vs...)
			}
		}
		reasons := Widening(cur.Steps, next.Steps)
		if len(reasons) > 0 && fourEyes {
			payload := changePayload{ProcessID: id, BaseVersion: cur.Version, Patch: patch, RequestedBy: actor, Reasons: reasons}
			summary := fmt.Sprintf("Update process %q (%s): %s", cur.Name, id, strings.Join(reasons, "; "))
			changeID, err := s.access.ProposeChangeTx(tx, tenant, ChangeKindUpdate, actor, summary, payload)
			if err != nil {
				return err
			}
			change = &ProposedChange{ID: changeID, Summary: summary}
			return nil
		}
		out, err = s.write(tx, tenant, cur, next, actor, actor, strings.Join(reasons, "; "))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, change, nil
}

// fourEyes reports whether tenant's widening changes wait for a second
// person: off without a queue, and for a workspace the queue does not know.
func (s *Service) fourEyes(ctx context.Context, tenant string) (bool, error) {
	if s.access == nil {
		return false, nil
	}
	on, err := s.access.FourEyes(ctx, tenant)
	switch {
	case err == nil:
		return on, nil
	case errors.Is(err, errs.NotFound):
		return false, nil
	}
	return false, errors.Wrap(err, "read the four-eyes setting")
}

// changePayload is what a queued update carries to its approval.
type changePayload struct {
	ProcessID   string       `json:"process_id"`
	BaseVersion int          `json:"base_version"`
	Patch       ProcessPatch `json:"patch"`
	RequestedBy string       `json:"requested_by"`
	Reasons     []string     `json:"reasons"`
}

// ApplyChangeTx applies an approved process.update change
// (ChangeKindUpdate), in the transaction that marks it approved: it is the
// four-eyes queue's apply function for the kind. A patch that no longer
// passes the checks (a step type gone since it was queued) is ErrInvalid
// located at the patch's field names (["steps", 0, "type"]); the HTTP
// approval answers them so, not under "body", as the approval's body holds
// no process.
func (s *Service) ApplyChangeTx(_ context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	var p changePayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return errors.Wrap(err, "decode a process change")
	}
	cur, err := definitions.Get(tx, tenant, p.ProcessID)
	if err != nil {
		return err
	}
	if cur.Archived {
		return errs.Conflictf("process is archived: reject this change")
	}
	if cur.Version != p.BaseVersion {
		return errs.Conflictf("process changed since this change was proposed (version %d, now %d): reject it and propose it again",
			p.BaseVersion, cur.Version)
	}
	if err := validatePatch(p.Patch, s.types); err != nil {
		return err
	}
	reason := fmt.Sprintf("widening change requested by %s, approved by %s: %s", p.RequestedBy, approver,
		strings.Join(p.Reasons, "; "))
	_, err = s.write(tx, tenant, cur, applyPatch(cur, p.Patch), p.RequestedBy, approver, reason)
	return err
}

// applyPatch returns cur with patch applied (not yet versioned).
func applyPatch(cur *Definition, p ProcessPatch) *Definition {
	next := *cur
	next.Steps = normSteps(cur.Steps)
	if p.Name != nil {
		next.Name = *p.Name
	}
	if p.Description != nil {
		next.Description = *p.Description
	}
	if p.Function != nil {
		next.Function = *p.Function
	}
	if p.Enabled != nil {
		next.Enabled = *p.Enabled
	}
	if p.Trigger != nil {
		next.Trigger = normTrigger(*p.Trigger)
	}
	if p.Steps != nil {
		next.Steps = normSteps(p.Steps)
	}
	if p.Search != nil {
		next.Search = normSearch(p.Search)
	}
	return &next
}

// write stores next in place of cur when it differs: a new version when the
// steps or the trigger changed (authored by author), the audit entry by
// actor, and the hooks. It returns the stored definition (cur when nothing
// changed).
func (s *Service) write(tx store.Txn, tenant string, cur, next *Definition, author, actor, reason string) (*Definition, error) {
	versioned := !sameJSON(cur.Steps, next.Steps) || !sameJSON(cur.Trigger, next.Trigger) || !sameJSON(cur.Search, next.Search)
	if !versioned && sameJSON(cur, next) {
		return cur, nil
	}
	now := s.now()
	next.UpdatedAt = now
	if versioned {
		next.Version = cur.Version + 1
		if err := versions.Put(tx, tenant, versionOf(next, author, now)); err != nil {
			return nil, err
		}
	}
	if err := definitions.Put(tx, tenant, next); err != nil {
		return nil, err
	}
	if err := audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "process.update", Entity: "process",
		EntityID: next.ID, Before: audit.Marshal(cur), After: audit.Marshal(next), Reason: reason}); err != nil {
		return nil, err
	}
	return next, s.runHooks(tx, tenant, cur, next)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Archive archives the tenant's process id for actor: triggers start no new
// runs, runs in flight finish on their version, and the definition and its
// versions stay readable. Archiving an archived (or missing) process is
// errs.NotFound.
func (s *Service) Archive(ctx context.Context, tenant, actor, id string) error {
	return s.st.Update(ctx, func(tx store.Txn) error {
		cur, err := definitions.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if cur.Archived {
			return errs.NotFoundf("process not found")
		}
		next := *cur
		next.Archived = true
		next.UpdatedAt = s.now()
		if err := definitions.Put(tx, tenant, &next); err != nil {
			return err
		}
		if err := audit.Write(tx, tenant, &s.ids, audit.Entry{At: next.UpdatedAt, Actor: actor, Action: "process.archive",
			Entity: "process", EntityID: id, Before: audit.Marshal(cur), After: audit.Marshal(&next)}); err != nil {
			return err
		}
		return s.runHooks(tx, tenant, cur, &next)
	})
}

// Versions returns one page of the versions of the tenant's process id,
// oldest first, and the next cursor.
func (s *Service) Versions(ctx context.Context, tenant, id string, p store.Page) ([]*Version, string, error) {
	p.Forward = true
	var (
		out  []*Version
		next string
	)
	err := s.st.View(ctx, func(r store.Reader) error {
		if _, err := definitions.Get(r, tenant, id); err != nil {
			return err
		}
		var err error
		out, next, err = versions.ListBy(r, tenant, "process", []any{id}, p)
		return err
	})
	return out, next, err
}

// GetVersion returns version n of the tenant's process id.
func (s *Service) GetVersion(r store.Reader, tenant, id string, n int) (*Version, error) {
	return versions.Get(r, tenant, versionID(id, n))
}

// ByEvent returns the tenant's enabled, unarchived processes triggered by
// event, from an index of event triggers.
func (s *Service) ByEvent(r store.Reader, tenant, event string) ([]*Definition, error) {
	var out []*Definition
	err := definitions.IDsBy(r, tenant, "event", []any{event}, func(id string) error {
		d, err := definitions.Get(r, tenant, id)
		if err != nil {
			return errors.Wrapf(err, "event index names process %s", id)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// Listens reports whether an enabled, unarchived process of the tenant is
// started by event (an event trigger), from the index of event triggers.
func (s *Service) Listens(ctx context.Context, tenant, event string) (bool, error) {
	found := false
	err := s.st.View(ctx, func(r store.Reader) error {
		return definitions.IDsBy(r, tenant, "event", []any{event}, func(string) error {
			found = true
			return store.ErrStop
		})
	})
	return found, err
}

// Needed returns the capabilities the tenant's enabled, unarchived
// processes call (see StepType.Needs), sorted and without repeats.
func (s *Service) Needed(ctx context.Context, tenant string) ([]string, error) {
	var out []string
	err := s.st.View(ctx, func(r store.Reader) error {
		return definitions.IDsBy(r, tenant, "state", []any{stateEnabled}, func(id string) error {
			d, err := definitions.Get(r, tenant, id)
			if err != nil {
				return err
			}
			out = append(out, s.types.Needs(d.Steps)...)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
