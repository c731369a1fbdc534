package runengine

import (
	"context"
	"time"

	"github.com/bas-platform/bas/store"
)

// Observer is told what the engine does, for metrics and traces. Every
// method is called from the engine's own goroutines and must not block;
// a nil Config.Observer costs nothing.
type Observer interface {
	// RunStarted is called once a run's start is durable.
	RunStarted(r RunNote)
	// RunFinished is called once a run's end (completed, failed,
	// rejected or cancelled) is durable.
	RunFinished(r RunNote, status RunStatus)
	// StepStarted is called when a step begins, before its first call is
	// made (not yet durable: a step whose start fails to commit begins
	// again).
	StepStarted(s StepNote)
	// StepFinished is called once a step's end (completed or failed) is
	// durable; s.EndedAt and s.Status are set.
	StepFinished(s StepNote)
	// Committed is called after each commit of the pipeline with the
	// number of changes it carried and how long it took.
	Committed(changes int, took time.Duration, err error)
}

// RunNote names a run for an Observer.
type RunNote struct {
	Tenant, RunID, ProcessID, ProcessName string
	StartedAt                             time.Time
}

// StepNote names a step of a run for an Observer.
type StepNote struct {
	RunNote
	StepKey, StepType string
	// Attempts made so far (calls of the step's capability).
	Attempts           int
	StartedAt, EndedAt time.Time
	// Status is completed or failed (StepFinished only); Error the
	// failure.
	Status StepStatus
	Error  string
}

func (x *exec) runNote() RunNote {
	r := x.r
	return RunNote{Tenant: r.Tenant, RunID: r.ID, ProcessID: r.ProcessID, ProcessName: r.ProcessName, StartedAt: r.StartedAt}
}

func (x *exec) stepNote(st *StepRun) StepNote {
	n := StepNote{RunNote: x.runNote(), StepKey: st.Key, StepType: st.Type, Attempts: st.Attempts}
	if st.StartedAt != nil {
		n.StartedAt = *st.StartedAt
	}
	return n
}

// observeStepEnd tells the observer, once durable, that st ended.
func (x *exec) observeStepEnd(st *StepRun, status StepStatus, msg string) {
	obs := x.w.e.cfg.Observer
	if obs == nil {
		return
	}
	n := x.stepNote(st)
	n.EndedAt, n.Status, n.Error = x.now, status, msg
	x.fx.post = append(x.fx.post, func() { obs.StepFinished(n) })
}

// Gauges are a tenant's figures of the moment, read from counters kept in
// the same commits as the runs.
type Gauges struct {
	OpenTasks        int
	PendingApprovals int
	OverdueRuns      int
}

// Gauges reads tenant's open tasks, pending approvals and overdue runs.
func (e *Engine) Gauges(ctx context.Context, tenant string) (Gauges, error) {
	var g Gauges
	err := e.st.View(ctx, func(r store.Reader) error {
		n, err := e.counter(r, []byte(counterKey(tenant, "approvals-pending")))
		if err != nil {
			return err
		}
		g.PendingApprovals = int(n)
		if n, err = e.counter(r, []byte(counterKey(tenant, "overdue"))); err != nil {
			return err
		}
		g.OverdueRuns = int(n)
		return r.Scan(store.ScanOptions{Prefix: store.Key(tenant, "count", "tasks-open"), Rewritten: true}, func(key, val []byte) error {
			n, err := counterValue(key, val)
			g.OpenTasks += int(n)
			return err
		})
	})
	return g, err
}
