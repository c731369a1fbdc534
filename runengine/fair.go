package runengine

import (
	"slices"
	"strconv"
	"sync"
)

// Run priorities: a tenant's calls waiting for a slot go out highest
// first, oldest first within a priority.
const (
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
)

// Priorities lists the run priorities.
var Priorities = []string{PriorityLow, PriorityNormal, PriorityHigh}

// priorityRank orders priorities; an empty one is normal.
func priorityRank(p string) int {
	switch p {
	case PriorityHigh:
		return 0
	case PriorityLow:
		return 2
	}
	return 1
}

// admission caps the capability calls (and gate decisions) in flight per
// tenant and per process (Config.MaxCallsPerTenant, MaxCallsPerProcess):
// a call over a cap waits in its tenant's queue, by priority, and goes out
// when a call of that tenant ends. One tenant flooding the engine then
// holds at most its cap of call runners, and the others' calls go out at
// once. The queue is memory only: a call queued at a crash is made again
// when its run is resumed, with the same idempotency key; the calls made
// again wait until every run is resumed, then go out by priority (see
// Engine.recover).
type admission struct {
	perTenant, perProcess int
	// noun is what is capped: "call" or "run".
	noun string
	// holders are the runs holding a slot (run caps only; nil for calls),
	// so a run's end frees the slot it holds and no other.
	holders map[runKey]bool
	mu      sync.Mutex
	tenants map[string]*tenantSlots
	procs   map[procKey]int
	// waiting says why each run with a queued call waits (see reason).
	waiting map[runKey]string
	// resuming says the engine is resuming the runs that were in flight
	// when it opened: until it has counted those holding a slot, no slot
	// is taken for a run or call waiting for one (see resumed).
	resuming bool
}

type procKey struct{ tenant, process string }

type tenantSlots struct {
	inflight int
	queue    [3][]*queuedCall
}

type queuedCall struct {
	process, runID string
	run            func()
}

func newAdmission(noun string, perTenant, perProcess int) *admission {
	if perTenant <= 0 && perProcess <= 0 {
		return nil
	}
	a := &admission{perTenant: perTenant, perProcess: perProcess, noun: noun, tenants: map[string]*tenantSlots{}, procs: map[procKey]int{},
		waiting: map[runKey]string{}}
	if noun == "run" {
		a.holders = map[runKey]bool{}
	}
	return a
}

// slots returns tenant's slots, made when it has none; a.mu is held.
func (a *admission) slots(tenant string) *tenantSlots {
	ts := a.tenants[tenant]
	if ts == nil {
		ts = &tenantSlots{}
		a.tenants[tenant] = ts
	}
	return ts
}

// room reports whether tenant and process have a free slot; a.mu is held.
func (a *admission) room(ts *tenantSlots, tenant, process string) bool {
	return !a.resuming && (a.perTenant <= 0 || ts.inflight < a.perTenant) &&
		(a.perProcess <= 0 || a.procs[procKey{tenant, process}] < a.perProcess)
}

// admit runs run now when there is room, else queues it; the caller calls
// done(tenant, process) once the call ends. runID is the calling run's.
func (a *admission) admit(tenant, process, priority, runID string, run func()) {
	if a.tryAdmit(tenant, process, priority, runID, run) {
		run()
	}
}

// tryAdmit takes a slot and reports true when there is room; otherwise it
// queues later, called once a slot is taken for it, and reports false. A
// run already queued is not queued twice.
func (a *admission) tryAdmit(tenant, process, priority, runID string, later func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := a.slots(tenant)
	k := runKeyOf(tenant, runID)
	if a.holders[k] {
		return true
	}
	if !a.room(ts, tenant, process) {
		if a.holders == nil || a.waiting[k] == "" {
			r := priorityRank(priority)
			ts.queue[r] = append(ts.queue[r], &queuedCall{process: process, runID: runID, run: later})
			a.waiting[k] = a.blocker(ts, tenant, process)
		}
		return false
	}
	a.take(ts, tenant, process, runID)
	return true
}

// tryTake takes a slot for the run when there is room, and reports
// whether it did; it queues nothing.
func (a *admission) tryTake(tenant, process, runID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := a.slots(tenant)
	if a.holders[runKeyOf(tenant, runID)] {
		return true
	}
	if !a.room(ts, tenant, process) {
		return false
	}
	a.take(ts, tenant, process, runID)
	return true
}

// hold counts a run that is past the cap already (one admitted before the
// engine opened) as holding a slot, room or not; a holder stays one.
func (a *admission) hold(tenant, process, runID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.holders[runKeyOf(tenant, runID)] || a.waiting[runKeyOf(tenant, runID)] != "" {
		return
	}
	a.take(a.slots(tenant), tenant, process, runID)
}

func (a *admission) take(ts *tenantSlots, tenant, process, runID string) {
	ts.inflight++
	if a.perProcess > 0 {
		a.procs[procKey{tenant, process}]++
	}
	if a.holders != nil {
		a.holders[runKeyOf(tenant, runID)] = true
	}
}

