package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/feedback"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// JobWhatIf is the type of a what-if job (see Engine.WhatIf); bulk jobs
// are of type "bulk".
const JobWhatIf = "what-if"

// The bounds of a what-if's Limit.
const (
	DefaultWhatIfLimit = 100
	MaxWhatIfLimit     = 1000
)

// WhatIfParams say what a what-if replays: a version of a process over the
// process's past runs, newest first.
type WhatIfParams struct {
	// ProcessID is the process whose runs are replayed. Required.
	ProcessID string `json:"process_id"`
	// Version is the candidate version of the process; 0 is its current
	// one.
	Version int `json:"version"`
	// Since, when set, keeps the runs started at or after it.
	Since *time.Time `json:"since,omitempty"`
	// Limit bounds the runs looked at (1 to MaxWhatIfLimit; 0 is
	// DefaultWhatIfLimit).
	Limit int `json:"limit"`
}

// WhatIfAnswer is what a person or the candidate did at a step.
//
// A person's Decision is approved (Args are what was approved, edits
// included), rejected (Args are what was proposed) or completed (a human
// task: Action and Output). The candidate's is executed (it would have
// made the step's call on its own, with Args), not_executed (its run
// ended before the step, or failed it: Note says why), completed (it
// produced the step's Output on its own) or asked (it would have left the
// step to a person, as the process's controls say).
type WhatIfAnswer struct {
	Decision string         `json:"decision"`
	Args     map[string]any `json:"args,omitempty"`
	Action   string         `json:"action,omitempty"`
	Output   any            `json:"output,omitempty"`
	Note     string         `json:"note,omitempty"`
}

// WhatIfDifference is a step of a run where the candidate would have
// decided otherwise than the person did.
type WhatIfDifference struct {
	RunID     string       `json:"run_id"`
	StepKey   string       `json:"step_key"`
	Human     WhatIfAnswer `json:"human"`
	Candidate WhatIfAnswer `json:"candidate"`
}

// WhatIfStep is the agreement on one step (the rule of a process).
type WhatIfStep struct {
	StepKey string `json:"step_key"`
	// Compared counts the people's decisions at the step the candidate
	// would have made on its own; Agreed, those it made the same way.
	Compared int `json:"compared"`
	Agreed   int `json:"agreed"`
	// Deferred counts those the candidate would have left to a person.
	Deferred int `json:"deferred"`
	// AgreementRate is Agreed / Compared; null when none was compared.
	AgreementRate *float64 `json:"agreement_rate"`
}

// MaxWhatIfDifferences bounds the differences a report lists;
// DifferenceCount counts them all.
const MaxWhatIfDifferences = 100

// WhatIfReport is a what-if's result: how the candidate would have decided
// the runs people decided, against what they decided.
type WhatIfReport struct {
	ProcessID string `json:"process_id"`
	Version   int    `json:"version"`
	// Runs counts the runs looked at; Cases, the finished ones with at
	// least one decision of a person, which were replayed.
	Runs  int `json:"runs"`
	Cases int `json:"cases"`
	// Compared, Agreed and Deferred sum Steps'.
	Compared      int      `json:"compared"`
	Agreed        int      `json:"agreed"`
	Deferred      int      `json:"deferred"`
	AgreementRate *float64 `json:"agreement_rate"`
	// Steps are the agreement per step, by step key.
	Steps []WhatIfStep `json:"steps"`
	// Differences are the first MaxWhatIfDifferences decisions the
	// candidate made otherwise, oldest run looked at first.
	Differences     []WhatIfDifference `json:"differences"`
	DifferenceCount int                `json:"difference_count"`
	// Incomplete counts the cases whose replay stopped before their end:
	// the candidate made a call the run recorded no output for, waited
	// for an event, or reached a person's step the run never reached.
	// Their decisions after that point are not compared.
	Incomplete int `json:"incomplete"`
	// SendsSuppressed counts the sends (email.send and every capability
	// whose id ends in .send) the replay answered without sending.
	SendsSuppressed int `json:"sends_suppressed"`
}

