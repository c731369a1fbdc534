package httpapi

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// registerRunControlRoutes declares the routes that steer runs: pause and
// resume of a run and of a process, rerun from a step, and bulk jobs.
func (h *Handler) registerRunControlRoutes() {
	h.handle("POST", "/v1/process-runs/bulk", access.AppProcesses, access.PermProcessesManage, h.handleRunBulk).In(BulkIn{}).Out(202, JobOut{})
	h.handle("POST", "/v1/process-runs/:id/pause", access.AppProcesses, access.PermRunsStart, h.handleRunPause).Out(200, runengine.Run{})
	h.handle("POST", "/v1/process-runs/:id/resume", access.AppProcesses, access.PermRunsStart, h.handleRunResume).Out(200, runengine.Run{})
	h.handle("POST", "/v1/process-runs/:id/rerun", access.AppProcesses, access.PermRunsStart, h.handleRunRerun).In(RerunIn{}).Out(201, runengine.Run{})
	h.handle("GET", "/v1/processes/:id/pause", access.AppProcesses, access.PermProcessesRead, h.handleProcessPauseGet).Out(200, runengine.ProcessPause{})
	h.handle("POST", "/v1/processes/:id/pause", access.AppProcesses, access.PermProcessesManage, h.handleProcessPause).Out(200, runengine.ProcessPause{})
	h.handle("POST", "/v1/processes/:id/resume", access.AppProcesses, access.PermProcessesManage, h.handleProcessResume).Out(200, runengine.ProcessPause{})
	h.handle("GET", "/v1/jobs/:id", access.AppProcesses, access.PermProcessesRead, h.handleJobGet).Out(200, runengine.Job{})
	h.handle("POST", "/v1/jobs/:id/cancel", access.AppProcesses, access.PermProcessesManage, h.handleJobCancel).Out(200, runengine.Job{})
}

