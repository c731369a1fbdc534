package automation

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/batch"
	"github.com/bas-platform/bas/internal/binrec"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

var _ runengine.Gate = (*Service)(nil)

// Gate returns s as the run engine's autonomy gate.
func (s *Service) Gate() runengine.Gate { return s }

// JoinsCallWrites reports whether the gate hands its answers to the commit
// of the call's result when the call's Writes Joins (see gateMemo): unless
// Config.Shared. The run engine may then ask it, and make such a call,
// before the run's first commit is durable.
func (s *Service) JoinsCallWrites(callwrites.Mark) bool { return s.memo != nil }

// decisionRecord is the gate's answer for one item, kept so that a retry of
// the item gets the same answer and is counted once. It is stored in a
// binary form (see decisionV2); the JSON tags are the form records were
// stored in before, which are still read.
type decisionRecord struct {
	ItemKey    string    `json:"item_key"`
	ProcessID  string    `json:"process_id"`
	RunID      string    `json:"run_id"`
	StepKey    string    `json:"step_key"`
	Capability string    `json:"capability"`
	Auto       bool      `json:"auto"`
	Reason     string    `json:"reason"`
	Sample     bool      `json:"sample"`
	Percent    int       `json:"percent"`
	At         time.Time `json:"at"`
}

var gateDecisions = &store.Collection[decisionRecord]{
	Name:   "gatedecision",
	ID:     func(d *decisionRecord) string { return decisionID(d.ProcessID, d.ItemKey) },
	Decode: decodeDecision,
}

func decisionID(processID, itemKey string) string { return processID + "|" + itemKey }

// dayCount counts automatic actions in one UTC day: of the workspace (id
// "2006-01-02") or of one process ("2006-01-02|<process id>").
type dayCount struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
	// kept is the day's count the run engine keeps in its commits (see
	// keptCountKey), read with the record and never written by it.
	kept int
}

var dayCounts = &store.Collection[dayCount]{
	Name: "autoday",
	ID:   func(d *dayCount) string { return d.ID },
}

func dayID(now time.Time, processID string) string {
	d := now.UTC().Format(time.DateOnly)
	if processID == "" {
		return d
	}
	return d + "|" + processID
}

// getCount returns the day count of processID ("": the workspace) on
// now's day: the record (zero when none was written) and the count kept
// in the run engine's commits.
func getCount(r store.Reader, tenant, processID string, now time.Time) (*dayCount, error) {
	id := dayID(now, processID)
	c, err := dayCounts.Get(r, tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		c, err = &dayCount{ID: id}, nil
	}
	if err != nil {
		return nil, err
	}
	raw, err := r.Get(keptCountKey(tenant, now, processID))
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	case len(raw) != 8:
		return nil, errors.Newf("automation: the day count %s has %d bytes", id, len(raw))
	default:
		c.kept = int(binary.BigEndian.Uint64(raw))
	}
	return c, nil
}

// keptCountKey is the key of the day count of processID ("": the workspace)
// that the run engine keeps in the commits of the steps the gate let run
// (an 8-byte big-endian value, see callwrites.Count). Counts of decisions
// that commit on their own (on a cluster) are in the dayCounts record: a
// day's count is the sum of both.
func keptCountKey(tenant string, now time.Time, processID string) []byte {
	k := store.Key(tenant, "count", "autoday")
	if processID == "" {
		return store.AppendKey(k, now.UTC().Format(time.DateOnly))
	}
	return store.AppendKey(store.Key(tenant, "count", "autoday-process"), now.UTC().Format(time.DateOnly), processID)
}

// countToday returns today's automatic actions of the workspace
// (processID "") or of one process.
func countToday(r store.Reader, tenant, processID string, now time.Time) (int, error) {
	c, err := getCount(r, tenant, processID, now)
	if err != nil {
		return 0, err
	}
	return c.Count + c.kept, nil
}

// Bucket returns the item's bucket in [0, 100): the first 8 bytes of
// SHA-256(salt + NUL + key), big-endian, modulo 100. An item runs without a
// person when Bucket("auto", key) is below the percent in force, and is
// sampled for review when Bucket("sample", key) is below sample_percent, so
// the same item always gets the same answer.
func Bucket(salt, key string) int {
	var buf [128]byte
	b := append(append(append(buf[:0], salt...), 0), key...)
	sum := sha256.Sum256(b)
	return int(binary.BigEndian.Uint64(sum[:8]) % 100)
}