// WhatIf creates a job replaying a version of a process over the process's
// past finished runs that people decided, with side effects off, and
// starts it; the job is durable before it is returned. Its Result is the
// agreement report, filled in as the job goes.
//
// A replay runs the candidate in a scratch engine of its own (its own
// in-memory store, clock and capabilities): every capability call is
// answered with the output the original run recorded for the step, a send
// is never made, and nothing the replay does reaches the workspace (no
// task, approval, event, webhook or email). The candidate acts on its own
// wherever its own controls let it (require_approval and amount caps make
// it ask; the workspace's autonomy gate is not consulted); where it asks,
// or reaches a person's step, the person's recorded answer is given, so
// the replay goes on as the run did.
func (e *Engine) WhatIf(ctx context.Context, tenant string, p WhatIfParams, actor string) (*Job, error) {
	if e.isClosed() {
		return nil, errClosed
	}
	if p.Limit == 0 {
		p.Limit = DefaultWhatIfLimit
	}
	if p.Limit < 1 || p.Limit > MaxWhatIfLimit {
		return nil, errs.Invalidf([]any{"body", "limit"}, "value_error", "must be from 1 to %d", MaxWhatIfLimit)
	}
	if p.Version < 0 {
		return nil, errs.Invalidf([]any{"body", "version"}, "greater_than_equal", "must be at least 1")
	}
	if p.Since != nil {
		t := p.Since.UTC()
		p.Since = &t
	}
	err := e.st.View(ctx, func(r store.Reader) error {
		def, err := e.cfg.Processes.Load(r, tenant, p.ProcessID)
		if err != nil {
			return err
		}
		if p.Version == 0 {
			p.Version = def.Version
		}
		if p.Version > def.Version {
			return errs.Invalidf([]any{"body", "version"}, "value_error", "process %s has no version %d (its latest is %d)",
				p.ProcessID, p.Version, def.Version)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rec := e.newJob(JobFilter{ProcessID: p.ProcessID}, "", actor)
	rec.Type = JobWhatIf
	rec.WhatIf = &p
	rec.Result = &WhatIfReport{ProcessID: p.ProcessID, Version: p.Version, Steps: []WhatIfStep{}, Differences: []WhatIfDifference{}}
	err = e.commits.commitWait(ctx, &delta{reads: true, apply: func(tx store.Txn) error {
		n, err := runs.CountBy(tx, tenant, "process", p.ProcessID)
		if err != nil {
			return err
		}
		rec.Total = min(n, p.Limit)
		return e.putJob(tx, tenant, rec)
	}})
	if err != nil {
		return nil, err
	}
	e.startJob(tenant, rec.ID)
	job := rec.Job
	return &job, nil
}

// runWhatIf goes through a what-if job's runs a page at a time, each
// page's report committed with the cursor after it.
func (e *Engine) runWhatIf(tenant string, rec *jobRecord) error {
	p := rec.WhatIf
	ver, err := e.version(tenant, p.ProcessID, p.Version)
	if err != nil {
		return e.endWhatIf(tenant, rec, err)
	}
	sh, err := e.openShadow(tenant, ver)
	if err != nil {
		return err
	}
	defer sh.close()
	for {
		var page []*replayCase
		var next string
		looked := 0
		err := e.st.View(e.ctx, func(r store.Reader) error {
			n := min(jobPage, p.Limit-rec.Done)
			list, nxt, err := runs.ListBy(r, tenant, "process", []any{p.ProcessID}, store.Page{Limit: n, Cursor: rec.Cursor})
			if err != nil {
				return err
			}
			next = nxt
			for _, run := range list {
				if p.Since != nil && run.StartedAt.Before(*p.Since) {
					next = "" // newest first: every run after it is older
					break
				}
				looked++
				if !run.Finished() {
					continue
				}
				run.Tenant = tenant
				if err := loadApart(r, tenant, run); err != nil {
					return err
				}
				rc, err := newReplayCase(r, tenant, run)
				if err != nil {
					return err
				}
				if len(rc.human) > 0 {
					page = append(page, rc)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		rep := rec.Result
		for _, rc := range page {
			if e.isClosed() {
				return nil // the page is done again on the next Open
			}
			sh.replay(e.ctx, rc)
			rep.add(rc)
		}
		e.cfg.Failpoints.jobPage(tenant, rec.ID)
		if e.isClosed() {
			return nil
		}
		rec.Done += looked
		rep.Runs = rec.Done
		rec.Cursor = next
		if rec.Done >= p.Limit {
			next = ""
		}
		if next == "" {
			return e.endWhatIf(tenant, rec, nil)
		}
		rec.UpdatedAt = e.now()
		if cancelled, err := e.saveJob(tenant, rec, nil, nil); err != nil || cancelled {
			return err
		}
	}
}

// endWhatIf completes the job, and makes its report the process's latest
// what-if; a cause, when set, is the job's error.
func (e *Engine) endWhatIf(tenant string, rec *jobRecord, cause error) error {
	if cause != nil {
		rec.ErrorCount++
		rec.Errors = append(rec.Errors, JobError{Error: cause.Error()})
	}
	now := e.now()
	rec.Status, rec.Total, rec.UpdatedAt, rec.CompletedAt = JobCompleted, rec.Done, now, &now
	last := &WhatIfSummary{ProcessID: rec.WhatIf.ProcessID, JobID: rec.ID, Version: rec.WhatIf.Version,
		Compared: rec.Result.Compared, AgreementRate: rec.Result.AgreementRate, CompletedAt: now}
	_, err := e.saveJob(tenant, rec, nil, func(tx store.Txn) error {
		if cause != nil {
			return nil
		}
		return latestWhatIfs.Put(tx, tenant, last)
	})
	return err
}

// WhatIfSummary is the outcome of a process's latest completed what-if.
type WhatIfSummary struct {
	ProcessID     string    `json:"process_id"`
	JobID         string    `json:"job_id"`
	Version       int       `json:"version"`
	Compared      int       `json:"compared"`
	AgreementRate *float64  `json:"agreement_rate"`
	CompletedAt   time.Time `json:"completed_at"`
}

var latestWhatIfs = &store.Collection[WhatIfSummary]{
	Name: "whatif-last",
	ID:   func(w *WhatIfSummary) string { return w.ProcessID },
}

// LatestWhatIf returns the summary of the latest completed what-if of the
// process, or nil when it has none (the autonomy ramp reads it).
func LatestWhatIf(r store.Reader, tenant, processID string) (*WhatIfSummary, error) {
	w, err := latestWhatIfs.Get(r, tenant, processID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return w, err
}

// humanAnswer is a person's decision at a step of a past run.
type humanAnswer struct {
	task   bool
	answer WhatIfAnswer
	values map[string]any // a task's field values
}

// replayCase is a past run being replayed, with what the replay saw.
type replayCase struct {
	orig    *Run
	outputs map[string]json.RawMessage // recorded outputs of the steps that completed
	human   map[string]*humanAnswer    // people's decisions by step key

	mu       sync.Mutex
	executed map[string]map[string]any // calls the candidate made on its own, by step
	asked    map[string]bool           // steps the candidate left to a person
	sends    int
	stopped  string // why the replay stopped before the run's end
	final    *Run   // the replayed run as it ended
}

// newReplayCase reads what people decided in run and what its steps
// output.
func newReplayCase(r store.Reader, tenant string, run *Run) (*replayCase, error) {
	rc := &replayCase{orig: run, outputs: map[string]json.RawMessage{}, human: map[string]*humanAnswer{},
		executed: map[string]map[string]any{}, asked: map[string]bool{}}
	for _, st := range run.Steps {
		if st.Status == StepCompleted {
			raw, err := json.Marshal(st.Output)
			if err != nil {
				return nil, err
			}
			rc.outputs[st.Key] = raw
		}
		switch {
		case st.ApprovalID != nil:
			a, err := approvals.Get(r, tenant, *st.ApprovalID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if a.DecidedBy == nil {
				continue
			}
			switch a.Status {
			case ApprovalApproved:
				rc.human[st.Key] = &humanAnswer{answer: WhatIfAnswer{Decision: "approved", Args: a.Args}}
			case ApprovalRejected:
				rc.human[st.Key] = &humanAnswer{answer: WhatIfAnswer{Decision: "rejected", Args: a.Args}}
			}
		case st.TaskID != nil:
			t, err := tasks.Get(r, tenant, *st.TaskID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if t.Status != TaskCompleted || t.Outcome == nil {
				continue
			}
			rc.human[st.Key] = &humanAnswer{task: true, values: t.Values,
				answer: WhatIfAnswer{Decision: "completed", Action: *t.Outcome, Output: st.Output}}
		}
	}
	return rc, nil
}

// isSend reports whether a capability sends something out.
func isSend(capID string) bool {
	return capID == process.CapEmailSend || strings.HasSuffix(capID, ".send")
}

// shadow is the scratch engine a what-if replays in.
type shadow struct {
	tenant string
	st     store.Store
	clk    *clock.Fake
	eng    *Engine
	ver    *process.Version
	calls  *replayCaller
}

// openShadow opens a scratch engine over an in-memory store that runs ver.
func (e *Engine) openShadow(tenant string, ver *process.Version) (*shadow, error) {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, MemTableSize: 4 << 20, BlockCacheSize: 1 << 20})
	if err != nil {
		return nil, errors.Wrap(err, "runengine: open a what-if's scratch store")
	}
	sh := &shadow{tenant: tenant, st: st, clk: clock.NewFake(e.now()), ver: ver, calls: &replayCaller{}}
	sh.eng, err = New(Config{Store: st, Clock: sh.clk, Capabilities: sh.calls, Processes: shadowProcesses{},
		Gate: shadowGate{}, Workers: 1, MaxAttempts: 1, StepTypes: e.cfg.StepTypes,
		ApprovalTTL: 100 * 365 * 24 * time.Hour, Logger: e.log})
	if err == nil {
		err = sh.eng.Open(e.ctx)
	}
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	sh.eng.versions.Store(versionKey{tenant, ver.ProcessID, ver.Version}, ver)
	return sh, nil
}

func (sh *shadow) close() {
	_ = sh.eng.Close()
	_ = sh.st.Close()
}

// maxReplayRounds bounds the waits one replay answers.
const maxReplayRounds = 200

// replayTimeout bounds one case's replay.
const replayTimeout = 30 * time.Second

// replay runs the candidate over rc's run: it starts a run of the
// candidate with the original's subject and trigger, and answers each of
// its waits as the original run was answered.
func (sh *shadow) replay(ctx context.Context, rc *replayCase) {
	ctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	e := sh.eng
	tenant := sh.tenant
	runID := e.ids.New("run", e.now())
	sh.calls.cases.Store(runID, rc)
	defer sh.calls.cases.Delete(runID)
	trig := rc.orig.Trigger
	trig.Cause = nil
	o := rc.orig
	if _, err := e.send(ctx, &command{kind: cmdStart, tenant: tenant, runID: runID, actor: o.StartedBy, start: &startArgs{
		version: sh.ver, subject: o.Subject, trigger: trig, actor: o.StartedBy}}); err != nil {
		rc.stop("the candidate could not start: " + err.Error())
		return
	}
	var last []byte
	var r *Run
	for range maxReplayRounds {
		var err error
		r, err = e.WaitRunUntil(ctx, tenant, runID, func(r *Run) bool {
			if r.Finished() {
				return true
			}
			if r.Status != RunWaiting || r.Cursor >= len(r.Steps) {
				return false
			}
			fp, _ := appendStoredRun(nil, r)
			return !bytes.Equal(fp, last)
		})
		if r != nil && r.Finished() {
			break
		}
		if err != nil {
			rc.stop("the replay did not settle: " + err.Error())
			break
		}
		last, _ = appendStoredRun(nil, r)
		if why := sh.answer(ctx, rc, r); why != "" {
			rc.stop(why)
			break
		}
	}
	if r == nil || !r.Finished() {
		if rc.stopped == "" {
			rc.stop("the replay took more than " + strconv.Itoa(maxReplayRounds) + " waits")
		}
		if c, err := e.Cancel(context.WithoutCancel(ctx), CancelParams{Tenant: tenant, RunID: runID, Actor: "what-if"}); err == nil {
			r = c
		}
	}
	rc.final = r
}

// answer answers the wait r is in as the original run was answered, or
// says why it cannot.
func (sh *shadow) answer(ctx context.Context, rc *replayCase, r *Run) string {
	e, tenant := sh.eng, sh.tenant
	st := &r.Steps[r.Cursor]
	h := rc.human[st.Key]
	switch st.Status {
	case StepWaitingApproval:
		a, err := e.GetApproval(ctx, tenant, *st.ApprovalID)
		if err != nil {
			return err.Error()
		}
		rc.mu.Lock()
		rc.asked[st.Key] = true
		rc.mu.Unlock()
		p := DecideParams{Tenant: tenant, ApprovalID: a.ID, Approve: true}
		switch {
		case h != nil && !h.task && h.answer.Decision == "approved":
			if !jsonEqual(h.answer.Args, a.Args) {
				p.Args = h.answer.Args
			}
		case h != nil && !h.task:
			p.Approve, p.Reason = false, "rejected as a person did"
		case rc.outputs[st.Key] != nil:
			// The original run took the step without a person.
		default:
			return "the candidate asks a person at step " + st.Key + ", which the run never reached"
		}
		// Several approvers each vote; a rejection, or an edit (which
		// starts the votes over), is one person's.
		for i := range max(1, a.ApprovalsRequired) {
			p.Actor = "what-if-" + strconv.Itoa(i+1)
			if _, err := e.Decide(ctx, p); err != nil {
				return "step " + st.Key + ": " + err.Error()
			}
			if !p.Approve {
				break
			}
			p.Args = nil
		}
	case StepWaitingTask:
		rc.mu.Lock()
		rc.asked[st.Key] = true
		rc.mu.Unlock()
		if h == nil || !h.task {
			return "the candidate asks a person at step " + st.Key + ", which no one did in the run"
		}
		if _, err := e.CompleteTask(ctx, CompleteTaskParams{Tenant: tenant, TaskID: *st.TaskID, Action: h.answer.Action,
			Fields: h.values, Actor: "what-if"}); err != nil {
			return "step " + st.Key + ": " + err.Error()
		}
	case StepWaiting:
		dl := st.internal.Deadline
		if dl == nil {
			return "step " + st.Key + " waits for an event"
		}
		sh.clk.Set(*dl)
	default:
		return "step " + st.Key + " waits for " + string(st.Status)
	}
	return ""
}

func (rc *replayCase) stop(why string) {
	rc.mu.Lock()
	if rc.stopped == "" {
		rc.stopped = why
	}
	rc.mu.Unlock()
}

// candidate is what the candidate did at step key of rc's run; ok is false
// when the replay stopped before it could tell.
func (rc *replayCase) candidate(key string, h *humanAnswer) (WhatIfAnswer, bool) {
	if rc.asked[key] {
		return WhatIfAnswer{Decision: "asked"}, true
	}
	if args, ok := rc.executed[key]; ok && !h.task {
		return WhatIfAnswer{Decision: "executed", Args: args}, true
	}
	r := rc.final
	if r == nil || rc.stopped != "" {
		return WhatIfAnswer{}, false
	}
	i := slices.IndexFunc(r.Steps, func(s StepRun) bool { return s.Key == key })
	if i < 0 {
		return WhatIfAnswer{Decision: "not_executed", Note: "the candidate has no step " + key}, true
	}
	if st := r.Steps[i]; st.Status == StepCompleted && h.task {
		return WhatIfAnswer{Decision: "completed", Output: st.Output}, true
	}
	note := ""
	if r.Error != nil {
		note = *r.Error
	}
	return WhatIfAnswer{Decision: "not_executed", Note: note}, true
}

// agrees reports whether the candidate decided as the person did.
func agrees(h *humanAnswer, c WhatIfAnswer) bool {
	switch h.answer.Decision {
	case "approved":
		return c.Decision == "executed" && jsonEqual(h.answer.Args, c.Args)
	case "rejected":
		return c.Decision == "not_executed"
	default: // a task
		return c.Decision == "completed" && jsonEqual(h.answer.Output, c.Output)
	}
}

// add counts a replayed case in the report.
func (rep *WhatIfReport) add(rc *replayCase) {
	rep.Cases++
	if rc.stopped != "" {
		rep.Incomplete++
	}
	rep.SendsSuppressed += rc.sends
	keys := make([]string, 0, len(rc.human))
	for _, st := range rc.orig.Steps {
		if rc.human[st.Key] != nil {
			keys = append(keys, st.Key)
		}
	}
	for _, key := range keys {
		h := rc.human[key]
		c, ok := rc.candidate(key, h)
		if !ok {
			continue
		}
		s := rep.step(key)
		switch {
		case c.Decision == "asked":
			s.Deferred++
			rep.Deferred++
			continue
		case agrees(h, c):
			s.Agreed++
			rep.Agreed++
		default:
			rep.DifferenceCount++
			if len(rep.Differences) < MaxWhatIfDifferences {
				ha := h.answer
				rep.Differences = append(rep.Differences, WhatIfDifference{RunID: rc.orig.ID, StepKey: key, Human: ha, Candidate: c})
			}
		}
		s.Compared++
		rep.Compared++
		s.AgreementRate = feedback.Rate(s.Agreed, s.Compared-s.Agreed)
	}
	rep.AgreementRate = feedback.Rate(rep.Agreed, rep.Compared-rep.Agreed)
}

// step returns the report's entry of key, added in key order when new.
func (rep *WhatIfReport) step(key string) *WhatIfStep {
	i, found := slices.BinarySearchFunc(rep.Steps, key, func(s WhatIfStep, k string) int { return strings.Compare(s.StepKey, k) })
	if !found {
		rep.Steps = slices.Insert(rep.Steps, i, WhatIfStep{StepKey: key})
	}
	return &rep.Steps[i]
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b any) bool {
	norm := func(v any) []byte {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return nil
		}
		raw, _ = json.Marshal(x)
		return raw
	}
	na, nb := norm(a), norm(b)
	return na != nil && bytes.Equal(na, nb)
}

// replayCaller answers a what-if's capability calls from the outputs the
// replayed run recorded; it reaches no provider.
type replayCaller struct {
	cases sync.Map // scratch run id -> *replayCase
}

// Call answers with the recorded output of the calling step; a send
// without one is answered {} and not made; any other call without one
// fails the step (permanently: the replay cannot know its result).
func (c *replayCaller) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	info, _ := RunFromContext(ctx)
	v, ok := c.cases.Load(info.ID)
	if !ok {
		return nil, errs.Invalidf(nil, "value_error", "what-if: no case for run %s", info.ID)
	}
	rc := v.(*replayCase)
	var args map[string]any
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return nil, errs.Invalidf(nil, "value_error", "what-if: arguments: %v", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.executed[info.StepKey] = args
	send := isSend(call.Capability)
	if send {
		rc.sends++
	}
	if out, ok := rc.outputs[info.StepKey]; ok {
		return out, nil
	}
	if send {
		return json.RawMessage(`{}`), nil
	}
	if rc.stopped == "" {
		rc.stopped = "the run recorded no output of step " + info.StepKey + " to answer the candidate's call of " + call.Capability
	}
	return nil, errs.Invalidf(nil, "value_error", "what-if: no recorded output of step %s", info.StepKey)
}

// shadowGate lets every action go on its own: a what-if measures the
// candidate's own controls, not the workspace's autonomy settings.
type shadowGate struct{}

func (shadowGate) Decide(context.Context, GateRequest) (GateDecision, error) {
	return GateDecision{Auto: true, Reason: "what-if"}, nil
}

func (shadowGate) Observe(context.Context, Outcome) error { return nil }

// shadowProcesses serves a scratch engine, which starts its runs with
// their version given and starts none from events.
type shadowProcesses struct{}

func (shadowProcesses) Load(store.Reader, string, string) (*process.Definition, error) {
	return nil, errs.NotFoundf("process not found")
}

func (shadowProcesses) GetVersion(store.Reader, string, string, int) (*process.Version, error) {
	return nil, errs.NotFoundf("process version not found")
}

func (shadowProcesses) ByEvent(store.Reader, string, string) ([]*process.Definition, error) {
	return nil, nil
}

func (shadowProcesses) OnChange(process.ChangeHook) {}
