package runengine

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchRecords are runs as the engine stores them often: a completed
// three-step chain (BenchmarkChain3's run) and a run waiting a day on a
// timer (TestWaitingRunsScale's).
func benchRecords() map[string]*Run {
	at := time.Date(2026, 11, 26, 13, 0, 51, 258206000, time.UTC)
	us := func(n int) *time.Time { t := at.Add(time.Duration(n) * time.Microsecond); return &t }
	step := func(key string, from, to int) StepRun {
		return StepRun{Key: key, Type: "execute", Status: StepCompleted, StartedAt: us(from), CompletedAt: us(to),
			Output: map[string]any{}, internal: stepInternal{Auto: true}}
	}
	wait := "wait"
	return map[string]*Run{
		"chain3": {ID: "run_01M8BZ3J5T421QS1B6VZW9HFEC", ProcessID: "prc_01M8BZ3J5RFY2RTX5QE8HKN8WR", ProcessName: "Bench",
			ProcessVersion: 1, Function: "ops", Status: RunCompleted, Subject: Subject{Type: "bench", Label: "run"},
			Trigger: RunTrigger{Type: "manual"}, StartedAt: at, CompletedAt: us(1593), MinutesSaved: 15, Cursor: 3,
			Steps: []StepRun{step("s0", 6, 1557), step("s1", 1557, 1578), step("s2", 1578, 1593)}},
		"waiting": {ID: "run_01JNQ9Z3V8K2M4P6R8T0W2Y4A6", ProcessID: "prc_01JNQ9Z3V8K2M4P6R8T0W2Y4A7",
			ProcessName: "Wait a day", ProcessVersion: 1, Function: "operations", Status: RunWaiting,
			Subject: Subject{Type: "invoice", Label: "INV-1"}, Trigger: RunTrigger{Type: "manual"}, CurrentStep: &wait,
			StartedAt: at, StartedBy: "usr_1",
			Steps: []StepRun{{Key: "wait", Type: "wait", Status: StepWaiting, StartedAt: &at,
				internal: stepInternal{Deadline: us(86_400_000_000), WaitToken: "wait-0"}},
				{Key: "route", Type: "route", Status: StepPending}}},
	}
}

// BenchmarkStoredRecord encodes and decodes benchRecords' runs in the
// stored form (form 4), reporting the record's size (bytes/record) and the CPU time
// the process spent per operation (cpu-ns/op, with the garbage collector's:
// steadier than ns/op on a shared machine).
func BenchmarkStoredRecord(b *testing.B) {
	for _, name := range []string{"chain3", "waiting"} {
		r := benchRecords()[name]
		raw, err := appendStoredRun(nil, r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 2048)
			defer reportCPU(b)()
			for b.Loop() {
				if buf, err = appendStoredRun(buf[:0], r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(raw)), "bytes/record")
		})
		b.Run("decode/"+name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := decodeStoredRun(r.ID, raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(raw)), "bytes/record")
		})
	}
}

// reportCPU returns a func that reports the process's CPU time per
// operation since reportCPU was called.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStoredRecordApart writes the record of Chain3's run whose
// middle step's output is 70,000 bytes of JSON, as a commit does: the
// output is moved apart (bytes/record is what the record keeps). CPU per
// operation as BenchmarkStoredRecord's.
func BenchmarkStoredRecordApart(b *testing.B) {
	r := benchRecords()["chain3"]
	r.Steps[1].Output = map[string]any{"text": strings.Repeat("x", 70_000-len(`{"text":""}`))}
	w := &worker{}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	defer reportCPU(b)()
	var raw []byte
	for b.Loop() {
		r.Steps[1].internal.OutputBytes = 0
		en := &entry{run: r}
		var err error
		if raw, err = w.encodeRecord(en, buf[:0]); err != nil || len(en.held.ops) != 1 {
			b.Fatalf("%v; %d writes apart", err, len(en.held.ops))
		}
	}
	b.ReportMetric(float64(len(raw)), "bytes/record")
}
