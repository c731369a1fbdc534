package runengine

import (
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
// when its run is resumed, with the same idempotency key.
type admission struct {
	perTenant, perProcess int
	mu                    sync.Mutex
	tenants               map[string]*tenantSlots
	procs                 map[procKey]int
	// waiting says why each run with a queued call waits (see reason).
	waiting map[string]string
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

func newAdmission(perTenant, perProcess int) *admission {
	if perTenant <= 0 && perProcess <= 0 {
		return nil
	}
	return &admission{perTenant: perTenant, perProcess: perProcess, tenants: map[string]*tenantSlots{}, procs: map[procKey]int{},
		waiting: map[string]string{}}
}

// room reports whether tenant and process have a free slot; a.mu is held.
func (a *admission) room(ts *tenantSlots, tenant, process string) bool {
	return (a.perTenant <= 0 || ts.inflight < a.perTenant) &&
		(a.perProcess <= 0 || a.procs[procKey{tenant, process}] < a.perProcess)
}

// admit runs run now when there is room, else queues it; the caller calls
// done(tenant, process) once the call ends. runID is the calling run's.
func (a *admission) admit(tenant, process, priority, runID string, run func()) {
	a.mu.Lock()
	ts := a.tenants[tenant]
	if ts == nil {
		ts = &tenantSlots{}
		a.tenants[tenant] = ts
	}
	if !a.room(ts, tenant, process) {
		r := priorityRank(priority)
		ts.queue[r] = append(ts.queue[r], &queuedCall{process: process, runID: runID, run: run})
		a.waiting[cacheKey(tenant, runID)] = a.blocker(ts, tenant, process)
		a.mu.Unlock()
		return
	}
	a.take(ts, tenant, process)
	a.mu.Unlock()
	run()
}

func (a *admission) take(ts *tenantSlots, tenant, process string) {
	ts.inflight++
	if a.perProcess > 0 {
		a.procs[procKey{tenant, process}]++
	}
}

// done frees the slot of an ended call and starts the tenant's next queued
// call that has room.
func (a *admission) done(tenant, process string) {
	a.mu.Lock()
	ts := a.tenants[tenant]
	ts.inflight--
	if a.perProcess > 0 {
		k := procKey{tenant, process}
		if a.procs[k]--; a.procs[k] <= 0 {
			delete(a.procs, k)
		}
	}
	var next *queuedCall
	for r := range ts.queue {
		for i, q := range ts.queue[r] {
			if a.room(ts, tenant, q.process) {
				next = q
				ts.queue[r] = append(ts.queue[r][:i], ts.queue[r][i+1:]...)
				break
			}
		}
		if next != nil {
			break
		}
	}
	if next != nil {
		a.take(ts, tenant, next.process)
		delete(a.waiting, cacheKey(tenant, next.runID))
	} else if ts.inflight == 0 && len(ts.queue[0])+len(ts.queue[1])+len(ts.queue[2]) == 0 {
		delete(a.tenants, tenant)
	}
	a.mu.Unlock()
	if next != nil {
		next.run()
	}
}

// blocker says which cap keeps a call of tenant and process from going
// out; a.mu is held.
func (a *admission) blocker(ts *tenantSlots, tenant, process string) string {
	if a.perTenant > 0 && ts.inflight >= a.perTenant {
		return "call cap of the tenant: " + strconv.Itoa(a.perTenant) + " calls in flight"
	}
	return "call cap of process " + process + ": " + strconv.Itoa(a.perProcess) + " calls in flight"
}

// reason says why the run's call waits for a slot, or "" when it does not.
func (a *admission) reason(tenant, runID string) string {
	if a == nil {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting[cacheKey(tenant, runID)]
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