// handleRunPause serves POST /v1/process-runs/:id/pause.
func (h *Handler) handleRunPause(c *request) error {
	if err := h.runNoBody(c); err != nil {
		return err
	}
	run, err := h.ws.Engine().Pause(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// handleRunResume serves POST /v1/process-runs/:id/resume.
func (h *Handler) handleRunResume(c *request) error {
	if err := h.runNoBody(c); err != nil {
		return err
	}
	run, err := h.ws.Engine().Resume(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// runNoBody checks that the run exists (another tenant's is a 404 whatever
// the body) and that the request carries no body but {}.
func (h *Handler) runNoBody(c *request) error {
	if _, err := h.ws.Engine().GetRun(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.noBody()
}

// RerunIn is the body of POST /v1/process-runs/{id}/rerun.
type RerunIn struct {
	FromStep string `json:"from_step" jsonschema:"required,minLength=1,maxLength=100"`
}

// handleRunRerun serves POST /v1/process-runs/:id/rerun.
func (h *Handler) handleRunRerun(c *request) error {
	if _, err := h.ws.Engine().GetRun(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in RerunIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	run, err := h.ws.Engine().Rerun(c.Context(), c.Tenant(), c.Param("id"), in.FromStep, c.P.Actor())
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/process-runs/"+run.ID, run)
}

// NoExtraProperties makes an unknown field of RerunIn a 422.
func (RerunIn) NoExtraProperties() {}

// NoExtraProperties makes an unknown field of BulkIn a 422.
func (BulkIn) NoExtraProperties() {}

// BulkFilterIn selects the runs of a bulk job.
type BulkFilterIn struct {
	ProcessID string `json:"process_id,omitempty" jsonschema:"maxLength=100"`
	Status    string `json:"status,omitempty" jsonschema:"enum=running,enum=waiting,enum=paused,enum=completed,enum=failed,enum=rejected,enum=cancelled"`
	Overdue   bool   `json:"overdue,omitempty"`
	// Q and Search select runs as GET /v1/process-runs's q and search.{name}.
	Q      string            `json:"q,omitempty" jsonschema:"maxLength=200"`
	Search map[string]string `json:"search,omitempty" jsonschema:"nullable"`
}

// BulkIn is the body of POST /v1/process-runs/bulk.
type BulkIn struct {
	Filter BulkFilterIn `json:"filter" jsonschema:"required"`
	Action string       `json:"action" jsonschema:"required,enum=cancel,enum=pause,enum=resume,enum=retry"`
}

// JobOut answers a request that started a job.
type JobOut struct {
	Job *runengine.Job `json:"job"`
}

// handleRunBulk serves POST /v1/process-runs/bulk: 202 with the job.
func (h *Handler) handleRunBulk(c *request) error {
	var in BulkIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	if vs := checkSearchFilters(in.Filter.Search, "body", "filter", "search"); len(vs) > 0 {
		return errs.Validation(vs...)
	}
	j, err := h.ws.Engine().BulkRuns(c.Context(), c.Tenant(), runengine.JobFilter{ProcessID: in.Filter.ProcessID,
		Status: runengine.RunStatus(in.Filter.Status), Overdue: in.Filter.Overdue, Q: in.Filter.Q, Search: in.Filter.Search}, in.Action, c.P.Actor())
	if err != nil {
		return err
	}
	c.W.Header().Set("Location", c.h.opts.BasePath+"/v1/jobs/"+j.ID)
	return c.JSON(http.StatusAccepted, JobOut{Job: j})
}

// handleJobGet serves GET /v1/jobs/:id.
func (h *Handler) handleJobGet(c *request) error {
	j, err := h.ws.Engine().GetJob(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// handleJobCancel serves POST /v1/jobs/:id/cancel: 200 with the job,
// cancelled; a job no longer running is a 409.
func (h *Handler) handleJobCancel(c *request) error {
	if _, err := h.ws.Engine().GetJob(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	if err := c.noBody(); err != nil {
		return err
	}
	j, err := h.ws.Engine().CancelJob(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// handleProcessPauseGet serves GET /v1/processes/:id/pause: whether the
// process is paused.
func (h *Handler) handleProcessPauseGet(c *request) error {
	if err := h.ws.Processes().Check(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	p, err := h.ws.Engine().ProcessPaused(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// handleProcessPause serves POST /v1/processes/:id/pause. An archived
// process is a 409, as every other change of it: it starts no run a pause
// could hold. (Its resume is not refused: a process paused before it was
// archived has runs the resume must let finish.)
func (h *Handler) handleProcessPause(c *request) error {
	def, err := h.ws.Processes().Get(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	if def.Archived {
		return errs.Conflictf("process is archived")
	}
	if err := c.noBody(); err != nil {
		return err
	}
	p, err := h.ws.Engine().PauseProcess(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// handleProcessResume serves POST /v1/processes/:id/resume.
func (h *Handler) handleProcessResume(c *request) error {
	if err := h.ws.Processes().Check(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	if err := c.noBody(); err != nil {
		return err
	}
	p, err := h.ws.Engine().ResumeProcess(c.Context(), c.Tenant(), c.Param("id"), c.P.Actor())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// maxRunQ bounds GET /v1/process-runs?q=, as BulkFilterIn's maxLength
// bounds the bulk filter's q.
const maxRunQ = 200

// maxFilterID bounds every id filter a route declares (queryIDsTooLong),
// GET /v1/process-runs?process_id= among them, as BulkFilterIn's maxLength
// bounds the bulk filter's process_id.
const maxFilterID = 100

// queryTooLong appends to vs the violation of query parameter name, whose
// value is v, when v is over max characters: the message and type a body
// field's maxLength gives.
func queryTooLong(vs []errs.Violation, name, v string, max int) []errs.Violation {
	if utf8.RuneCountInString(v) <= max {
		return vs
	}
	return append(vs, errs.Violation{Loc: []any{"query", name}, Msg: fmt.Sprintf("must be at most %d characters", max), Type: "string_too_long"})
}

// searchFieldName is the form of a declared search field's name.
var searchFieldName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// runSearchQuery reads q and search.{name} of a run list into rq.
func runSearchQuery(q url.Values, rq *runengine.RunQuery) []errs.Violation {
	var vs []errs.Violation
	if q.Has("q") {
		rq.Q = q.Get("q")
		switch {
		case utf8.RuneCountInString(rq.Q) > maxRunQ:
			vs = append(vs, errs.Violation{Loc: []any{"query", "q"}, Msg: fmt.Sprintf("must be at most %d characters", maxRunQ), Type: "string_too_long"})
		default:
			if p := runengine.SearchQueryProblem(rq.Q); p != "" {
				vs = append(vs, errs.Violation{Loc: []any{"query", "q"}, Msg: p, Type: "value_error"})
			}
		}
	}
	for key, values := range q {
		name, ok := strings.CutPrefix(key, "search.")
		if !ok {
			continue
		}
		if rq.Search == nil {
			rq.Search = map[string]string{}
		}
		rq.Search[name] = values[0]
	}
	return append(vs, checkSearchFilters(rq.Search, "query", "search")...)
}

// checkSearchFilters checks the declared-field filters of a run query.
func checkSearchFilters(search map[string]string, loc ...any) []errs.Violation {
	var vs []errs.Violation
	if len(search) > process.MaxSearchFields {
		vs = append(vs, errs.Violation{Loc: loc, Msg: "at most 10 search fields", Type: "too_long"})
	}
	for _, name := range slices.Sorted(maps.Keys(search)) {
		v := search[name]
		l := append(append([]any{}, loc...), name)
		if !searchFieldName.MatchString(name) {
			vs = append(vs, errs.Violation{Loc: l, Msg: "is not a search field name (lower-case letters, digits and _)", Type: "value_error"})
		}
		if len(v) > runengine.MaxSearchValue {
			vs = append(vs, errs.Violation{Loc: l, Msg: "must have at most 200 bytes", Type: "string_too_long"})
		}
	}
	return vs
}
