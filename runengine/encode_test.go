package runengine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
		RerunJob       string              `json:"rerun_job,omitempty"`
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
		RerunJob       string            `json:"rerun_job,omitempty"`
		Search         map[string]string `json:"search,omitempty"`
		WaitingReason  string            `json:"waiting_reason,omitempty"`
		Priority       string            `json:"priority,omitempty"`
		Paused         *reflectPaused    `json:"paused,omitempty"`
	}
	// reflectPaused is what a paused run's JSON shows of its pause.
	reflectPaused struct {
		From      RunStatus `json:"from"`
		At        time.Time `json:"at"`
		ByProcess bool      `json:"by_process,omitempty"`
		SlotWait  bool      `json:"slot_wait,omitempty"`
	}
)

func storedOf(r *Run) reflectStored {
	v := viewOf(r)
	s := reflectStored{ID: r.ID, Tenant: r.Tenant, ProcessID: r.ProcessID, ProcessName: r.ProcessName,
		ProcessVersion: r.ProcessVersion, Function: r.Function, Status: r.Status, Subject: r.Subject,
		Trigger: r.Trigger, CurrentStep: r.CurrentStep, Overdue: r.Overdue, StartedAt: r.StartedAt,
		CompletedAt: r.CompletedAt, Error: r.Error, MinutesSaved: r.MinutesSaved, Cursor: r.Cursor,
		StartedBy: r.StartedBy, RerunOf: r.RerunOf, RerunFromStep: r.RerunFromStep, RerunJob: r.RerunJob, Search: r.Search,
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
		r.CurrentStep, nil, r.Overdue, r.StartedAt, r.CompletedAt, r.Error, r.MinutesSaved, r.RerunOf, r.RerunFromStep, r.RerunJob, r.Search, r.WaitingReason, r.Priority, nil}
	if p := r.Paused; p != nil {
		v.Paused = &reflectPaused{From: p.From, At: p.At, ByProcess: p.ByProcess, SlotWait: p.SlotWait}
	}
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
			Cursor: 2, StartedBy: "usr_1", RerunOf: "run_0", RerunFromStep: "pay", RerunJob: "job_0",
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
		// The automatic flag where form 2 leaves it out (a started execute
		// step no person approved) and where it writes it.
		"auto": {ID: "run_6", Status: RunRunning, StartedAt: at, CompletedAt: &at, Cursor: 4,
			Steps: []StepRun{
				{Key: "a", Type: "execute", Status: StepCompleted, StartedAt: &at, CompletedAt: &later,
					Output: map[string]any{}, internal: stepInternal{Auto: true}},
				{Key: "b", Type: "execute", Status: StepFailed, StartedAt: &at, CompletedAt: &at},
				{Key: "c", Type: "execute", Status: StepCompleted, StartedAt: &at, internal: stepInternal{Approved: true}},
				{Key: "d", Type: "execute", Status: StepCompleted, StartedAt: &at, internal: stepInternal{Approved: true, Auto: true}},
				{Key: "e", Type: "follow_up", Status: StepRunning, StartedAt: &at, internal: stepInternal{Auto: true}},
				{Key: "f", Type: "execute", Status: StepPending, internal: stepInternal{Auto: true}},
				{Key: "g", Type: "execute", Status: StepPending},
			}},
		// Times the stored form writes as RFC 3339: not in UTC, below a
		// microsecond, or out of the years it writes as numbers.
		"odd times": {ID: "run_7", Status: RunCompleted, StartedAt: at.Add(3 * time.Nanosecond),
			CompletedAt: ptrTime(at.In(time.FixedZone("", -5*3600))),
			Steps: []StepRun{
				{Key: "a", Type: "execute", Status: StepCompleted, StartedAt: ptrTime(at.In(time.Local)),
					CompletedAt: ptrTime(time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC)),
					internal:    stepInternal{Deadline: ptrTime(time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC))}},
				{Key: "b", Type: "wait", Status: StepWaiting, StartedAt: ptrTime(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
					internal: stepInternal{Deadline: ptrTime(at.Add(-24 * time.Hour))}},
			}},
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// decodedDiff compares two decoded runs: by go-cmp (which compares times
// by their instant) and by the reflection forms' JSON (which shows their
// offsets), empty when both agree.
func decodedDiff(want, got *Run) string {
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(StepRun{}, stepInternal{})); diff != "" {
		return diff
	}
	w, err := json.Marshal(storedOf(want))
	if err != nil {
		return err.Error()
	}
	g, err := json.Marshal(storedOf(got))
	if err != nil {
		return err.Error()
	}
	if string(w) != string(g) {
		return "want " + string(w) + "\n got " + string(g)
	}
	return ""
}

