package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
)

func (h *Handler) registerProcessRoutes() {
	app := access.AppProcesses
	h.handle("GET", "/v1/processes", app, access.PermProcessesRead, h.handleProcessList).List(process.Definition{}).Query("function")
	h.handle("POST", "/v1/processes", app, access.PermProcessesManage, h.handleProcessCreate).In(process.ProcessIn{}).Out(201, process.Definition{})
	h.handle("GET", "/v1/processes/step-types", app, access.PermProcessesRead, h.handleStepTypes).Out(200, []StepTypeOut{})
	h.handle("GET", "/v1/processes/:id", app, access.PermProcessesRead, h.handleProcessGet).Out(200, process.Definition{})
	h.handle("PATCH", "/v1/processes/:id", app, access.PermProcessesManage, h.handleProcessUpdate).In(process.ProcessPatch{}).Out(202, changeOut{}).Out(200, process.Definition{})
	h.handle("DELETE", "/v1/processes/:id", app, access.PermProcessesManage, h.handleProcessArchive).Out(204, nil)
	h.handle("GET", "/v1/processes/:id/versions", app, access.PermProcessesRead, h.handleProcessVersions).List(ProcessVersionOut{})
}

// handleProcessList serves GET /v1/processes: the tenant's processes, newest
// first, paged; ?enabled=true|false, ?function=, ?archived=true (archived
// ones instead of the others).
func (h *Handler) handleProcessList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	var (
		query process.Query
		vs    []errs.Violation
	)
	boolParam := func(name string) *bool {
		s := q.Get(name)
		if s == "" {
			return nil
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			vs = append(vs, errs.Violation{Loc: []any{"query", name}, Msg: "must be true or false", Type: "type_error"})
			return nil
		}
		return &b
	}
	query.Enabled = boolParam("enabled")
	if a := boolParam("archived"); a != nil {
		query.Archived = *a
	}
	query.Function = q.Get("function")
	vs = queryTooLong(vs, "function", query.Function, process.MaxFunctionLen) // as ProcessIn's function
	if err := errs.Validation(vs...); err != nil {
		return err
	}
	defs, next, err := h.ws.Processes().List(c.Context(), c.Tenant(), query, p)
	if err != nil {
		return err
	}
	return c.List(defs, next)
}