// Decide answers whether one action runs without a person. In order: a
// paused process (or workspace) is supervised; an item whose bucket is not
// below the percent in force (the exception's while it lasts) is
// supervised; an automatic action over a daily limit (the workspace's over
// all its automatic actions, a process's own over the process's) is
// supervised; otherwise it is automatic, counted against today's limits,
// and sampled for an after-the-fact review at sample_percent. The answer is
// stored under the item key: a retry gets the same answer and is counted
// once (a New item, which has none, is not looked up). Amount caps and
// require_approval are checked by the engine before and always win.
//
// Unless Config.Shared, the answer and its counts are handed to the
// commit of the call's result when ctx carries a callwrites.Writes that
// Joins (see gateMemo); otherwise they commit before Decide returns.
func (s *Service) Decide(ctx context.Context, req runengine.GateRequest) (runengine.GateDecision, error) {
	key := req.ItemKey
	if key == "" && req.RunID != "" {
		key = req.RunID + "/" + req.StepKey
	}
	if req.Tenant == "" || req.ProcessID == "" || key == "" {
		return runengine.GateDecision{}, errors.New("automation: a gate request needs a tenant, a process and an item key")
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(req.Tenant))
	d := &s.deciders[h.Sum32()%uint32(len(s.deciders))]
	p := &pendingDecision{req: req, key: key}
	if w := callwrites.From(ctx); s.memo != nil && w != nil && w.Joins {
		p.writes = w
	}
	d.Do(p, func(batch []*pendingDecision) { s.decideBatch(context.WithoutCancel(ctx), batch) })
	return p.out, p.err
}

// decider batches the decisions of the tenants of one stripe.
type decider = batch.Leader[*pendingDecision]

// pendingDecision is one Decide call, with its answer.
type pendingDecision struct {
	req runengine.GateRequest
	key string
	// writes, when the gate decides from memory (Service.memo), are where
	// the decision's record and counts go to commit with the step that
	// takes it; nil: the decision commits on its own.
	writes *callwrites.Writes
	out    runengine.GateDecision
	err    error
}

// decideBatch decides batch in one transaction and answers each decision.
func (s *Service) decideBatch(ctx context.Context, batch []*pendingDecision) {
	if s.memo != nil {
		s.decideMemo(ctx, batch)
		return
	}
	err := s.st.Update(ctx, func(tx store.Txn) error {
		b := &gateBatch{now: s.now()}
		for _, p := range batch {
			out, err := s.decideIn(tx, b, p.req, p.key)
			if err != nil {
				return err
			}
			p.out = out
		}
		return b.flush(tx)
	})
	if err != nil {
		for _, p := range batch {
			p.out, p.err = runengine.GateDecision{}, err
		}
	}
}

// decideIn decides one item inside tx: the answer stored under its key, or
// a new one, stored (at once for a New item).
func (s *Service) decideIn(tx store.Txn, b *gateBatch, req runengine.GateRequest, key string) (runengine.GateDecision, error) {
	if !req.New { // a new item has no stored answer (see GateRequest.New)
		prev, err := gateDecisions.Get(tx, req.Tenant, decisionID(req.ProcessID, key))
		if err == nil {
			return runengine.GateDecision{Auto: prev.Auto, Reason: prev.Reason, Sample: prev.Sample}, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return runengine.GateDecision{}, err
		}
	}
	now := b.now
	e, err := b.effective(tx, s, req.Tenant, req.ProcessID)
	if err != nil {
		return runengine.GateDecision{}, err
	}
	rec := &decisionRecord{
		ItemKey: key, ProcessID: req.ProcessID, RunID: req.RunID, StepKey: req.StepKey,
		Capability: req.Capability, Percent: e.current(), At: now,
	}
	if err := s.decide(tx, b, req.Tenant, key, e, rec); err != nil {
		return runengine.GateDecision{}, err
	}
	return runengine.GateDecision{Auto: rec.Auto, Reason: rec.Reason, Sample: rec.Sample},
		gateDecisions.PutRaw(tx, req.Tenant, rec, rec.encode())
}

// A decision is stored in a binary form: the version byte decisionV2, the
// flags (decisionAuto, decisionSample), the percent (a zigzag varint), the
// time (Unix nanoseconds, 8 bytes big-endian), then the run id, the step
// key, the capability and the reason, each its length (a uvarint) then its
// bytes. Its process and item are in its key only (decisionID), and a
// record read back has neither. An email.send decision of a run's step so
// takes about 130 bytes, where its JSON took about 340. Records stored
// before are JSON, which starts with '{'.
const (
	decisionV2     = 2
	decisionAuto   = 1
	decisionSample = 2
)

var errMalformedDecision = errors.New("automation: malformed gate decision record")

