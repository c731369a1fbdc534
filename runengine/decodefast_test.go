package runengine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// storedRecordDiff is empty when raw is a record of form 4 of run id that
// decodes, reads back the same when written again, and decodes as its
// form-2 JSON does with encoding/json.
func storedRecordDiff(id string, raw []byte) string {
	if len(raw) == 0 || raw[0] != storedForm {
		return fmt.Sprintf("not of form %d: %q", storedForm, raw)
	}
	got, err := decodeBinaryRun(id, raw)
	if err != nil {
		return fmt.Sprintf("%v: %q", err, raw)
	}
	if got.ID != id {
		return fmt.Sprintf("read as run %q, stored as %q", got.ID, id)
	}
	// Written again in form 4, and in form 2, it reads back the same.
	again, err := appendStoredRun(nil, got)
	if err != nil {
		return "encode again: " + err.Error()
	}
	if r, err := decodeBinaryRun(id, again); err != nil {
		return fmt.Sprintf("decode again: %v: %q", err, again)
	} else if diff := runDiff(got, r); diff != "" {
		return fmt.Sprintf("(-stored +stored again):\n%s\nrecord: %q", diff, raw)
	}
	form2, err := appendRun(nil, got, true)
	if err != nil {
		return "encode in form 2: " + err.Error()
	}
	want, err := decodeStoredRunJSON(form2)
	if err != nil {
		return "encoding/json: " + err.Error() + ": " + string(form2)
	}
	if diff := runDiff(want, got); diff != "" {
		return fmt.Sprintf("(-form 2 +form 4):\n%s\nrecord: %q", diff, raw)
	}
	return ""
}

// decodeOldForm decodes a record of form 1 or 2, or 3: they hold their
// run's id.
func decodeOldForm(raw []byte) (*Run, error) { return decodeStoredRun("", raw) }

// storedRunDecodingDiff is empty when the scanner recognises raw and
// decodes it as encoding/json does.
func storedRunDecodingDiff(raw []byte) string {
	got, ok := decodeStoredRunFast(raw)
	if !ok {
		return "not recognised: " + string(raw)
	}
	want, err := decodeStoredRunJSON(raw)
	if err != nil {
		return "encoding/json: " + err.Error() + ": " + string(raw)
	}
	if diff := runDiff(want, got); diff != "" {
		return "(-encoding/json +scanner):\n" + diff + "\nrecord: " + string(raw)
	}
	return ""
}

// runDiff is cmp's diff of two runs; deeply equal runs skip it (go-cmp
// takes time exponential in the depth of nested lists).
func runDiff(want, got *Run) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, cmp.AllowUnexported(StepRun{}, stepInternal{}))
}

// fastAgrees reports whether the scanner, on raw, either declines or
// decodes what encoding/json decodes (and that it does not recognise what
// encoding/json refuses); it panics on neither.
func fastAgrees(t *testing.T, raw []byte) (recognised bool) {
	t.Helper()
	got, ok := decodeStoredRunFast(raw)
	want, err := decodeStoredRunJSON(raw)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("the scanner decoded a record encoding/json refuses (%v): %q", err, raw)
	}
	if diff := runDiff(want, got); diff != "" {
		t.Fatalf("(-encoding/json +scanner):\n%s\nrecord: %q", diff, raw)
	}
	return true
}

func TestDecodeStoredRunFastMatchesJSON(t *testing.T) {
	t.Parallel()
	for name, r := range encodeCases() {
		raw, err := appendRun(nil, r, true)
		if err != nil {
			t.Fatal(err)
		}
		if msg := storedRunDecodingDiff(raw); msg != "" {
			t.Errorf("%s: %s", name, msg)
		}
	}
}

