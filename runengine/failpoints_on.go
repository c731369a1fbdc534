//go:build failpoints

package runengine

// Failpoints are the engine's test hooks, compiled in only with the
// failpoints build tag (go test -tags failpoints); in other builds the
// type is empty. A hook may crash the process (to test a restart), block,
// or, where it returns an error, make the step at its point fail.
type Failpoints struct {
	// AfterCall runs when a step's capability call has returned (the
	// provider's side effect is done) and before its result reaches the
	// run's worker, whose commit records it. token is the call's wait
	// token (see callToken): it begins "gate#" for an execute step, whose
	// gate decision and (when the gate lets it run) call are made
	// together.
	AfterCall func(tenant, runID, token string)
	// InGroupCommit runs inside the group commit, once a batch's deltas
	// are written to its transaction and before the transaction commits;
	// an error makes the batch's commit fail as a store error would.
	InGroupCommit func(deltas int) error
	// ChangeWaits runs, on the run's worker, when a change of the run
	// waits for the run's commit in flight to be told before it is
	// submitted (see the worker's flush).
	ChangeWaits func(tenant, runID string)
	// JobPage runs when a bulk job has acted on a page of its runs (a
	// what-if job, replayed them), before it looks whether the engine is
	// closing and commits its progress.
	JobPage func(tenant, jobID string)
}

func (f Failpoints) jobPage(tenant, id string) {
	if f.JobPage != nil {
		f.JobPage(tenant, id)
	}
}

func (f Failpoints) changeWaits(tenant, runID string) {
	if f.ChangeWaits != nil {
		f.ChangeWaits(tenant, runID)
	}
}

func (f Failpoints) afterCall(tenant, runID, token string) {
	if f.AfterCall != nil {
		f.AfterCall(tenant, runID, token)
	}
}

func (f Failpoints) inGroupCommit(deltas int) error {
	if f.InGroupCommit != nil {
		return f.InGroupCommit(deltas)
	}
	return nil
}