// encode returns d's record bytes (see decisionV2).
func (d *decisionRecord) encode() []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64+8+4*binary.MaxVarintLen32+len(d.RunID)+len(d.StepKey)+
		len(d.Capability)+len(d.Reason))
	var flags byte
	if d.Auto {
		flags |= decisionAuto
	}
	if d.Sample {
		flags |= decisionSample
	}
	b = append(b, decisionV2, flags)
	b = binary.AppendVarint(b, int64(d.Percent))
	b = binary.BigEndian.AppendUint64(b, uint64(d.At.UnixNano()))
	for _, s := range [...]string{d.RunID, d.StepKey, d.Capability, d.Reason} {
		b = binrec.AppendString(b, s)
	}
	return b
}

// decodeDecision decodes a stored decision, of either form.
func decodeDecision(raw []byte) (*decisionRecord, error) {
	d := new(decisionRecord)
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, d); err != nil {
			return nil, errors.Wrap(err, "automation: decode a gate decision")
		}
		return d, nil
	}
	if len(raw) < 2 || raw[0] != decisionV2 || raw[1]&^(decisionAuto|decisionSample) != 0 {
		return nil, errMalformedDecision
	}
	d.Auto, d.Sample = raw[1]&decisionAuto != 0, raw[1]&decisionSample != 0
	r := binrec.New(raw[2:])
	percent := r.Varint()
	d.Percent = int(percent)
	d.At = time.Unix(0, int64(r.Uint64())).UTC()
	for _, s := range [...]*string{&d.RunID, &d.StepKey, &d.Capability, &d.Reason} {
		*s = r.String()
	}
	if !r.Done() || percent != int64(d.Percent) {
		return nil, errMalformedDecision
	}
	return d, nil
}

// decide fills rec's answer and counts an automatic action.
func (s *Service) decide(tx store.Txn, b *gateBatch, tenant, key string, e effective, rec *decisionRecord) error {
	if !levelAllows(e, key, rec) {
		return nil
	}
	wsCount, err := b.count(tx, tenant, "")
	if err != nil {
		return err
	}
	procCount, err := b.count(tx, tenant, rec.ProcessID)
	if err != nil {
		return err
	}
	if limitReached(e, wsCount.Count+wsCount.kept, procCount.Count+procCount.kept, rec) {
		return nil
	}
	wsCount.Count++
	procCount.Count++
	b.dirty(tenant, wsCount)
	b.dirty(tenant, procCount)
	markAuto(e, key, rec)
	return nil
}

// levelAllows reports whether the level in force lets the item run
// without a person (daily limits aside); when not, it fills rec's reason.
func levelAllows(e effective, key string, rec *decisionRecord) bool {
	cur := e.current()
	switch {
	case e.paused:
		rec.Reason = "supervised: automation is paused"
		if e.pausedReason != nil && *e.pausedReason != "" {
			rec.Reason += ": " + *e.pausedReason
		}
		return false
	case cur == 0:
		rec.Reason = "supervised: automation is at 0%"
		return false
	case Bucket("auto", key) >= cur:
		rec.Reason = fmt.Sprintf("supervised: the item is outside the %d%% that run without a person", cur)
		return false
	}
	return true
}

// limitReached reports whether a daily limit is reached with ws automatic
// actions of the workspace today and proc of the process; when so, it
// fills rec's reason.
func limitReached(e effective, ws, proc int, rec *decisionRecord) bool {
	switch {
	case e.wsLimit != nil && ws >= *e.wsLimit:
		rec.Reason = fmt.Sprintf("supervised: the workspace's daily limit of %d automatic actions is reached", *e.wsLimit)
		return true
	case e.procLimit != nil && proc >= *e.procLimit:
		rec.Reason = fmt.Sprintf("supervised: the process's daily limit of %d automatic actions is reached", *e.procLimit)
		return true
	}
	return false
}

// markAuto fills rec's answer for an automatic action.
func markAuto(e effective, key string, rec *decisionRecord) {
	rec.Auto = true
	rec.Sample = Bucket("sample", key) < e.samplePercent
	rec.Reason = fmt.Sprintf("automatic: the item is inside the %d%% that run without a person", e.current())
	if e.exception != nil {
		rec.Reason += fmt.Sprintf(" (exception until %s: %s)", e.exception.Until.Format(time.RFC3339), e.exception.Reason)
	}
}

// gateBatch is what one batch of decisions (one transaction) reads once
// and shares: the instant it decides at, the effective level of each
// process (its exceptions lapsed at that instant), and the day counters,
// counted in memory and written once, by flush, before the batch commits.
type gateBatch struct {
	now     time.Time
	levels  map[string]effective   // tenant \x00 process id
	counts  map[countKey]*dayCount // by tenant and process ("": the workspace)
	changed []tenantCount          // counters to write, in first-change order
}

type tenantCount struct {
	tenant string
	c      *dayCount
}