func TestDecodeStoredRunFastFallsBack(t *testing.T) {
	t.Parallel()
	// A record of form 1, as the engine stored it before form 2.
	stored := `{"id":"run_1","process_id":"","process_name":"","process_version":0,"function":"","status":"waiting",` +
		`"subject":{"type":"","label":""},"trigger":{"type":""},"steps":[{"key":"w","type":"wait","status":"waiting",` +
		`"started_at":"2026-03-02T09:00:00Z","internal":{"deadline":"2026-03-02T09:00:00Z","wait_token":"timer-1"}}],` +
		`"started_at":"2026-03-02T09:00:00Z","cursor":0}`
	// with replaces the first old in the stored record by new.
	with := func(old, new string) string {
		if !strings.Contains(stored, old) {
			t.Fatalf("%q is not in %s", old, stored)
		}
		return strings.Replace(stored, old, new, 1)
	}
	for _, c := range []struct {
		name       string
		raw        string
		recognised bool
	}{
		{"stored form", stored, true},
		{"white space", with(`"id":`, " \n\t\"id\" : "), true},
		{"escaped string", with(`"run_1"`, `"run_\u0031\n\"x\""`), true},
		{"utf-8 string", with(`"run_1"`, `"rün ✓"`), true},
		{"invalid utf-8", with(`"run_1"`, "\"run\xff\""), true},
		{"lone surrogate", with(`"run_1"`, `"\ud800"`), true},
		{"output of every kind", with(`"status":"waiting","started_at":"2026-03-02T09:00:00Z","internal"`,
			`"status":"waiting","output":{"a":[1,-2.5e3,0.25,true,false,null,"s",{}],"b":{"c":[]}},"internal"`), true},
		{"duplicate output key", with(`"status":"waiting","started_at":"2026-03-02T09:00:00Z","internal"`,
			`"status":"waiting","output":{"a":1,"a":2},"internal"`), true},
		{"search", with(`"cursor"`, `"search":{"k":"v","z":""},"cursor"`), true},
		{"cause", with(`"trigger":{"type":""}`, `"trigger":{"type":"event","cause":{"run_id":"r","root_run_id":"r","depth":1,"processes":[]}}`), true},
		{"null cause processes", with(`"trigger":{"type":""}`, `"trigger":{"type":"event","cause":{"processes":null}}`), true},
		{"paused", with(`"cursor":0`, `"cursor":0,"paused":{"from":"waiting","at":"2026-03-02T09:00:00Z","events":[{"name":"e","id":"1","key":"AAE="}]}`), true},
		{"null top level", `null`, false},
		{"unknown key", with(`"id":`, `"legacy":1,"id":`), false},
		{"key of another case", with(`"id":`, `"ID":`), false},
		{"duplicate key", with(`"cursor":0`, `"cursor":0,"cursor":1`), false},
		{"duplicate steps", with(`"cursor":0`, `"cursor":0,"steps":[{"key":"x"}]`), false},
		{"duplicate internal key", with(`"wait_token":"timer-1"`, `"wait_token":"timer-1","wait_token":"t"`), false},
		{"escaped key", with(`"id":`, `"\u0069d":`), false},
		{"null id", with(`"id":"run_1"`, `"id":null`), false},
		{"float cursor", with(`"cursor":0`, `"cursor":1.5`), false},
		{"huge cursor", with(`"cursor":0`, `"cursor":123456789012345678901`), false},
		{"huge number", with(`"status":"waiting","started_at":"2026-03-02T09:00:00Z","internal"`,
			`"status":"waiting","output":1e999,"internal"`), false},
		{"bad time", with(`"2026-03-02T09:00:00Z"`, `"2026-03-02 09:00"`), false},
		{"trailing bytes", stored + `x`, false},
		{"truncated", stored[:len(stored)-1], false},
		{"null step", with(`"steps":[`, `"steps":[null,`), false},
		{"bad escape", with(`"run_1"`, `"run\q"`), false},
		{"control byte", with(`"run_1"`, "\"run\x01\""), false},
		{"leading zero", with(`"cursor":0`, `"cursor":01`), false},
		{"deep output", with(`"status":"waiting","started_at":"2026-03-02T09:00:00Z","internal"`,
			`"status":"waiting","output":`+strings.Repeat(`{"a":[`, 150)+strings.Repeat("]}", 150)+`,"internal"`), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fallsBack(t, c.raw, c.recognised)
		})
	}
}

// fallsBack checks that the scanner recognises raw or not, and that
// decodeStoredRun then decodes it as encoding/json does (or fails as it
// does).
func fallsBack(t *testing.T, raw string, recognised bool) {
	t.Helper()
	if got := fastAgrees(t, []byte(raw)); got != recognised {
		t.Errorf("recognised = %v, want %v: %s", got, recognised, raw)
	}
	r, err := decodeOldForm([]byte(raw))
	want, wantErr := decodeStoredRunJSON([]byte(raw))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decodeStoredRun error %v, encoding/json's %v", err, wantErr)
	}
	if diff := runDiff(want, r); diff != "" {
		t.Errorf("(-encoding/json +decodeStoredRun):\n%s", diff)
	}
}

