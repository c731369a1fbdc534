package runengine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The reflection forms appendRun must equal: the stored form is Run with
// every field; the view leaves out the engine's state.
type (
	reflectStored struct {
		ID             string              `json:"id"`
		Tenant         string              `json:"-"`
		ProcessID      string              `json:"process_id"`
		ProcessName    string              `json:"process_name"`
		ProcessVersion int                 `json:"process_version"`
		Function       string              `json:"function"`
		Status         RunStatus           `json:"status"`
		Subject        Subject             `json:"subject"`
		Trigger        RunTrigger          `json:"trigger"`
		CurrentStep    *string             `json:"current_step"`
		Steps          []reflectStoredStep `json:"steps"`
		Overdue        bool                `json:"overdue"`
		StartedAt      time.Time           `json:"started_at"`
		CompletedAt    *time.Time          `json:"completed_at"`
		Error          *string             `json:"error"`
		MinutesSaved   int                 `json:"minutes_saved"`
		RerunOf        string              `json:"rerun_of,omitempty"`
		RerunFromStep  string              `json:"rerun_from_step,omitempty"`
		Search         map[string]string   `json:"search,omitempty"`
		WaitingReason  string              `json:"waiting_reason,omitempty"`
		Priority       string              `json:"priority,omitempty"`
		Cursor         int                 `json:"cursor"`
		StartedBy      string              `json:"started_by,omitempty"`
		Paused         *pauseState         `json:"paused,omitempty"`
	}
	reflectStoredStep struct {
		reflectStep
		Internal stepInternal `json:"internal,omitzero"`
	}
	reflectStep struct {
		Key         string     `json:"key"`
		Type        string     `json:"type"`
		Name        string     `json:"name,omitempty"`
		Status      string     `json:"status"`
		StartedAt   *time.Time `json:"started_at"`
		CompletedAt *time.Time `json:"completed_at"`
		Output      any        `json:"output"`
		Error       *string    `json:"error"`
		ApprovalID  *string    `json:"approval_id"`
		TaskID      *string    `json:"task_id"`
		Attempts    int        `json:"attempts"`
	}
	reflectView struct {
		ID             string            `json:"id"`
		ProcessID      string            `json:"process_id"`
		ProcessName    string            `json:"process_name"`
		ProcessVersion int               `json:"process_version"`
		Function       string            `json:"function"`
		Status         string            `json:"status"`
		Subject        Subject           `json:"subject"`
		Trigger        RunTrigger        `json:"trigger"`
		CurrentStep    *string           `json:"current_step"`
		Steps          []reflectStep     `json:"steps"`
		Overdue        bool              `json:"overdue"`
		StartedAt      time.Time         `json:"started_at"`
		CompletedAt    *time.Time        `json:"completed_at"`
		Error          *string           `json:"error"`
		MinutesSaved   int               `json:"minutes_saved"`
		RerunOf        string            `json:"rerun_of,omitempty"`
		RerunFromStep  string            `json:"rerun_from_step,omitempty"`
		Search         map[string]string `json:"search,omitempty"`
		WaitingReason  string            `json:"waiting_reason,omitempty"`
		Priority       string            `json:"priority,omitempty"`
	}
)

func storedOf(r *Run) reflectStored {
	v := viewOf(r)
	s := reflectStored{ID: r.ID, Tenant: r.Tenant, ProcessID: r.ProcessID, ProcessName: r.ProcessName,
		ProcessVersion: r.ProcessVersion, Function: r.Function, Status: r.Status, Subject: r.Subject,
		Trigger: r.Trigger, CurrentStep: r.CurrentStep, Overdue: r.Overdue, StartedAt: r.StartedAt,
		CompletedAt: r.CompletedAt, Error: r.Error, MinutesSaved: r.MinutesSaved, Cursor: r.Cursor,
		StartedBy: r.StartedBy, RerunOf: r.RerunOf, RerunFromStep: r.RerunFromStep, Search: r.Search,
		WaitingReason: r.WaitingReason, Priority: r.Priority, Paused: r.Paused}
	if r.Steps != nil {
		s.Steps = []reflectStoredStep{}
	}
	for i := range r.Steps {
		s.Steps = append(s.Steps, reflectStoredStep{v.Steps[i], r.Steps[i].internal})
	}
	return s
}