// effective returns the resolved level of processID, loading (and
// lapsing) it on the batch's first decision of the process.
func (b *gateBatch) effective(tx store.Txn, s *Service, tenant, processID string) (effective, error) {
	k := tenant + "\x00" + processID
	if e, ok := b.levels[k]; ok {
		return e, nil
	}
	// No level cache to keep from the lapse's write: a batch decides here
	// only when the gate does not decide from memory (Config.Shared).
	ws, proc, err := s.loadLapsing(tx, tenant, processID, b.now, &levelWrite{})
	if err != nil {
		return effective{}, err
	}
	e := resolveLevels(ws, proc, processID, b.now)
	if b.levels == nil {
		b.levels = map[string]effective{}
	}
	b.levels[k] = e
	return e, nil
}

// count returns tenant's counter of the batch's day, of processID (of the
// workspace when ""), as the batch has it.
func (b *gateBatch) count(r store.Reader, tenant, processID string) (*dayCount, error) {
	k := countKey{tenant, processID}
	if c, ok := b.counts[k]; ok {
		return c, nil
	}
	c, err := getCount(r, tenant, processID, b.now)
	if err != nil {
		return nil, err
	}
	if b.counts == nil {
		b.counts = map[countKey]*dayCount{}
	}
	b.counts[k] = c
	return c, nil
}

// countKey names a counter of a gateBatch: a tenant's, of a process or
// (process "") of the workspace.
type countKey struct{ tenant, process string }

// dirty marks c, a counter count returned, to be written by flush.
func (b *gateBatch) dirty(tenant string, c *dayCount) {
	for _, tc := range b.changed {
		if tc.c == c {
			return
		}
	}
	b.changed = append(b.changed, tenantCount{tenant, c})
}

// flush writes the counters the batch changed.
func (b *gateBatch) flush(tx store.Txn) error {
	for _, tc := range b.changed {
		if err := dayCounts.Put(tx, tc.tenant, tc.c); err != nil {
			return err
		}
	}
	return nil
}

// loadLapsing loads the workspace's and the process's levels and removes
// exceptions that have lapsed at now, writing each removal to the audit log
// (actor system); w begins before the first removal is written.
func (s *Service) loadLapsing(tx store.Txn, tenant, processID string, now time.Time, w *levelWrite) (ws, proc *Level, err error) {
	ws, proc, err = load(tx, tenant, processID)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range []*Level{ws, proc} {
		if !lapsed(l, now) {
			continue
		}
		before := l.clone()
		ex := l.Exception
		l.Exception = nil
		l.UpdatedAt, l.UpdatedBy = &now, audit.System
		w.begin()
		if err := levels.Put(tx, tenant, l); err != nil {
			return nil, nil, err
		}
		err := audit.Write(tx, tenant, &s.ids, audit.Entry{
			At: now, Actor: audit.System, Action: "automation.exception_lapsed", Entity: "automation", EntityID: l.ID,
			Before: audit.Marshal(before), After: audit.Marshal(l),
			Reason: fmt.Sprintf("the exception of %d%% (%s) ended at %s", ex.Percent, ex.Reason, ex.Until.Format(time.RFC3339)),
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return ws, proc, nil
}

// Observe records a person's verdict on a proposed action of a process
// (approved unchanged: agreed; rejected or edited: disagreed) in the
// agreement ledger, then rolls the process back or ramps it up when the
// verdicts say so (see rollback and ramp). Only an outcome that writes
// levels (a lapse, a rollback, a ramp) keeps the gate from its levels in
// memory while it commits.
func (s *Service) Observe(ctx context.Context, o runengine.Outcome) error {
	if o.Tenant == "" || o.ProcessID == "" {
		return errors.New("automation: an outcome needs a tenant and a process")
	}
	w := &levelWrite{c: s.lvCache}
	defer w.done()
	return s.st.Update(ctx, func(tx store.Txn) error {
		now := s.now()
		v := &decisions.Verdict{
			Scope: decisions.ProcessScope(o.ProcessID), RuleID: o.StepKey, Agreed: o.Agreed,
			Actor: o.Actor, Ref: o.RunID, At: now,
		}
		if err := decisions.RecordVerdict(tx, o.Tenant, &s.ids, v); err != nil {
			return err
		}
		ws, proc, err := s.loadLapsing(tx, o.Tenant, o.ProcessID, now, w)
		if err != nil {
			return err
		}
		if proc == nil {
			proc = &Level{ID: o.ProcessID}
		}
		e := resolve(ws, proc, now)
		rolled, err := s.rollback(tx, o.Tenant, proc, e, v.Seq, now, w)
		if err != nil || rolled {
			return err
		}
		return s.ramp(tx, o.Tenant, proc, e, v.Seq, now, w)
	})
}