func TestAppendRunMatchesReflection(t *testing.T) {
	t.Parallel()
	for name, r := range encodeCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The stored form leaves empty fields and defaults out, and
			// writes times as numbers: it must decode to what encoding/json's
			// full form (a record of form 1) decodes to.
			want, full := form1Decoded(t, r)
			got, err := appendRun(nil, r, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range storedDecoders() {
				dec, err := d.decode(got)
				if err != nil {
					t.Fatalf("%s: stored form %s: %v", d.name, got, err)
				}
				if diff := decodedDiff(want, dec); diff != "" {
					t.Errorf("%s: stored form decodes differently (-full +stored):\n%s\nstored: %s", d.name, diff, got)
				}
			}
			if len(got) > len(full) {
				t.Errorf("stored form (%d bytes) is longer than the full one (%d)", len(got), len(full))
			}
			view, err := json.Marshal(viewOf(r))
			if err != nil {
				t.Fatal(err)
			}
			got, err = json.Marshal(r)
			if err != nil || string(got) != string(view) {
				t.Errorf("view (err %v):\n got %s\nwant %s", err, got, view)
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

// TestDecodeStoredRunOldForms reads records of form 1, as the engine
// stored them before form 2 (testdata/form1, written by that encoder), and
// of form 2, as it stored them before form 3 (testdata/form2), and of
// form 3, as it stored them before form 4 (testdata/form3, binary), into
// the runs that engine read from them: their reflection form (.want) and
// their API view (.view), both written by that engine, must come out byte
// for byte. Stored again, in form 4, each reads back the same.
func TestDecodeStoredRunOldForms(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"form1", "form2", "form3"} {
		ext, decoders := ".json", storedDecoders()
		if form == "form3" {
			ext, decoders = ".bin", []storedDecoder{{"binary", decodeOldForm}}
		}
		files, err := filepath.Glob("testdata/" + form + "/*" + ext)
		if err != nil || len(files) < 9 {
			t.Fatalf("%s records: %v %v", form, files, err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if form == "form3" && raw[0] != idForm {
				t.Fatalf("%s is not of form 3: %q", f, raw)
			}
			base := strings.TrimSuffix(f, ext)
			wantFull, err := os.ReadFile(base + ".want")
			if err != nil {
				t.Fatal(err)
			}
			wantView, err := os.ReadFile(base + ".view")
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range decoders {
				r, err := d.decode(raw)
				if err != nil {
					t.Fatalf("%s %s: %v", f, d.name, err)
				}
				full, err := json.Marshal(storedOf(r))
				if err != nil || string(full) != string(wantFull) {
					t.Errorf("%s %s (err %v):\n got %s\nwant %s", f, d.name, err, full, wantFull)
				}
				view, err := json.Marshal(r)
				if err != nil || string(view) != string(wantView) {
					t.Errorf("%s %s view (err %v):\n got %s\nwant %s", f, d.name, err, view, wantView)
				}
				if r.ID == "" {
					r.ID = "run_key" // the key's id, which form 4 leaves to the key
				}
				again, err := appendStoredRun(nil, r)
				if err != nil {
					t.Fatal(err)
				}
				r2, err := decodeStoredRun(r.ID, again)
				if err != nil {
					t.Fatalf("%s: %v: %q", f, err, again)
				}
				if diff := decodedDiff(r, r2); diff != "" {
					t.Errorf("%s stored again (-%s +form 4):\n%s", f, form, diff)
				}
			}
		}
	}
	if _, err := decodeOldForm([]byte(`{"steps":[{"internal":1}]}`)); err == nil {
		t.Error("a bad record decoded")
	}
}

// storedDecoders are the two readings of a stored run the tests hold to
// the same result: decodeStoredRun (the scanner, falling back where it
// declines) and encoding/json alone.
func storedDecoders() []storedDecoder {
	return []storedDecoder{{"scanner", decodeOldForm}, {"encoding/json", decodeStoredRunJSON}}
}

type storedDecoder struct {
	name   string
	decode func([]byte) (*Run, error)
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
	}{{"scanner", decodeOldForm}, {"json", decodeStoredRunJSON}} {
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

// FuzzStoredRunRoundTrip stores runs of fuzzed strings, times (any
// instant, precision and zone) and flags in forms 2 and 3, and reads them
// back: every decoder must give what the record of form 1 (encoding/json's
// full form) gives, so the API view comes out byte for byte as it did.
func FuzzStoredRunRoundTrip(f *testing.F) {
	f.Add("run_1", "execute", int64(1772442000000000), int64(1500), int64(-3), int8(0), uint16(0b1011), "out")
	f.Add("", "wait", int64(-62135596800000000), int64(0), int64(1), int8(-5), uint16(0xffff), "\xff<&>")
	f.Add("run_\u2028", "", int64(253402300799999999), int64(1), int64(1<<40), int8(13), uint16(0b100), "")
	f.Fuzz(func(t *testing.T, id, stepType string, start, d1, d2 int64, zone int8, flags uint16, out string) {
		zoned := func(tm time.Time, bit uint) time.Time {
			switch {
			case flags&(1<<bit) == 0:
				return tm.UTC()
			case zone == 0:
				return tm.In(time.Local)
			}
			return tm.In(time.FixedZone("", int(zone%96)*900)) // within RFC 3339's ±23:59
		}
		// Times in microseconds, some with nanoseconds added.
		at := func(us int64, bit uint) time.Time {
			tm := time.UnixMicro(us)
			if flags&(1<<(bit+4)) != 0 {
				tm = tm.Add(time.Duration(us&999) * time.Nanosecond)
			}
			return zoned(tm, bit)
		}
		begun, t1, t2 := at(start, 0), at(start+d1, 1), at(start+d1+d2, 2)
		r := &Run{ID: id, Status: RunWaiting, StartedAt: begun, Cursor: int(flags >> 12),
			Steps: []StepRun{
				{Key: "a", Type: stepType, Status: StepCompleted, StartedAt: &begun, CompletedAt: &t1, Output: out,
					internal: stepInternal{Auto: flags&(1<<8) != 0, Approved: flags&(1<<9) != 0}},
				{Key: "b", Type: stepType, Status: StepWaiting, StartedAt: &t1,
					internal: stepInternal{Deadline: &t2, Auto: flags&(1<<10) != 0, WaitToken: out}},
				{Key: "c", Type: stepType, Status: StepPending, internal: stepInternal{Auto: flags&(1<<11) != 0}},
			}}
		if flags&(1<<3) != 0 {
			r.CompletedAt = &t2
		}
		raw, err := appendRun(nil, r, true)
		if err != nil {
			for _, tm := range []time.Time{begun, t1, t2} {
				if y := tm.Year(); y < 0 || y > 9999 {
					return // RFC 3339 has no such years: the engine never makes them
				}
			}
			t.Fatalf("encode: %v", err)
		}
		want, _ := form1Decoded(t, r)
		// The view of the run read from form 1 (the original's differs only
		// where invalid UTF-8 was replaced).
		view, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		for _, decode := range []func([]byte) (*Run, error){decodeOldForm, decodeStoredRunJSON} {
			got, err := decode(raw)
			if err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
			if diff := decodedDiff(want, got); diff != "" {
				t.Fatalf("(-form 1 +form 2):\n%s\nstored: %s", diff, raw)
			}
			if v, err := json.Marshal(got); err != nil || string(v) != string(view) {
				t.Fatalf("view (err %v):\n got %s\nwant %s", err, v, view)
			}
		}
		if _, ok := decodeStoredRunFast(raw); !ok {
			t.Fatalf("the scanner declined its own form: %s", raw)
		}
		if id == "" {
			return // form 4 takes the id from the record's key, and a key names a run
		}
		raw3, err := appendStoredRun(nil, r)
		if err != nil {
			t.Fatalf("encode in form 4: %v", err)
		}
		got, err := decodeStoredRun(r.ID, raw3)
		if err != nil {
			t.Fatalf("decode %q: %v", raw3, err)
		}
		// Form 4 keeps a string's bytes as they are, where JSON replaces
		// invalid UTF-8 by U+FFFD: the run differs there, and its view
		// writes the replacement escaped where form 1's view has it as it
		// is, so the two views are compared by what they decode to.
		v, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(id) && utf8.ValidString(stepType) && utf8.ValidString(out) {
			if diff := decodedDiff(want, got); diff != "" {
				t.Fatalf("(-form 1 +form 4):\n%s\nstored: %q", diff, raw3)
			}
			if string(v) != string(view) {
				t.Fatalf("view of form 4:\n got %s\nwant %s", v, view)
			}
			return
		}
		var gotView, wantView any
		if json.Unmarshal(v, &gotView) != nil || json.Unmarshal(view, &wantView) != nil {
			t.Fatalf("views not JSON:\n%s\n%s", v, view)
		}
		if diff := cmp.Diff(wantView, gotView); diff != "" {
			t.Fatalf("view of form 4 (-form 1 +form 4):\n%s", diff)
		}
	})
}

// form1Decoded is r stored in form 1 (encoding/json's full form of the
// stored run, also returned) and read back by the encoding/json decoder:
// what a record of form 2 must decode to.
func form1Decoded(t testing.TB, r *Run) (*Run, []byte) {
	t.Helper()
	full, err := json.Marshal(storedOf(r))
	if err != nil {
		t.Fatal(err)
	}
	want, err := decodeStoredRunJSON(full)
	if err != nil {
		t.Fatal(err)
	}
	return want, full
}