func viewOf(r *Run) reflectView {
	v := reflectView{r.ID, r.ProcessID, r.ProcessName, r.ProcessVersion, r.Function, string(r.Status), r.Subject, r.Trigger,
		r.CurrentStep, nil, r.Overdue, r.StartedAt, r.CompletedAt, r.Error, r.MinutesSaved, r.RerunOf, r.RerunFromStep, r.Search, r.WaitingReason, r.Priority}
	if r.Steps != nil {
		v.Steps = []reflectStep{}
	}
	for _, s := range r.Steps {
		v.Steps = append(v.Steps, reflectStep{s.Key, s.Type, s.Name, string(s.Status), s.StartedAt, s.CompletedAt, s.Output,
			s.Error, s.ApprovalID, s.TaskID, s.Attempts})
	}
	return v
}

func encodeCases() map[string]*Run {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	later := at.Add(90*time.Minute + 1500*time.Nanosecond)
	str := func(s string) *string { return &s }
	amount := int64(-1250)
	return map[string]*Run{
		"empty":     {},
		"nil steps": {ID: "run_1", Status: RunRunning, StartedAt: at},
		"no steps":  {ID: "run_1", Steps: []StepRun{}, StartedAt: at.In(time.FixedZone("CET", 3600))},
		"event run": {ID: "run_2", ProcessID: "prc_1", ProcessName: `Pay "big" <invoices> & more`, ProcessVersion: 3,
			Function: "finance", Status: RunCompleted, Subject: Subject{Type: "invoice", Label: "INV-1 ✓\n"},
			Trigger: RunTrigger{Type: "event", Event: str("docs.document.validated"), EventID: "evt_1",
				Data:  map[string]any{"z": []any{json.Number("1.50"), nil, true}, "a": map[string]any{"b": "c"}},
				Cause: &Cause{RunID: "run_0", RootRunID: "run_r", Depth: 2, Processes: []string{"prc_a", "prc_\"b\""}}},
			Overdue: true, StartedAt: at, CompletedAt: &later, Error: str("step x: failed\t"), MinutesSaved: 25,
			Cursor: 2, StartedBy: "usr_1", RerunOf: "run_0", RerunFromStep: "pay",
			Search: map[string]string{"supplier": "acme \"gmbh\"", "amount_cents": "120000"}},
		"rate": {ID: "run_5", Status: RunWaiting, Priority: PriorityHigh, StartedAt: at, WaitingReason: "rate limit of crm.: 10 per 1s",
			Steps: []StepRun{{Key: "a", Status: StepRunning, internal: stepInternal{RateReserved: true, WaitToken: "rate-1"}}}},
		"paused": {ID: "run_4", Status: RunPaused, StartedAt: at, Paused: &pauseState{From: RunWaiting, ByProcess: true,
			At: at, Timers: []string{"retry-1"}, Events: []heldEvent{{Name: "crm.reply", ID: "evt_1",
				Data: map[string]any{"n": json.Number("2")}, Key: []byte{0, 1, 'x'}}}}},
		"steps": {ID: "run_3", Status: RunWaiting, CurrentStep: str("b"), StartedAt: at, Cursor: 1,
			Trigger: RunTrigger{Type: "manual", Data: map[string]any{}},
			Steps: []StepRun{
				{Key: "a", Type: "execute", Name: "Pay", Status: StepCompleted, StartedAt: &at, CompletedAt: &later,
					Output: map[string]any{"id": "p_1", "amount_cents": json.Number("120000")}, Attempts: 2,
					internal: stepInternal{Approved: true, Args: map[string]any{"to": "a@b.example"}, Auto: true,
						Sample: true, AmountSeen: &amount}},
				{Key: "b", Type: "monitor", Status: StepWaiting, StartedAt: &at, ApprovalID: str("apr_1"), TaskID: str("tsk_1"),
					Output: []any{"x", 1.25}, Error: str("retrying"),
					internal: stepInternal{Reminders: 2, Checks: 3, Deadline: &later, WaitToken: "check-1-2",
						WaitEvent: "crm.reply", SLAFired: true}},
				{Key: "c", Type: "wait", Status: StepPending, internal: stepInternal{Args: map[string]any{}}},
				{Key: "d", Type: "draft", Status: StepPending, Output: "text"},
			}},
	}
}