// handleProcessCreate serves POST /v1/processes: 201 with the process
// (version 1) and its Location.
func (h *Handler) handleProcessCreate(c *request) error {
	body, err := c.jsonBody(reflect.TypeFor[process.ProcessIn]())
	if err != nil {
		return err
	}
	in, err := process.DecodeIn(body)
	if err != nil {
		return inBody(err)
	}
	d, err := h.ws.Processes().Create(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/processes/"+d.ID, withWarnings(d))
}

// ProcessAnswer is the answer to a process create or update: the process
// and the warnings about it (a list, empty when there is nothing to say).
type ProcessAnswer struct {
	*process.Definition
	Warnings []errs.Violation `json:"warnings"`
}

// withWarnings adds to d what its creator should know: a trigger that
// listens to an event the process's own runs emit (type self_trigger).
// Such a run never starts its own process again (the engine's loop guard),
// so the warning says the trigger will not fire for its own runs.
func withWarnings(d *process.Definition) ProcessAnswer {
	out := ProcessAnswer{Definition: d, Warnings: []errs.Violation{}}
	if d.Trigger.Type != process.TriggerEvent || d.Trigger.Event == "" {
		return out
	}
	if slices.Contains(runEvents(d), d.Trigger.Event) {
		out.Warnings = append(out.Warnings, errs.Violation{Loc: []any{"body", "trigger", "event"}, Type: "self_trigger",
			Msg: "this process's own runs emit " + d.Trigger.Event + ": they will not start it again (a run never starts " +
				"its own process through its own chain of events, and a chain stops at depth " +
				strconv.Itoa(runengine.MaxChainDepth) + ")"})
	}
	return out
}

// runEvents lists the events runs of d may emit: the processes app's
// (the run's own), the tasks app's where a step makes a task or asks for an
// approval (human_task, execute), and those of the apps whose capabilities
// its steps call.
func runEvents(d *process.Definition) []string {
	apps := capability.BuiltinApps()
	byID := map[string]capability.App{}
	for _, a := range apps {
		byID[a.ID] = a
	}
	evs := slices.Clone(byID[access.AppProcesses].Events.Emits)
	for _, st := range d.Steps {
		if st.Type == process.StepHumanTask || st.Type == process.StepExecute {
			evs = append(evs, byID[access.AppTasks].Events.Emits...)
		}
		if st.Capability == "" {
			continue
		}
		for _, a := range apps {
			if slices.Contains(a.Capabilities, st.Capability) {
				evs = append(evs, a.Events.Emits...)
			}
		}
	}
	return evs
}

// handleProcessGet serves GET /v1/processes/:id (archived ones too, with
// archived true).
func (h *Handler) handleProcessGet(c *request) error {
	d, err := h.ws.Processes().Get(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// changeOut is the 202 answer to an update that waits for a second person
// (PATCH /v1/processes/{id}, PATCH /v1/automation ...).
type changeOut struct {
	Change *access.Change `json:"change"`
}

// handleProcessUpdate serves PATCH /v1/processes/:id: 200 with the process,
// or 202 {change} when the update widens a control and four-eyes is on.
func (h *Handler) handleProcessUpdate(c *request) error {
	if _, err := h.ws.Processes().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	body, err := c.jsonBody(reflect.TypeFor[process.ProcessPatch]())
	if err != nil {
		return err
	}
	patch, err := process.DecodePatch(body)
	if err != nil {
		return inBody(err)
	}
	d, ch, err := h.ws.Processes().Update(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"), patch)
	if err != nil {
		return inBody(err)
	}
	if ch != nil {
		change, err := h.ws.Access().Change(c.Context(), c.Tenant(), ch.ID)
		if err != nil {
			return err
		}
		return c.waiting(ch.ID, changeOut{Change: change})
	}
	return c.JSON(http.StatusOK, withWarnings(d))
}

// handleProcessArchive serves DELETE /v1/processes/:id: archives it (204);
// runs in flight finish on their version; a second DELETE is 404.
func (h *Handler) handleProcessArchive(c *request) error {
	if err := h.ws.Processes().Archive(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleProcessVersions serves GET /v1/processes/:id/versions: oldest first,
// paged.
func (h *Handler) handleProcessVersions(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	vs, next, err := h.ws.Processes().Versions(c.Context(), c.Tenant(), c.Param("id"), p)
	if err != nil {
		return err
	}
	out := make([]ProcessVersionOut, len(vs))
	for i, v := range vs {
		out[i] = ProcessVersionOut{Version: v.Version, Trigger: v.Trigger, Steps: v.Steps, Search: v.Search,
			CreatedAt: v.CreatedAt.UTC(), CreatedBy: v.CreatedBy}
	}
	return c.List(out, next)
}

// ProcessVersionOut is one version of a process as the API lists it.
type ProcessVersionOut struct {
	Version int             `json:"version"`
	Trigger process.Trigger `json:"trigger"`
	Steps   []process.Step  `json:"steps"`
	// Search is the version's declared search fields, left out when none
	// (as the process's own).
	Search    map[string]string `json:"search,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	CreatedBy string            `json:"created_by"`
}

// StepTypeOut is a step type as GET /v1/processes/step-types lists it.
type StepTypeOut struct {
	Type         string          `json:"type"`
	Label        string          `json:"label"`
	Description  string          `json:"description"`
	ConfigSchema json.RawMessage `json:"config_schema"`
	// Capabilities are what a step of the type calls by default.
	Capabilities []string `json:"capabilities"`
	// CanRun is false when a capability the type calls has no provider
	// the tenant can use; Reason then says which and why.
	CanRun bool    `json:"can_run"`
	Reason *string `json:"reason"`
}

// handleStepTypes serves GET /v1/processes/step-types: each step type with
// its config schema and whether it can run in the tenant now.
func (h *Handler) handleStepTypes(c *request) error {
	types := process.StepTypes()
	out := make([]StepTypeOut, len(types))
	reg := h.ws.Capabilities()
	for i, t := range types {
		o := StepTypeOut{Type: t.Type, Label: t.Label, Description: t.Description, ConfigSchema: t.ConfigSchema,
			Capabilities: t.Capabilities, CanRun: true}
		for _, capID := range t.Capabilities {
			_, err := reg.Resolve(c.Context(), c.Tenant(), capID)
			if err != nil && !errors.Is(err, errs.Unavailable) && !errors.Is(err, errs.Invalid) {
				return err
			}
			if err != nil {
				reason := "needs " + capID + ": " + publicOr(err, "it has no provider in this workspace")
				if t.Type == process.StepIntake {
					reason += " (intake can still read text, not documents)"
				}
				o.CanRun, o.Reason = false, &reason
				break
			}
		}
		out[i] = o
	}
	return c.JSON(http.StatusOK, out)
}
