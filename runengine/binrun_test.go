package runengine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/binrec"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/google/go-cmp/cmp"
)

// binaryCases are encodeCases and benchRecords' runs, with shapes only the
// binary forms' layout has apart: outputs stored apart, JSON long enough for a
// length of two and three bytes, times before the start, unicode, a step
// type and status none of recordWords.
func binaryCases() map[string]*Run {
	cases := encodeCases()
	for name, r := range benchRecords() {
		cases["bench "+name] = r
	}
	at := time.Date(2026, 11, 26, 13, 0, 51, 258206000, time.UTC)
	before := at.Add(-36 * time.Hour)
	long := strings.Repeat("ünïcode ✓ ", 20)
	str := func(s string) *string { return &s }
	cases["apart"] = &Run{ID: "run_8", Status: RunCompleted, StartedAt: at, CompletedAt: &at, Cursor: 2,
		Steps: []StepRun{
			{Key: "a", Type: "execute", Status: StepCompleted, StartedAt: &before, CompletedAt: &at,
				internal: stepInternal{OutputBytes: 70_000, Auto: true}},
			// A run read back has the output and its size: the record
			// keeps the size alone.
			{Key: "b", Type: "analyse", Status: StepCompleted, StartedAt: &at, CompletedAt: &at,
				Output: map[string]any{"x": "y"}, internal: stepInternal{OutputBytes: 90_000}},
		}}
	cases["long values"] = &Run{ID: "run_9", ProcessName: long, Status: RunStatus("custom"), StartedAt: at,
		Subject: Subject{Type: "ünïcode", Label: long}, Error: str(""), CurrentStep: str(""),
		Trigger: RunTrigger{Type: "webhook", Event: str(""), Data: map[string]any{"text": long, "list": []any{long, long}}},
		Search:  map[string]string{"a": "", "ü": long, "b": "x"},
		Steps: []StepRun{
			{Key: "ü", Type: "custom_step", Status: StepStatus("other"), StartedAt: &before,
				Output: map[string]any{"big": strings.Repeat("x", 20_000)},
				Error:  str(""), ApprovalID: str(""), TaskID: str(""), Attempts: -1,
				internal: stepInternal{Args: map[string]any{"text": long}, Reminders: -2, Checks: 1 << 40, Deadline: &before}},
		}}
	// An output that is a typed nil (a nil map or slice) is JSON null,
	// which form 2 reads back as no output.
	cases["nil outputs"] = &Run{ID: "run_10", Status: RunRunning, StartedAt: at, Cursor: 2,
		Steps: []StepRun{
			{Key: "a", Type: "execute", Status: StepCompleted, StartedAt: &at, CompletedAt: &at,
				Output: map[string]any(nil)},
			{Key: "b", Type: "analyse", Status: StepCompleted, StartedAt: &at, CompletedAt: &at,
				Output: []any(nil), Attempts: 1},
		}}
	return cases
}