func TestAppendRunMatchesReflection(t *testing.T) {
	t.Parallel()
	for name, r := range encodeCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The stored form leaves empty fields out: it must decode to
			// what encoding/json's full form decodes to.
			full, err := json.Marshal(storedOf(r))
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendRun(nil, r, true)
			if err != nil {
				t.Fatal(err)
			}
			var fromFull, fromGot reflectStored
			if err := json.Unmarshal(full, &fromFull); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &fromGot); err != nil {
				t.Fatalf("stored form %s: %v", got, err)
			}
			if diff := cmp.Diff(fromFull, fromGot, cmp.AllowUnexported(reflectStoredStep{})); diff != "" {
				t.Errorf("stored form decodes differently (-full +stored):\n%s\nstored: %s", diff, got)
			}
			if len(got) > len(full) {
				t.Errorf("stored form (%d bytes) is longer than the full one (%d)", len(got), len(full))
			}
			want, err := json.Marshal(viewOf(r))
			if err != nil {
				t.Fatal(err)
			}
			got, err = json.Marshal(r)
			if err != nil || string(got) != string(want) {
				t.Errorf("view (err %v):\n got %s\nwant %s", err, got, want)
			}
		})
	}
}

func TestAppendRunErrors(t *testing.T) {
	t.Parallel()
	bad := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, r := range map[string]*Run{
		"output":   {Steps: []StepRun{{Output: map[string]any{"f": func() {}}}}},
		"time":     {StartedAt: bad},
		"deadline": {Steps: []StepRun{{internal: stepInternal{Deadline: &bad}}}},
		"data":     {Trigger: RunTrigger{Data: map[string]any{"c": make(chan int)}}},
	} {
		if _, err := appendRun(nil, r, true); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestEventJSONMatchesReflection(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 9, 0, 0, 5000, time.UTC)
	for _, ev := range []*Event{
		{},
		{ID: "evt_1", Tenant: "ten_1", Name: "process.run.completed", At: at,
			Data: map[string]any{"run_id": "run_1", "subject": Subject{Type: "invoice", Label: "<INV-1>"}, "n": json.Number("3")}},
		{ID: "evt_2", Name: "process.run.completed", Cause: &Cause{RunID: "run_1", RootRunID: "run_1", Processes: []string{"prc_1"}}},
		{ID: "evt_3", Cause: &Cause{}},
	} {
		type plain Event
		want, err := json.Marshal((*plain)(ev))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev.appendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Errorf("event (err %v):\n got %s\nwant %s", err, got, want)
		}
	}
}

func TestDecodeStoredRunMatchesReflection(t *testing.T) {
	t.Parallel()
	for name, r := range encodeCases() {
		raw, err := appendRun(nil, r, true)
		if err != nil {
			t.Fatal(err)
		}
		want := new(Run)
		if err := json.Unmarshal(raw, want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeStoredRun(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(StepRun{}, stepInternal{})); diff != "" {
			t.Errorf("%s: (-json.Unmarshal +decodeStoredRun):\n%s", name, diff)
		}
	}
	if _, err := decodeStoredRun([]byte(`{"steps":[{"internal":1}]}`)); err == nil {
		t.Error("a bad record decoded")
	}
}

// storedCases is encodeCases as the engine stores them.
func storedCases(tb testing.TB) [][]byte {
	var raws [][]byte
	for _, r := range encodeCases() {
		raw, err := appendRun(nil, r, true)
		if err != nil {
			tb.Fatal(err)
		}
		raws = append(raws, raw)
	}
	return raws
}

// BenchmarkDecodeStoredRun decodes encodeCases' records with the scanner
// (falling back where it does) and with encoding/json alone.
func BenchmarkDecodeStoredRun(b *testing.B) {
	raws := storedCases(b)
	for _, c := range []struct {
		name   string
		decode func([]byte) (*Run, error)
	}{{"scanner", decodeStoredRun}, {"json", decodeStoredRunJSON}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := c.decode(raws[i%len(raws)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
