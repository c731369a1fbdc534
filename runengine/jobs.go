package runengine

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Bulk actions a job applies to the runs its filter selects.
const (
	JobCancel = "cancel"
	JobPause  = "pause"
	JobResume = "resume"
	JobRetry  = "retry"
)

// JobActions are the bulk actions, in the order the API lists them.
var JobActions = []string{JobCancel, JobPause, JobResume, JobRetry}

// Job statuses. A cancelled job (see Engine.CancelJob) stopped before its
// end; its Done and Changed count what it did until then.
const (
	JobRunning   = "running"
	JobCompleted = "completed"
	JobCancelled = "cancelled"
)

// JobFilter selects the runs of a bulk job; at least one of ProcessID,
// Status and Overdue is set.
type JobFilter struct {
	ProcessID string    `json:"process_id,omitempty"`
	Status    RunStatus `json:"status,omitempty"`
	Overdue   bool      `json:"overdue,omitempty"`
	// Q and Search select runs as RunQuery's fields of those names do.
	Q      string            `json:"q,omitempty"`
	Search map[string]string `json:"search,omitempty"`
	// PausedBy "process" keeps the runs a pause of the process paused
	// (the job of a process's resume).
	PausedBy string `json:"paused_by,omitempty"`
}

// JobError is a run a job's action failed on.
type JobError struct {
	RunID string `json:"run_id"`
	Error string `json:"error"`
}

// MaxJobErrors bounds the errors a job lists; ErrorCount counts them all.
const MaxJobErrors = 100

