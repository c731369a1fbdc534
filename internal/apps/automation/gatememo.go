package automation

import (
	"context"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// gateMemo is what the gate keeps in memory when the workspace is its
// store's only writer (Config.Shared unset), so that a decision needs no
// commit of its own: the day counts, and the decisions handed to a run's
// commit (callwrites) that are not settled yet.
//
// A decision the engine asks for with a callwrites.Writes in the context
// that Joins (the call's provider acts only through the call's commit) is
// counted here at once (held), and its record and count increments are
// handed to the commit of the step that takes it. When that commit lands
// the count becomes part of base; when it fails, or the call's result is
// dropped, the count is released. Daily limits compare base+held, so
// concurrent decisions never pass them. A decision is durable only with
// the step's commit: after a crash the engine asks again (nothing acted
// on the lost one), and the counts read back from the store are those of
// the durable decisions.
type gateMemo struct {
	mu     sync.Mutex
	counts map[memoCountKey]*memoCount
	// items are the decisions handed and not settled: asked again
	// meanwhile (a step the run takes again before its commit), an item
	// gets the same answer and is not counted again.
	items map[memoItemKey]runengine.GateDecision
	// day is the day of the latest decision: when it changes, the counts
	// of older days are forgotten.
	day string
	// maxCounts bounds counts (maxMemoCounts; tests set less).
	maxCounts int
}

// maxMemoCounts is how many day counts gateMemo keeps before it forgets
// those with no decision in flight (they are read back from the store
// when next needed).
const maxMemoCounts = 1 << 14

// memoCountKey names a day count: a tenant's, of a process or (process "")
// of the workspace.
type memoCountKey struct{ tenant, day, process string }

// memoItemKey names a decision.
type memoItemKey struct{ tenant, process, item string }

// memoCount is one day count: base is what the store holds (read once,
// then counted on as decisions commit), held the automatic decisions
// handed to commits that have not settled, key the key the run engine
// keeps it at (keptCountKey).
type memoCount struct {
	base, held int
	key        string
}

// newMemoCount returns the day count k of the day of now, base counted
// already.
func newMemoCount(k memoCountKey, base int, now time.Time) *memoCount {
	return &memoCount{base: base, key: string(keptCountKey(k.tenant, now, k.process))}
}

func newGateMemo() *gateMemo {
	return &gateMemo{counts: map[memoCountKey]*memoCount{}, items: map[memoItemKey]runengine.GateDecision{},
		maxCounts: maxMemoCounts}
}

// memoDecision is one decision of decideMemo's batch on its way.
type memoDecision struct {
	p        *pendingDecision
	item     memoItemKey
	ws, proc memoCountKey
	// wsCount and procCount are the counts of an automatic action.
	wsCount, procCount *memoCount
	rec                decisionRecord
	done               bool
}

// levelKey names the levels of a process of a tenant.
type levelKey struct{ tenant, process string }

// decideMemo decides batch from the day counts in memory and hands each
// decision's record and counts to the commit of the step that asked (see
// gateMemo); a decision asked without a callwrites.Writes commits on its
// own, its counts in the dayCounts record.
func (s *Service) decideMemo(ctx context.Context, batch []*pendingDecision) {
	m := s.memo
	now := s.now()
	day := now.Format(time.DateOnly)
	ds := make([]memoDecision, len(batch))
	m.mu.Lock()
	for i, p := range batch {
		d := &ds[i]
		d.p = p
		d.item = memoItemKey{p.req.Tenant, p.req.ProcessID, p.key}
		d.ws, d.proc = memoCountKey{p.req.Tenant, day, ""}, memoCountKey{p.req.Tenant, day, p.req.ProcessID}
		if out, ok := m.items[d.item]; ok {
			p.out, d.done = out, true
		}
	}
	var missing map[memoCountKey]*memoCount
	for i := range ds {
		if d := &ds[i]; !d.done {
			for _, k := range [2]memoCountKey{d.ws, d.proc} {
				if _, ok := m.counts[k]; !ok {
					if missing == nil {
						missing = map[memoCountKey]*memoCount{}
					}
					missing[k] = nil
				}
			}
		}
	}
	m.mu.Unlock()

	levels, err := s.readForMemo(ctx, ds, missing, now)
	if err != nil {
		for i := range ds {
			if !ds[i].done {
				ds[i].p.err = err
			}
		}
		return
	}

	m.mu.Lock()
	if day != m.day {
		m.forget(func(k memoCountKey) bool { return k.day != day })
		m.day = day
	}
	for i := range ds {
		d := &ds[i]
		if d.done {
			continue
		}
		p := d.p
		if out, ok := m.items[d.item]; ok { // asked twice in the batch
			p.out, d.done = out, true
			continue
		}
		e := levels[levelKey{p.req.Tenant, p.req.ProcessID}]
		d.rec = decisionRecord{ItemKey: p.key, ProcessID: p.req.ProcessID, RunID: p.req.RunID, StepKey: p.req.StepKey,
			Capability: p.req.Capability, Percent: e.current(), At: now}
		if levelAllows(e, p.key, &d.rec) {
			ws, err := m.count(ctx, s.st, d.ws, missing, now)
			if err == nil {
				var proc *memoCount
				if proc, err = m.count(ctx, s.st, d.proc, missing, now); err == nil &&
					!limitReached(e, ws.base+ws.held, proc.base+proc.held, &d.rec) {
					ws.held++
					proc.held++
					d.wsCount, d.procCount = ws, proc
					markAuto(e, p.key, &d.rec)
				}
			}
			if err != nil {
				p.err, d.done = err, true
				continue
			}
		}
		p.out = runengine.GateDecision{Auto: d.rec.Auto, Reason: d.rec.Reason, Sample: d.rec.Sample}
		m.items[d.item] = p.out
	}
	if len(m.counts) > m.maxCounts {
		m.forget(func(memoCountKey) bool { return true })
	}
	m.mu.Unlock()

	var own []*memoDecision // asked without a Writes: committed here
	for i := range ds {
		d := &ds[i]
		if d.done {
			continue
		}
		if d.p.writes == nil {
			own = append(own, d)
			continue
		}
		s.hand(d, d.p.writes)
	}
	if len(own) > 0 {
		s.commitOwn(ctx, own, now)
	}
}

// readForMemo reads what the batch's decisions need from the store in one
// read: the stored answers of items asked before (an answer found is
// taken), the levels in force (lapsing the exceptions that ended, in a
// commit of their own) and the day counts missing from memory (into
// missing).
func (s *Service) readForMemo(ctx context.Context, ds []memoDecision, missing map[memoCountKey]*memoCount, now time.Time) (map[levelKey]effective, error) {
	levels := map[levelKey]effective{}
	if s.cachedLevels(ds, missing, levels, now) {
		return levels, nil
	}
	var lapse []levelKey
	gen := s.lvCache.reading()
	err := s.st.View(ctx, func(r store.Reader) error {
		for i := range ds {
			d := &ds[i]
			if d.done {
				continue
			}
			p := d.p
			if !p.req.New { // a new item has no stored answer (see GateRequest.New)
				prev, err := gateDecisions.Get(r, p.req.Tenant, decisionID(p.req.ProcessID, p.key))
				if err == nil {
					p.out, d.done = runengine.GateDecision{Auto: prev.Auto, Reason: prev.Reason, Sample: prev.Sample}, true
					continue
				}
				if !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			lk := levelKey{p.req.Tenant, p.req.ProcessID}
			if _, ok := levels[lk]; ok {
				continue
			}
			ws, proc, err := load(r, lk.tenant, lk.process)
			if err != nil {
				return err
			}
			if lapsed(ws, now) || lapsed(proc, now) {
				lapse = append(lapse, lk)
				levels[lk] = resolveLevels(ws, proc, lk.process, now)
				continue
			}
			l := newStoredLevels(ws, proc, lk.process, now)
			s.lvCache.put(gen, lk, l)
			levels[lk] = l.e
		}
		for k := range missing {
			c, err := getCount(r, k.tenant, k.process, now)
			if err != nil {
				return err
			}
			missing[k] = newMemoCount(k, c.Count+c.kept, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, lk := range lapse {
		w := &levelWrite{c: s.lvCache}
		err := s.st.Update(ctx, func(tx store.Txn) error {
			ws, proc, err := s.loadLapsing(tx, lk.tenant, lk.process, now, w)
			levels[lk] = resolveLevels(ws, proc, lk.process, now)
			return err
		})
		w.done()
		if err != nil {
			return nil, err
		}
	}
	return levels, nil
}

// cachedLevels puts in levels the levels in force of the batch's
// decisions from the level cache, and reports whether that is all the
// batch needs from the store: every decision not done is of a new item
// (no stored answer to look up), no day count is missing, and the levels
// of each are cached with no exception that ended by now (lapsing it
// writes).
func (s *Service) cachedLevels(ds []memoDecision, missing map[memoCountKey]*memoCount, levels map[levelKey]effective, now time.Time) bool {
	if s.lvCache == nil || len(missing) > 0 {
		return false
	}
	for i := range ds {
		d := &ds[i]
		if d.done {
			continue
		}
		if !d.p.req.New {
			return false
		}
		lk := levelKey{d.p.req.Tenant, d.p.req.ProcessID}
		if _, ok := levels[lk]; ok {
			continue
		}
		l, ok := s.lvCache.get(lk)
		if !ok {
			return false
		}
		e, ok := l.at(now)
		if !ok {
			return false
		}
		levels[lk] = e
	}
	return true
}

// lapsed reports whether l has an exception that ended at now.
func lapsed(l *Level, now time.Time) bool {
	return l != nil && l.Exception != nil && !active(l.Exception, now)
}

// resolveLevels is the level in force at now for processID given the
// stored levels (proc nil when the process has none of its own).
func resolveLevels(ws, proc *Level, processID string, now time.Time) effective {
	if proc == nil {
		proc = &Level{ID: processID}
	}
	return resolve(ws, proc, now)
}

// count returns the day count k, taking it from loaded when it is not in
// memory, or reading it when it is in neither (forgotten since the batch
// looked). m.mu is held.
func (m *gateMemo) count(ctx context.Context, st store.Store, k memoCountKey, loaded map[memoCountKey]*memoCount, now time.Time) (*memoCount, error) {
	if c, ok := m.counts[k]; ok {
		return c, nil
	}
	c := loaded[k]
	if c == nil {
		err := st.View(ctx, func(r store.Reader) error {
			dc, err := getCount(r, k.tenant, k.process, now)
			if err == nil {
				c = newMemoCount(k, dc.Count+dc.kept, now)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	delete(loaded, k) // taken: a later decision of the batch finds it in memory
	m.counts[k] = c
	return c, nil
}

// forget drops the day counts that old reports old and that no decision
// in flight holds: what they counted is in the store. m.mu is held.
func (m *gateMemo) forget(old func(memoCountKey) bool) {
	for k, c := range m.counts {
		if c.held == 0 && old(k) {
			delete(m.counts, k)
		}
	}
}

// settled returns the function told how the commit carrying d's record
// ended: its count joins base when it landed and is released otherwise,
// and d is no longer in flight. It acts once.
func (m *gateMemo) settled(d *memoDecision) func(error) {
	item, ws, proc := d.item, d.wsCount, d.procCount
	once := false
	return func(err error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if once {
			return
		}
		once = true
		delete(m.items, item)
		if ws == nil { // not automatic: nothing counted
			return
		}
		for _, c := range [2]*memoCount{ws, proc} { // in counts while held
			c.held--
			if err == nil {
				c.base++
			}
		}
	}
}

// hand gives w d's record and, for an automatic action, the increments
// of its day counts.
func (s *Service) hand(d *memoDecision, w *callwrites.Writes) {
	tenant, rec := d.p.req.Tenant, d.rec // the write holds its own copy
	raw := rec.encode()
	w.Add(func(tx store.Txn) error { return gateDecisions.PutRaw(tx, tenant, &rec, raw) })
	if d.wsCount != nil {
		w.AddCount(callwrites.Count{Key: d.wsCount.key, N: 1}, callwrites.Count{Key: d.procCount.key, N: 1})
	}
	w.OnSettled(s.memo.settled(d))
}

// commitOwn commits the decisions asked without a Writes in one
// transaction: their records, and their counts in the dayCounts records
// (the run engine's counts are written by its commits only).
func (s *Service) commitOwn(ctx context.Context, own []*memoDecision, now time.Time) {
	bs := make([]callwrites.Batch, len(own))
	for i, d := range own {
		var w callwrites.Writes
		s.hand(d, &w)
		bs[i] = w.TakeAll()
	}
	err := s.st.Update(ctx, func(tx store.Txn) error {
		b := &gateBatch{now: now}
		for i, d := range own {
			for _, op := range bs[i].Ops {
				if err := op(tx); err != nil {
					return err
				}
			}
			if !d.rec.Auto || d.p.err != nil {
				continue
			}
			for _, proc := range [2]string{"", d.rec.ProcessID} {
				c, err := b.count(tx, d.p.req.Tenant, proc)
				if err != nil {
					return err
				}
				c.Count++
				b.dirty(d.p.req.Tenant, c)
			}
		}
		return b.flush(tx)
	})
	for i := range bs {
		bs[i].Drop(err) // told nil when committed
	}
	if err != nil {
		for _, d := range own {
			d.p.out, d.p.err = runengine.GateDecision{}, err
		}
	}
}