// TestStoredRunForm4 stores runs of every shape in form 4 and reads them
// back with their ids: the run must be what its record of form 2 reads as with
// encoding/json (form 1's run but for outputs stored apart: see
// TestAppendRunMatchesReflection), its API view byte for byte the same,
// the record no longer than form 2's, and the run read back must store to
// a record that reads as the same run again.
func TestStoredRunForm4(t *testing.T) {
	t.Parallel()
	for name, r := range binaryCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			form2, err := appendRun(nil, r, true)
			if err != nil {
				t.Fatal(err)
			}
			want, err := decodeStoredRunJSON(form2)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := appendStoredRun(nil, r)
			if err != nil {
				t.Fatal(err)
			}
			// A run without an id (no run the engine stores) reads back
			// with the id of the key it is read under.
			id := r.ID
			if id == "" {
				id = "run_key"
			}
			want.ID = id
			got, err := decodeStoredRun(id, raw)
			if err != nil {
				t.Fatalf("decode: %v: %q", err, raw)
			}
			if diff := decodedDiff(want, got); diff != "" {
				t.Errorf("(-form 2 +form 4):\n%s\nrecord: %q", diff, raw)
			}
			wantView, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if view, err := json.Marshal(got); err != nil || string(view) != string(wantView) {
				t.Errorf("view (err %v):\n got %s\nwant %s", err, view, wantView)
			}
			if len(raw) > len(form2) {
				t.Errorf("form 4 (%d bytes) is longer than form 2 (%d)", len(raw), len(form2))
			}
			if msg := storedRecordDiff(id, raw); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestStoredRunAppendsToItsBuffer checks that a record written after
// bytes already in the buffer is the same record.
func TestStoredRunAppendsToItsBuffer(t *testing.T) {
	t.Parallel()
	for name, r := range binaryCases() {
		alone, err := appendStoredRun(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		after, err := appendStoredRun([]byte("prefix"), r)
		if err != nil || string(after) != "prefix"+string(alone) {
			t.Errorf("%s (err %v):\n got %q\nwant %q", name, err, after, "prefix"+string(alone))
		}
	}
}

func TestRecordWords(t *testing.T) {
	t.Parallel()
	for i, w := range recordWords {
		if got := wordCode(w); got != uint64(i)+1 {
			t.Errorf("wordCode(%q) = %d, want %d", w, got, i+1)
		}
	}
	for _, s := range []string{"", "Running", "custom", "waiting "} {
		if got := wordCode(s); got != 0 {
			t.Errorf("wordCode(%q) = %d, want 0", s, got)
		}
	}
	if len(recordWords) != 25 {
		t.Errorf("%d words: a word may be added, and this count with it, but none moved or removed", len(recordWords))
	}
}

// binaryRecord builds a record of form 4 by hand: the fields up to the
// trigger's type of a run running, started at 1970's first instant, with
// flags f, then tail. Without flags it is the smallest record.
func binaryRecord(f uint64, tail ...[]byte) []byte {
	b := binary.AppendUvarint([]byte{storedForm}, f)
	// start, process id and name, version, function, status running,
	// subject type and label, trigger type: none of recordWords, empty.
	b = append(b, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0)
	for _, t := range tail {
		b = append(b, t...)
	}
	return b
}

func uv(n uint64) []byte      { return binary.AppendUvarint(nil, n) }
func sv(n int64) []byte       { return binary.AppendVarint(nil, n) }
func field(s string) []byte   { return binrec.AppendString(nil, s) }
func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// binaryStep is a step of key "k", type route, status pending, flags f,
// then tail.
func binaryStep(f uint64, tail ...[]byte) []byte {
	return cat(uv(f), field("k"), uv(wordCode("route")), uv(wordCode("pending")), cat(tail...))
}

// TestDecodeBinaryRunRefuses checks that binary records that
// appendStoredRun does not write (nor wrote in form 3) are refused with an
// error, never read as some run: every field malformed, out of range, or
// written in a second form, a record of form 4 without its key's id, and
// every record cut short.
func TestDecodeBinaryRunRefuses(t *testing.T) {
	t.Parallel()
	// The controls decode: the cases below differ from one of them in one
	// thing.
	epoch := time.UnixMicro(0).UTC()
	for _, c := range []struct {
		name string
		raw  []byte
		want *Run
	}{
		{"smallest", binaryRecord(0), &Run{ID: "r", Status: RunRunning, StartedAt: epoch}},
		{"cursor", binaryRecord(runCursor, sv(1)), &Run{ID: "r", Status: RunRunning, StartedAt: epoch, Cursor: 1}},
		{"step", binaryRecord(runSteps, uv(1), binaryStep(stepOutput, field(`{"a":1}`))),
			&Run{ID: "r", Status: RunRunning, StartedAt: epoch, Steps: []StepRun{{Key: "k", Type: "route",
				Status: StepPending, Output: map[string]any{"a": 1.0}}}}},
		{"search", binaryRecord(runSearch, uv(2), field("a"), field("1"), field("b"), field("2")),
			&Run{ID: "r", Status: RunRunning, StartedAt: epoch, Search: map[string]string{"a": "1", "b": "2"}}},
		{"time text", cat([]byte{storedForm, 0}, sv(1), field("2026-03-02T09:00:00+01:00"), binaryRecord(0)[3:]),
			&Run{ID: "r", Status: RunRunning, StartedAt: time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)}},
		// Form 3 holds its id, after the start: the record's id is the
		// run's.
		{"form 3", cat([]byte{idForm, byte(runCursor), 0}, field("r3"), binaryRecord(0)[3:], sv(1)),
			&Run{ID: "r3", Status: RunRunning, StartedAt: epoch, Cursor: 1}},
	} {
		got, err := decodeStoredRun("r", c.raw)
		if err != nil {
			t.Fatalf("control %s: %v", c.name, err)
		}
		if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(StepRun{}, stepInternal{})); diff != "" {
			t.Errorf("control %s (-want +got):\n%s", c.name, diff)
		}
	}
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"empty", nil},
		{"bytes left over", binaryRecord(0, []byte{0})},
		{"an unknown run flag", binaryRecord(runFlagsEnd)},
		{"an unknown step flag", binaryRecord(runSteps, uv(1), binaryStep(stepFlagsEnd))},
		{"padded flags", append([]byte{storedForm, 0x80, 0x00}, binaryRecord(0)[2:]...)},
		{"a zero cursor", binaryRecord(runCursor, sv(0))},
		{"an empty started_by", binaryRecord(runStartedBy, field(""))},
		{"a zero attempt count", binaryRecord(runSteps, uv(1), binaryStep(stepAttempts, sv(0)))},
		{"a word as a string", cat(binaryRecord(0)[:7], []byte{0}, field("running"), []byte{0, 0, 0, 0})},
		{"a word code past the list", cat(binaryRecord(0)[:7], uv(uint64(len(recordWords))+1), []byte{0, 0, 0, 0})},
		{"form 5", cat([]byte{storedForm + 1}, binaryRecord(0)[1:])},
		{"form 3 without its id", cat([]byte{idForm}, binaryRecord(0)[1:])},
		{"a time odd but not 1", cat([]byte{storedForm, 0}, sv(3), field("2026-03-02T09:00:00+01:00"), binaryRecord(0)[3:])},
		{"a time out of range", cat([]byte{storedForm, 0}, sv(2*(maxStoredMicros+1)), binaryRecord(0)[3:])},
		{"a step time out of range", cat(
			cat([]byte{storedForm}, uv(runSteps), sv(2*maxStoredMicros), binaryRecord(0)[3:]),
			uv(1), binaryStep(stepStartedAt, sv(2)))},
		{"a time's text in a second form", cat([]byte{storedForm, 0}, sv(1), field("2026-03-02T09:00:00.000+01:00"), binaryRecord(0)[3:])},
		{"a time's text not a time", cat([]byte{storedForm, 0}, sv(1), field("yesterday"), binaryRecord(0)[3:])},
		{"an output stored apart and held", binaryRecord(runSteps, uv(1),
			binaryStep(stepOutput|stepOutputBytes, field(`{}`), sv(70_000)))},
		{"a null output", binaryRecord(runSteps, uv(1), binaryStep(stepOutput, field(`null`)))},
		{"an output not JSON", binaryRecord(runSteps, uv(1), binaryStep(stepOutput, field(`{"a":`)))},
		{"empty data", binaryRecord(runData, field(`{}`))},
		{"data not an object", binaryRecord(runData, field(`[1]`))},
		{"empty args", binaryRecord(runSteps, uv(1), binaryStep(stepArgs, field(`{}`)))},
		{"more steps than bytes", binaryRecord(runSteps, uv(100), binaryStep(0))},
		{"search keys descending", binaryRecord(runSearch, uv(2), field("b"), field("1"), field("a"), field("2"))},
		{"a search key twice", binaryRecord(runSearch, uv(2), field("a"), field("1"), field("a"), field("2"))},
		{"an empty search", binaryRecord(runSearch, uv(0))},
		{"more processes than bytes", binaryRecord(runCause, field("c"), field("c"), sv(0), uv(50))},
		{"a null pause state", binaryRecord(runPaused, field(`null`))},
		{"a string longer than the record", cat([]byte{storedForm, 0, 0}, uv(50), []byte("r"))},
		{"a JSON record of form 3", []byte(`{"form":3,"id":"r"}`)},
	} {
		if r, err := decodeStoredRun("r", c.raw); err == nil {
			t.Errorf("%s: decoded %+v from %q", c.name, r, c.raw)
		}
	}
	if r, err := decodeStoredRun("", binaryRecord(0)); err == nil {
		t.Errorf("a record of form 4 decoded without its id: %+v", r)
	}
	for name, r := range binaryCases() {
		raw, err := appendStoredRun(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(raw) {
			if _, err := decodeStoredRun("r", raw[:n]); err == nil {
				t.Errorf("%s: its first %d bytes decoded", name, n)
			}
		}
	}
	old, err := filepath.Glob("testdata/form3/*.bin")
	if err != nil || len(old) == 0 {
		t.Fatalf("form 3 records: %v %v", old, err)
	}
	for _, f := range old {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(raw) {
			if _, err := decodeStoredRun("r", raw[:n]); err == nil {
				t.Errorf("%s: its first %d bytes decoded", f, n)
			}
		}
	}
}

