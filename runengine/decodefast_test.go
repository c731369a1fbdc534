package runengine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	base, err := appendRun(nil, &Run{ID: "run_1", Status: RunWaiting, StartedAt: at,
		Steps: []StepRun{{Key: "w", Type: "wait", Status: StepWaiting, StartedAt: &at,
			internal: stepInternal{Deadline: &at, WaitToken: "timer-1"}}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	stored := string(base)
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
			if got := fastAgrees(t, []byte(c.raw)); got != c.recognised {
				t.Errorf("recognised = %v, want %v: %s", got, c.recognised, c.raw)
			}
			r, err := decodeStoredRun([]byte(c.raw))
			want, wantErr := decodeStoredRunJSON([]byte(c.raw))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("decodeStoredRun error %v, encoding/json's %v", err, wantErr)
			}
			if diff := runDiff(want, r); diff != "" {
				t.Errorf("(-encoding/json +decodeStoredRun):\n%s", diff)
			}
		})
	}
}

func FuzzDecodeStoredRun(f *testing.F) {
	for _, raw := range storedCases(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"id":"\u0069","steps":[{"output":[1,{"a":null}],"internal":{"args":{"x":"\ud834\udd1e"}}}]}`))
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
	}{{"json", decodeStoredRunJSON}, {"fast", decodeStoredRun}} {
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