// done frees the slot of an ended call and starts the tenant's next queued
// call that has room.
func (a *admission) done(tenant, process string) {
	a.mu.Lock()
	next := a.free(tenant, process)
	a.mu.Unlock()
	if next != nil {
		next.run()
	}
}

// release frees the slot an ended run holds, or takes it out of the queue
// when it waited for one, and starts the tenant's next queued run that has
// room.
func (a *admission) release(tenant, process, runID string) {
	a.mu.Lock()
	k := runKeyOf(tenant, runID)
	var next *queuedCall
	switch {
	case a.holders[k]:
		delete(a.holders, k)
		next = a.free(tenant, process)
	case a.waiting[k] != "":
		delete(a.waiting, k)
		ts := a.tenants[tenant]
		for r := range ts.queue {
			ts.queue[r] = slices.DeleteFunc(ts.queue[r], func(q *queuedCall) bool { return q.runID == runID })
		}
		a.forgetIdle(tenant, ts)
	}
	a.mu.Unlock()
	if next != nil {
		next.run()
	}
}

// forgetIdle forgets a tenant with nothing in flight or queued; a.mu is held.
func (a *admission) forgetIdle(tenant string, ts *tenantSlots) {
	if ts.inflight == 0 && len(ts.queue[0])+len(ts.queue[1])+len(ts.queue[2]) == 0 {
		delete(a.tenants, tenant)
	}
}

// free frees a slot of tenant and process and takes it for the tenant's
// next queued call or run that has room, which it returns; a.mu is held.
func (a *admission) free(tenant, process string) *queuedCall {
	ts := a.tenants[tenant]
	ts.inflight--
	if a.perProcess > 0 {
		k := procKey{tenant, process}
		if a.procs[k]--; a.procs[k] <= 0 {
			delete(a.procs, k)
		}
	}
	next := a.next(ts, tenant)
	if next == nil {
		a.forgetIdle(tenant, ts)
	}
	return next
}

// next takes a slot for the tenant's next queued call or run that has
// room, highest priority first, and returns it, or nil when none has
// room; a.mu is held.
func (a *admission) next(ts *tenantSlots, tenant string) *queuedCall {
	for r := range ts.queue {
		for i, q := range ts.queue[r] {
			if a.room(ts, tenant, q.process) {
				ts.queue[r] = append(ts.queue[r][:i], ts.queue[r][i+1:]...)
				a.take(ts, tenant, q.process, q.runID)
				delete(a.waiting, runKeyOf(tenant, q.runID))
				return q
			}
		}
	}
	return nil
}

// resume makes the runs waiting for a slot queue, taking none, until
// resumed: the engine opens, and the runs it resumes that held a slot
// before are counted first.
func (a *admission) resume() {
	a.mu.Lock()
	a.resuming = true
	a.mu.Unlock()
}

// resumed ends resume once every run in flight was resumed, those holding
// a slot counted: the free slots go to the runs queued meanwhile, highest
// priority first, and they are started.
func (a *admission) resumed() {
	a.mu.Lock()
	a.resuming = false
	var ready []*queuedCall
	for tenant, ts := range a.tenants {
		for q := a.next(ts, tenant); q != nil; q = a.next(ts, tenant) {
			ready = append(ready, q)
		}
	}
	a.mu.Unlock()
	for _, q := range ready {
		q.run()
	}
}

// blocker says which cap keeps a call of tenant and process from going
// out; a.mu is held.
func (a *admission) blocker(ts *tenantSlots, tenant, process string) string {
	switch {
	case a.perTenant > 0 && ts.inflight >= a.perTenant:
		return a.noun + " cap of the tenant: " + strconv.Itoa(a.perTenant) + " " + a.noun + "s in flight"
	case a.resuming && (a.perProcess <= 0 || a.procs[procKey{tenant, process}] < a.perProcess):
		return a.noun + " cap of the tenant: the runs in flight are resumed first"
	}
	return a.noun + " cap of process " + process + ": " + strconv.Itoa(a.perProcess) + " " + a.noun + "s in flight"
}

// reasonFor says which cap keeps a new call or run of tenant and process
// from going out.
func (a *admission) reasonFor(tenant, process string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.blocker(a.slots(tenant), tenant, process)
}

// reason says why the run's call waits for a slot, or "" when it does not.
func (a *admission) reason(tenant, runID string) string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting[runKeyOf(tenant, runID)]
}

// withWaitingReason sets the waiting reason of a run whose call waits for a
// slot: such a run is running, and the reason is memory only, as the queue is.
func (e *Engine) withWaitingReason(r *Run) {
	if e.admission != nil && r.WaitingReason == "" && r.Status == RunRunning {
		r.WaitingReason = e.admission.reason(r.Tenant, r.ID)
	}
}

// normPriority stores normal as empty.
func normPriority(p string) string {
	if p == PriorityNormal {
		return ""
	}
	return p
}
