package runengine

import (
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
}

type procKey struct{ tenant, process string }

type tenantSlots struct {
	inflight int
	queue    [3][]*queuedCall
}

type queuedCall struct {
	process string
	run     func()
}

func newAdmission(perTenant, perProcess int) *admission {
	if perTenant <= 0 && perProcess <= 0 {
		return nil
	}
	return &admission{perTenant: perTenant, perProcess: perProcess, tenants: map[string]*tenantSlots{}, procs: map[procKey]int{}}
}

// room reports whether tenant and process have a free slot; a.mu is held.
func (a *admission) room(ts *tenantSlots, tenant, process string) bool {
	return (a.perTenant <= 0 || ts.inflight < a.perTenant) &&
		(a.perProcess <= 0 || a.procs[procKey{tenant, process}] < a.perProcess)
}

// admit runs run now when there is room, else queues it; the caller calls
// done(tenant, process) once the call ends.
func (a *admission) admit(tenant, process, priority string, run func()) {
	a.mu.Lock()
	ts := a.tenants[tenant]
	if ts == nil {
		ts = &tenantSlots{}
		a.tenants[tenant] = ts
	}
	if !a.room(ts, tenant, process) {
		r := priorityRank(priority)
		ts.queue[r] = append(ts.queue[r], &queuedCall{process: process, run: run})
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
	} else if ts.inflight == 0 && len(ts.queue[0])+len(ts.queue[1])+len(ts.queue[2]) == 0 {
		delete(a.tenants, tenant)
	}
	a.mu.Unlock()
	if next != nil {
		next.run()
	}
}

// normPriority stores normal as empty.
func normPriority(p string) string {
	if p == PriorityNormal {
		return ""
	}
	return p
}