// TestDecodeStoredRunForm2 holds the scanner and the encoding/json path to
// the same reading of form 2's numbers and defaults, and to refusing what
// form 2 cannot mean.
func TestDecodeStoredRunForm2(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	later := at.Add(90 * time.Second)
	base, err := appendRun(nil, &Run{ID: "run_1", Status: RunWaiting, StartedAt: at, CompletedAt: &later,
		Steps: []StepRun{
			{Key: "x", Type: "execute", Status: StepCompleted, StartedAt: &at, CompletedAt: &later, internal: stepInternal{Auto: true}},
			{Key: "w", Type: "wait", Status: StepWaiting, StartedAt: &later, internal: stepInternal{Deadline: &later, WaitToken: "timer-1"}}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	stored := string(base)
	const want = `{"form":2,"started_at":1772442000000000,"id":"run_1","process_id":"","process_name":"","process_version":0,` +
		`"function":"","status":"waiting","subject":{"type":"","label":""},"trigger":{"type":""},"steps":[` +
		`{"key":"x","type":"execute","status":"completed","started_at":0,"completed_at":90000000},` +
		`{"key":"w","type":"wait","status":"waiting","started_at":90000000,"internal":{"deadline":90000000,"wait_token":"timer-1"}}],` +
		`"completed_at":90000000}`
	if stored != want {
		t.Fatalf("stored form:\n got %s\nwant %s", stored, want)
	}
	with := func(old, new string) string {
		if !strings.Contains(stored, old) {
			t.Fatalf("%q is not in %s", old, stored)
		}
		return strings.Replace(stored, old, new, 1)
	}
	startLast := strings.Replace(with(`"started_at":1772442000000000,`, ``), `"completed_at":90000000}`,
		`"completed_at":90000000,"started_at":1772442000000000}`, 1)
	for _, c := range []struct {
		name       string
		raw        string
		recognised bool
		fails      bool
	}{
		{"stored form", stored, true, false},
		{"form 1 named", with(`"form":2`, `"form":1`), true, false},
		{"no form", with(`"form":2,`, ``), true, false},
		{"form 3", with(`"form":2`, `"form":3`), false, true},
		{"form 0", with(`"form":2`, `"form":0`), false, true},
		{"form string", with(`"form":2`, `"form":"2"`), false, true},
		{"form null", with(`"form":2`, `"form":null`), false, false},
		{"form after the steps", with(`"form":2,`, ``)[:len(stored)-len(`"form":2,`)-1] + `,"form":2}`, false, false},
		{"start after the relative times", startLast, false, false},
		{"start as a string", with(`1772442000000000`, `"2026-03-02T09:00:00Z"`), true, false},
		{"step time as a string", with(`"completed_at":90000000}`, `"completed_at":"2026-03-02T10:00:00+01:00"}`), true, false},
		{"negative relative time", with(`"completed_at":90000000}`, `"completed_at":-90000000}`), true, false},
		{"start null", with(`1772442000000000`, `null`), false, false},
		{"time a fraction", with(`"started_at":0`, `"started_at":0.5`), false, true},
		{"time an exponent", with(`"started_at":0`, `"started_at":1e3`), false, true},
		{"time true", with(`"started_at":0`, `"started_at":true`), false, true},
		{"time an object", with(`"started_at":0`, `"started_at":{}`), false, true},
		{"start at year 1", with(`1772442000000000`, `-62135596800000000`), true, false},
		{"start before year 1", with(`1772442000000000`, `-62135596800000001`), false, true},
		{"start after year 9999", with(`1772442000000000`, `253402300800000000`), false, true},
		{"start at the last microsecond", strings.ReplaceAll(with(`1772442000000000`, `253402300799999999`), `90000000`, `-1`), true, false},
		{"relative past the last microsecond", with(`1772442000000000`, `253402300799999999`), false, true},
		{"relative past year 9999", with(`"started_at":0`, `"started_at":251629858799999999`), true, false},
		{"relative just past year 9999", with(`"started_at":0`, `"started_at":251629858800000000`), false, true},
		{"relative overflowing", with(`"started_at":0`, `"started_at":9223372036854775807`), false, true},
		{"relative of 19 digits", with(`"started_at":0`, `"started_at":-1000000000000000000`), false, true},
		{"auto written false", with(`"completed_at":90000000}`, `"completed_at":90000000,"internal":{"auto":false}}`), true, false},
		{"auto written true on a wait", with(`"wait_token"`, `"auto":true,"wait_token"`), true, false},
		{"auto null", with(`"completed_at":90000000}`, `"completed_at":90000000,"internal":{"auto":null}}`), false, false},
		{"empty internal", with(`"completed_at":90000000}`, `"completed_at":90000000,"internal":{}}`), true, false},
		{"approved", with(`"completed_at":90000000}`, `"completed_at":90000000,"internal":{"approved":true}}`), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fallsBack(t, c.raw, c.recognised)
			if _, err := decodeOldForm([]byte(c.raw)); (err != nil) != c.fails {
				t.Errorf("error %v, want one: %v", err, c.fails)
			}
		})
	}
	// What the numbers and the defaults mean.
	r, err := decodeOldForm(base)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Steps[0].internal.Auto || r.Steps[1].internal.Auto || !r.Steps[1].StartedAt.Equal(later) ||
		r.StartedAt.Location() != time.UTC || !r.CompletedAt.Equal(later) || !r.Steps[1].internal.Deadline.Equal(later) {
		t.Errorf("decoded %+v", r)
	}
	for raw, auto := range map[string]bool{
		with(`"form":2`, `"form":1`): false,
		with(`"completed_at":90000000}`, `"completed_at":90000000,"internal":{"auto":false}}`):    false,
		with(`"completed_at":90000000}`, `"completed_at":90000000,"internal":{"approved":true}}`): false,
	} {
		if r, err := decodeOldForm([]byte(raw)); err != nil || r.Steps[0].internal.Auto != auto {
			t.Errorf("auto of %s: %v (%v), want %v", raw, r.Steps[0].internal.Auto, err, auto)
		}
	}
}

func TestStoredMicrosBounds(t *testing.T) {
	t.Parallel()
	first := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	if first.UnixMicro() != minStoredMicros || last.UnixMicro() != maxStoredMicros {
		t.Fatalf("bounds %d %d, want %d %d", minStoredMicros, maxStoredMicros, first.UnixMicro(), last.UnixMicro())
	}
	for _, c := range []struct {
		t      time.Time
		number bool
	}{
		{first, true}, {first.Add(-time.Microsecond), false}, {last, true}, {last.Add(time.Microsecond), false},
		{last.Add(time.Nanosecond), false}, {first.Add(999 * time.Nanosecond), false},
		{first.In(time.FixedZone("UTC", 0)), false}, {time.Time{}, true},
	} {
		if _, ok := storedMicros(c.t); ok != c.number {
			t.Errorf("storedMicros(%v) = %v, want %v", c.t, ok, c.number)
		}
	}
}

func FuzzDecodeStoredRun(f *testing.F) {
	for _, raw := range storedCases(f) {
		f.Add(raw)
	}
	// Records of form 1, and form 2's numbers and defaults in odd places.
	files, err := filepath.Glob("testdata/form1/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"id":"\u0069","steps":[{"output":[1,{"a":null}],"internal":{"args":{"x":"\ud834\udd1e"}}}]}`))
	f.Add([]byte(`{"form":2,"started_at":-1,"steps":[{"type":"execute","started_at":-0,"completed_at":"2026-03-02T09:00:00Z","internal":{"deadline":9}}],"completed_at":1}`))
	f.Add([]byte(`{"steps":[{"started_at":5}],"form":2,"started_at":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fastAgrees(t, raw)
	})
}

// A waiting timer's run as TestWaitingRunsScale stores it.
func BenchmarkDecodeStoredRunWaiting(b *testing.B) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	later := at.Add(24 * time.Hour)
	step := "wait"
	raw, err := appendRun(nil, &Run{ID: "run_01JNQ9Z3V8K2M4P6R8T0W2Y4A6", ProcessID: "prc_01JNQ9Z3V8K2M4P6R8T0W2Y4A7",
		ProcessName: "Wait a day", ProcessVersion: 1, Function: "operations", Status: RunWaiting,
		Subject: Subject{Type: "invoice", Label: "INV-1"}, Trigger: RunTrigger{Type: "manual"}, CurrentStep: &step,
		StartedAt: at, StartedBy: "usr_1",
		Steps: []StepRun{{Key: "wait", Type: "wait", Status: StepWaiting, StartedAt: &at,
			internal: stepInternal{Deadline: &later, WaitToken: "wait-0"}}, {Key: "route", Type: "route", Status: StepPending}}}, true)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) (*Run, error)
	}{{"json", decodeStoredRunJSON}, {"fast", decodeOldForm}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