// Job is a bulk action over runs, done in the background: it goes through
// the filter's runs page by page, and its progress is durable after each
// page, so a restart goes on where it stopped.
type Job struct {
	ID     string    `json:"id"`
	Type   string    `json:"type"`
	Action string    `json:"action"`
	Filter JobFilter `json:"filter"`
	Status string    `json:"status"`
	// Total is the number of runs the job looks at, counted from the
	// filter's index when it was created; Done, those it has looked at
	// (once completed, Total is set to Done); Changed, those the action
	// changed (for retry: the new runs started). Each run is counted once,
	// also when a crash or a Close cut a page (see jobRunKey).
	Total      int        `json:"total"`
	Done       int        `json:"done"`
	Changed    int        `json:"changed"`
	Errors     []JobError `json:"errors"`
	ErrorCount int        `json:"error_count"`
	// Results are the runs a retry started, by the run retried (the first
	// MaxJobErrors of them).
	Results []JobResult `json:"results,omitempty"`
	// WhatIf and Result are a what-if job's parameters and agreement
	// report (see Engine.WhatIf); nil for a bulk job.
	WhatIf      *WhatIfParams `json:"what_if,omitempty"`
	Result      *WhatIfReport `json:"result,omitempty"`
	CreatedBy   string        `json:"created_by,omitempty"`
	CancelledBy string        `json:"cancelled_by,omitempty"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
	CompletedAt *time.Time    `json:"completed_at"`
}

// JobResult is a run a job's action started.
type JobResult struct {
	RunID    string `json:"run_id"`
	NewRunID string `json:"new_run_id"`
}

// jobRecord is a job as stored: with the page cursor it goes on from.
type jobRecord struct {
	Job
	Cursor string `json:"cursor,omitempty"`
}

var jobs = &store.Collection[jobRecord]{
	Name:     "job",
	ID:       func(j *jobRecord) string { return j.ID },
	NotFound: "job not found",
}

// jobsRunningKey marks a job not yet completed, so Open restarts it; a
// job cancelled keeps it until its runner counted the page it was on.
func jobsRunningKey(tenant, id string) []byte {
	return store.Key(store.System, "jobs-running", tenant, id)
}

// jobRunKey marks a run the bulk job job changed (for a retry, holding
// the new run's id): written in the commit of the run's change, removed in
// the commit of the job's progress that counts it. A page done again after
// a crash or a Close finds the runs its first pass changed, listed again
// or not (a run cancelled no longer matches a status filter), and counts
// each once, as changed.
func jobRunKey(tenant, job, runID string) []byte {
	return store.Key(store.System, "job-run", tenant, job, runID)
}

// jobMarks reads the marks of the runs job changed (see jobRunKey): the
// new run's id (empty but for a retry) by the run changed.
func jobMarks(r store.Reader, tenant, job string) (map[string]string, error) {
	var marks map[string]string
	prefix := store.Key(store.System, "job-run", tenant, job)
	err := r.Scan(store.ScanOptions{Prefix: prefix}, func(key, val []byte) error {
		parts, err := store.DecodeKey(key)
		if err != nil || len(parts) != 5 {
			return errors.Newf("runengine: bad job mark %q", key)
		}
		if marks == nil {
			marks = map[string]string{}
		}
		marks[parts[4].(string)] = string(val)
		return nil
	})
	return marks, err
}

// jobMarked reports whether the run is marked as changed by job (see
// jobRunKey).
func (e *Engine) jobMarked(tenant, job, runID string) (bool, error) {
	err := e.st.View(e.ctx, func(r store.Reader) error {
		_, err := r.Get(jobRunKey(tenant, job, runID))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// jobPage is how many runs a job handles per durable step.
const jobPage = 100

func (e *Engine) newJob(f JobFilter, action, actor string) *jobRecord {
	now := e.now()
	return &jobRecord{Job: Job{ID: e.ids.New("job", now), Type: "bulk", Action: action, Filter: f, Status: JobRunning,
		Errors: []JobError{}, CreatedBy: actor, CreatedAt: now, UpdatedAt: now}}
}

func (e *Engine) putJob(tx store.Txn, tenant string, rec *jobRecord) error {
	if err := jobs.Put(tx, tenant, rec); err != nil {
		return err
	}
	if rec.Status == JobRunning {
		return tx.Set(jobsRunningKey(tenant, rec.ID), nil)
	}
	return tx.Delete(jobsRunningKey(tenant, rec.ID))
}

// BulkRuns creates a job applying action to the runs f selects and starts
// it; the job is durable before it is returned.
func (e *Engine) BulkRuns(ctx context.Context, tenant string, f JobFilter, action, actor string) (*Job, error) {
	if e.isClosed() {
		return nil, errClosed
	}
	if f.Q != "" {
		// A q the search cannot use would be dropped from the filter,
		// and the action reach every run the rest of it selects. It is
		// checked first: a q given is a q to correct, alone or not.
		if p := SearchQueryProblem(f.Q); p != "" {
			return nil, errs.Invalidf([]any{"body", "filter", "q"}, "value_error", "%s", p)
		}
	}
	if f.ProcessID == "" && f.Status == "" && !f.Overdue && f.Q == "" && len(f.Search) == 0 {
		return nil, errs.Invalidf([]any{"body", "filter"}, "value_error", "give at least one of process_id, status, overdue, q and search")
	}
	rec := e.newJob(f, action, actor)
	// The runs are counted in a view before the job's commit: a count of
	// many runs inside a commit would hold every tenant's commits behind it.
	err := e.st.View(ctx, func(r store.Reader) error {
		n, err := countCandidates(r, tenant, f)
		rec.Total = n
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := e.commits.commitWait(ctx, &delta{apply: func(tx store.Txn) error { return e.putJob(tx, tenant, rec) }}); err != nil {
		return nil, err
	}
	e.startJob(tenant, rec.ID)
	job := rec.Job
	return &job, nil
}

// GetJob returns a job of tenant.
func (e *Engine) GetJob(ctx context.Context, tenant, id string) (*Job, error) {
	var rec *jobRecord
	err := e.st.View(ctx, func(r store.Reader) error {
		var err error
		rec, err = jobs.Get(r, tenant, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &rec.Job, nil
}

// CancelJob cancels a running job of tenant: its status becomes cancelled
// at once, and the job stops at its next page. The page under way, whose
// actions are under way, still counts in Done and Changed; when a Close or
// a crash cuts it, the next Open counts the runs it changed (in Done too,
// where the runs it looked at and left unchanged are then missing), and
// acts on no more runs. A job no longer running is a conflict.
func (e *Engine) CancelJob(ctx context.Context, tenant, id, actor string) (*Job, error) {
	if e.isClosed() {
		return nil, errClosed
	}
	var job Job
	err := e.commits.commitWait(ctx, &delta{reads: true, apply: func(tx store.Txn) error {
		rec, err := jobs.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if rec.Status != JobRunning {
			return errs.Conflictf("job is %s", rec.Status)
		}
		now := e.now()
		rec.Status, rec.CancelledBy, rec.UpdatedAt, rec.CompletedAt = JobCancelled, actor, now, &now
		job = rec.Job
		return jobs.Put(tx, tenant, rec) // still marked running: its runner ends it (see runJob)
	}})
	if err != nil {
		return nil, err
	}
	e.startJob(tenant, id) // one that is not running (it stopped on an error) ends it now
	return &job, nil
}

// saveJob commits the progress of a job that was running when its runner
// read it, and removes the keys in drop (the marks of the runs it counts).
// A job cancelled since keeps its cancel (status, time and who) with this
// progress, and saveJob says so: the runner stops.
func (e *Engine) saveJob(tenant string, rec *jobRecord, drop [][]byte, also func(tx store.Txn) error) (bool, error) {
	var cancelled bool // read only once the commit is over: a Close ends the wait before
	err := e.commits.commitWait(e.ctx, &delta{reads: true, fence: e.fence(rec.ID), apply: func(tx store.Txn) error {
		cur, err := jobs.Get(tx, tenant, rec.ID)
		if err != nil {
			return err
		}
		if err := deleteAll(tx, drop); err != nil {
			return err
		}
		cancelled = cur.Status == JobCancelled
		if cancelled {
			rec.Status, rec.CancelledBy, rec.CompletedAt = cur.Status, cur.CancelledBy, cur.CompletedAt
		} else if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		return e.putJob(tx, tenant, rec)
	}})
	if err != nil {
		return false, err
	}
	return cancelled, nil
}

// countCandidates counts the runs of f's most selective index.
func countCandidates(r store.Reader, tenant string, f JobFilter) (int, error) {
	count := func(prefix []byte) (int, error) {
		n := 0
		err := r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(_, _ []byte) error {
			n++
			return nil
		})
		return n, err
	}
	if f.PausedBy == "" {
		if prefix := searchPrefix(tenant, f.query()); prefix != nil {
			return count(prefix)
		}
	}
	switch {
	case f.PausedBy != "":
		return runs.CountBy(r, tenant, "paused-by-process", f.ProcessID)
	case f.Overdue:
		return runs.CountBy(r, tenant, "overdue")
	case f.ProcessID != "":
		return runs.CountBy(r, tenant, "process", f.ProcessID)
	case f.Status == RunRunning:
		return count(activePrefix(tenant))
	default:
		return runs.CountBy(r, tenant, "status", f.Status)
	}
}

// startJob runs the job on its own goroutine, unless one runs it already.
func (e *Engine) startJob(tenant, id string) {
	e.closeMu.RLock()
	defer e.closeMu.RUnlock()
	if e.closed {
		return
	}
	if e.cluster != nil && !e.cluster.owns(id) {
		return // the node owning the job's shard runs it
	}
	k := tenant + "\x00" + id
	if _, busy := e.jobsRunning.LoadOrStore(k, true); busy {
		return
	}
	e.jobWG.Add(1)
	go func() {
		defer e.jobWG.Done()
		defer e.jobsRunning.Delete(k)
		if err := e.runJob(tenant, id); err != nil && !e.isClosed() {
			e.log.Error("bulk job", "job", id, "error", err)
		}
	}()
}

// runJob goes through the job's runs a page at a time; each page's
// progress commits with the cursor after it, so a restart repeats at most
// one page. The runs that page changed before are marked (see jobRunKey):
// they are counted as changed, and not acted on again; the others' actions
// are no-ops or skip runs that no longer match.
func (e *Engine) runJob(tenant, id string) error {
	// Only the first page a runner does may have been done before: each
	// page's marks go with its progress.
	first := true
	for {
		var rec *jobRecord
		var page []*Run
		var next string
		var marked map[string]string
		ended := false // cancelled, and ended by a runner already
		err := e.st.View(e.ctx, func(r store.Reader) error {
			var err error
			if rec, err = jobs.Get(r, tenant, id); err != nil {
				return err
			}
			switch {
			case rec.Status == JobCancelled:
				_, err := r.Get(jobsRunningKey(tenant, id))
				if ended = errors.Is(err, store.ErrNotFound); ended {
					return nil
				}
				if err != nil {
					return err
				}
			case rec.Status != JobRunning || rec.Type == JobWhatIf:
				return nil
			}
			if first {
				if marked, err = jobMarks(r, tenant, id); err != nil {
					return err
				}
			}
			if rec.Status != JobRunning {
				return nil
			}
			page, next, err = jobCandidates(r, tenant, rec.Filter, store.Page{Limit: jobPage, Cursor: rec.Cursor, Forward: true})
			return err
		})
		first = false
		switch {
		case err != nil:
			return err
		case rec.Status == JobCancelled && !ended:
			return e.endCancelled(tenant, rec, marked)
		case rec.Status != JobRunning:
			return nil
		}
		if rec.Type == JobWhatIf {
			return e.runWhatIf(tenant, rec)
		}
		q := rec.Filter.query()
		type outcome struct {
			changed bool
			newRun  string
			err     error
		}
		outs := make([]outcome, len(page))
		looked := 0
		var wg sync.WaitGroup
		for i, r := range page {
			if r.RerunJob == rec.ID {
				continue // its own reruns, which may fail too
			}
			looked++
			if newRun, ok := marked[r.ID]; ok {
				delete(marked, r.ID)
				outs[i] = outcome{changed: true, newRun: newRun}
				continue
			}
			if !q.matches(r) || (rec.Filter.PausedBy != "" && (r.Paused == nil || !r.Paused.ByProcess)) {
				continue
			}
			wg.Go(func() {
				outs[i].changed, outs[i].newRun, outs[i].err = e.applyBulk(tenant, rec.ID, r, rec.Action, rec.CreatedBy, rec.Filter.PausedBy != "")
			})
		}
		wg.Wait()
		e.cfg.Failpoints.jobPage(tenant, id)
		if e.isClosed() {
			return nil // the page is done again on the next Open
		}
		var drop [][]byte
		for i, o := range outs {
			switch {
			case o.err != nil:
				rec.ErrorCount++
				if len(rec.Errors) < MaxJobErrors {
					rec.Errors = append(rec.Errors, JobError{RunID: page[i].ID, Error: o.err.Error()})
				}
			case o.changed:
				drop = rec.countChanged(tenant, page[i].ID, o.newRun, drop)
			}
		}
		rec.Done += looked
		// The runs the page's first pass changed that it no longer lists
		// (they left the filter's index): looked at and changed then.
		drop = rec.countMarked(tenant, marked, drop)
		rec.Cursor = next
		rec.UpdatedAt = e.now()
		if next == "" {
			rec.Status = JobCompleted
			rec.Total = rec.Done
			t := rec.UpdatedAt
			rec.CompletedAt = &t
		}
		cancelled, err := e.saveJob(tenant, rec, drop, nil)
		if err != nil || cancelled || next == "" {
			return err
		}
	}
}

// endCancelled ends a job cancelled between two of its pages, or while
// one was cut by a Close or a crash: it counts the runs that page changed
// (marked) and removes their marks, and the job is no longer marked
// running.
func (e *Engine) endCancelled(tenant string, rec *jobRecord, marked map[string]string) error {
	drop := rec.countMarked(tenant, marked, nil)
	rec.UpdatedAt = e.now()
	_, err := e.saveJob(tenant, rec, drop, nil)
	return err
}

// countChanged counts the run as changed by the job (newRun is its rerun,
// for a retry) and returns drop with the run's mark (see jobRunKey), to
// remove in the commit that counts it.
func (rec *jobRecord) countChanged(tenant, runID, newRun string, drop [][]byte) [][]byte {
	rec.Changed++
	if newRun != "" && len(rec.Results) < MaxJobErrors {
		rec.Results = append(rec.Results, JobResult{RunID: runID, NewRunID: newRun})
	}
	return append(drop, jobRunKey(tenant, rec.ID, runID))
}

// countMarked counts the marked runs, in the order of their ids, as looked
// at and changed (see countChanged).
func (rec *jobRecord) countMarked(tenant string, marked map[string]string, drop [][]byte) [][]byte {
	for _, runID := range slices.Sorted(maps.Keys(marked)) {
		rec.Done++
		drop = rec.countChanged(tenant, runID, marked[runID], drop)
	}
	return drop
}

// jobCandidates lists a page of the runs of f's most selective index,
// oldest first.
func jobCandidates(r store.Reader, tenant string, f JobFilter, p store.Page) ([]*Run, string, error) {
	if f.PausedBy != "" {
		return runs.ListBy(r, tenant, "paused-by-process", []any{f.ProcessID}, p)
	}
	return listRunCandidates(r, tenant, f.query(), p)
}

// query is the run query of the filter.
func (f JobFilter) query() RunQuery {
	return RunQuery{ProcessID: f.ProcessID, Status: f.Status, Overdue: f.Overdue, Q: f.Q, Search: f.Search}
}

// changedBeside tells whether an action on the run failed with err, a
// conflict, because someone changed the run between the job's read of its
// page and the action: the run, read again, is as the action leaves it
// (done holds), so the job leaves it unchanged rather than failed.
func (e *Engine) changedBeside(tenant, runID string, err error, done func(*Run) bool) bool {
	if !errors.Is(err, errs.Conflict) {
		return false
	}
	r, err := e.GetRun(e.ctx, tenant, runID)
	return err == nil && done(r)
}

// applyBulk applies a job's action to one run: whether it changed the run
// (a run already as the action leaves it is unchanged, not an error), the
// run a retry started, and why it could not.
func (e *Engine) applyBulk(tenant, jobID string, r *Run, action, actor string, byProcess bool) (bool, string, error) {
	ctx := e.ctx
	switch action {
	case JobCancel:
		if r.Status == RunCancelled {
			return false, "", nil
		}
		rep, err := e.sendRunCommand(ctx, tenant, r.ID, actor, cmdCancel, jobID)
		cancelled := func(r *Run) bool { return r.Status == RunCancelled }
		if err != nil && e.changedBeside(tenant, r.ID, err, cancelled) {
			return false, "", nil
		}
		return rep.changed, "", err
	case JobPause:
		if r.Status == RunPaused {
			return false, "", nil
		}
		// A run paused beside the job since it was read is no error.
		rep, err := e.sendRunCommand(ctx, tenant, r.ID, actor, cmdPause, jobID)
		return rep.changed, "", err
	case JobResume:
		if !byProcess && r.Status != RunPaused && !r.Finished() {
			return false, "", nil
		}
		rep, err := e.sendRunCommand(ctx, tenant, r.ID, actor, cmdResume, jobID)
		resumed := func(r *Run) bool { return r.Status != RunPaused && !r.Finished() }
		if err != nil && e.changedBeside(tenant, r.ID, err, resumed) {
			return false, "", nil
		}
		return rep.changed, "", err
	case JobRetry:
		// Keyed by the job and the run, and marked as the job's: a page
		// done again after a restart finds the rerun its first pass started.
		run, err := e.retry(ctx, tenant, r.ID, actor, jobID)
		if err != nil {
			return false, "", err
		}
		return true, run.ID, nil
	}
	return false, "", errors.Newf("unknown action %q", action)
}