// FuzzDecodeBinaryRun decodes arbitrary bytes as a binary record of run
// "r" (form 4, or form 3 with an id of its own): it must not panic, and a
// run it reads must store again to a record that reads as the same run
// and stores to the same bytes.
func FuzzDecodeBinaryRun(f *testing.F) {
	for _, r := range binaryCases() {
		raw, err := appendStoredRun(nil, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	old, err := filepath.Glob("testdata/form3/*.bin")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range old {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeBinaryRun("r", raw)
		if err != nil {
			return
		}
		again, err := appendStoredRun(nil, r)
		if err != nil {
			t.Fatalf("encode what decoded: %v: %q", err, raw)
		}
		if r.ID == "" {
			// A record of form 3 with an empty id: form 4 cannot hold
			// it, as no key names it.
			if r2, err := decodeBinaryRun(r.ID, again); err == nil {
				t.Fatalf("decoded without its id: %+v", r2)
			}
			return
		}
		r2, err := decodeBinaryRun(r.ID, again)
		if err != nil {
			t.Fatalf("decode again: %v: %q from %q", err, again, raw)
		}
		if diff := runDiff(r, r2); diff != "" {
			t.Fatalf("(-decoded +stored again):\n%s\nrecord: %q", diff, raw)
		}
		if third, err := appendStoredRun(nil, r2); err != nil || !bytes.Equal(third, again) {
			t.Fatalf("stored twice (err %v):\n%q\n%q", err, again, third)
		}
	})
}

// TestAppendRecordMovesOutputsApart checks that appendRecord, writing a
// record once, leaves out exactly the outputs over MaxInlineOutputBytes
// (as JSON), returns their JSON, and writes the record appendStoredRun
// writes for the run with those outputs noted apart.
func TestAppendRecordMovesOutputsApart(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 13, 0, 51, 258206000, time.UTC)
	// An output of n bytes as JSON: a string of n-2 characters.
	sized := func(n int) any { return strings.Repeat("x", n-2) }
	step := func(key string, out any) StepRun {
		return StepRun{Key: key, Type: "execute", Status: StepCompleted, StartedAt: &at, CompletedAt: &at, Output: out}
	}
	for _, c := range []struct {
		name  string
		steps []StepRun
		moved []int // the steps whose outputs move
	}{
		{"none", []StepRun{step("a", sized(100)), step("b", nil)}, nil},
		{"at the bound", []StepRun{step("a", sized(MaxInlineOutputBytes))}, nil},
		{"over the bound", []StepRun{step("a", sized(MaxInlineOutputBytes+1))}, []int{0}},
		{"beside a small one", []StepRun{step("a", sized(70_000)), step("b", map[string]any{"x": 1.0})}, []int{0}},
		{"two of three", []StepRun{step("a", sized(70_000)), step("b", sized(10)),
			step("c", map[string]any{"big": sized(MaxInlineOutputBytes)})}, []int{0, 2}},
		{"already apart", []StepRun{{Key: "a", Type: "execute", Status: StepCompleted, Output: sized(70_000),
			internal: stepInternal{OutputBytes: 70_000}}}, nil},
		{"nil map", []StepRun{step("a", map[string]any(nil)), step("b", sized(70_000))}, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Run{ID: "run_1", Status: RunCompleted, StartedAt: at, Steps: c.steps}
			want := *r
			want.Steps = slices.Clone(r.Steps) // the steps' bookkeeping too, which cloneRun leaves
			var wantOut []apartOutput
			for _, i := range c.moved {
				out, err := jsonvalue.Append(nil, want.Steps[i].Output)
				if err != nil {
					t.Fatal(err)
				}
				want.Steps[i].internal.OutputBytes = len(out)
				wantOut = append(wantOut, apartOutput{step: i, json: out})
			}
			wantRaw, err := appendStoredRun(nil, &want)
			if err != nil {
				t.Fatal(err)
			}
			var moved []apartOutput
			raw, err := appendRecord([]byte("prefix"), r, &moved)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != "prefix"+string(wantRaw) {
				t.Errorf("record %.300q, want %.300q", raw[len("prefix"):], wantRaw)
			}
			if diff := cmp.Diff(wantOut, moved, cmp.AllowUnexported(apartOutput{})); diff != "" {
				t.Errorf("moved (-want +got):\n%.2000s", diff)
			}
			for i := range r.Steps {
				if got, w := r.Steps[i].internal.OutputBytes, want.Steps[i].internal.OutputBytes; got != w {
					t.Errorf("step %d noted %d bytes apart, want %d", i, got, w)
				}
			}
		})
	}
}
