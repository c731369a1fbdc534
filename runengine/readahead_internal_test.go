package runengine

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/process"
)

// TestReadAhead takes a run the scheduler read with its due key for what
// the store holds only while the worker has not forgotten the run since
// the read began: a run forgotten after it may have changed after it.
func TestReadAhead(t *testing.T) {
	eng, procs := memEngine(t, Config{})
	in, err := process.DecodeIn([]byte(`{"name": "Wait", "function": "operations", "trigger": {"type": "manual"},
		"steps": [{"key": "wait", "type": "wait", "config": {"duration": "24h"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	const tenant = "ten_a"
	def, err := procs.Create(context.Background(), tenant, "usr_a", in)
	if err != nil {
		t.Fatal(err)
	}
	record := func(label string, apart bool) []byte {
		r := &Run{ID: "run_1", ProcessID: def.ID, ProcessVersion: def.Version, Status: RunWaiting,
			Subject: Subject{Type: "delivery", Label: label}, Steps: []StepRun{{Key: "wait", Type: "wait", Status: StepWaiting}}}
		if apart {
			r.Steps[0].Status = StepCompleted
			r.Steps[0].internal.OutputBytes = 70_000
		}
		raw, err := appendStoredRun(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	w := eng.workerFor("run_1")
	timer := func(raw []byte, seen uint64) *command {
		return &command{kind: cmdTimer, tenant: tenant, runID: "run_1", timer: &timerArgs{token: "t", run: raw, seen: seen}}
	}
	label := func(en *entry) string {
		if en == nil {
			return "(not taken)"
		}
		return en.run.Subject.Label
	}

	before := timer(record("DN-1", false), eng.forgets.Load())
	if got := label(w.readAhead(before)); got != "DN-1" {
		t.Errorf("read ahead, nothing forgotten since: %s, want DN-1", got)
	}
	w.forget(runKeyOf(tenant, "run_1")) // the run changed and was forgotten after the read began
	if got := label(w.readAhead(before)); got != "(not taken)" {
		t.Errorf("read ahead, the run forgotten since: %s, want it not taken", got)
	}
	if got := label(w.readAhead(timer(record("DN-2", false), eng.forgets.Load()))); got != "DN-2" {
		t.Errorf("read ahead after the forget: %s, want DN-2", got)
	}
	if got := label(w.readAhead(timer(nil, eng.forgets.Load()))); got != "(not taken)" {
		t.Errorf("nothing read ahead: %s, want none taken", got)
	}
	if got := label(w.readAhead(timer(record("DN-3", true), eng.forgets.Load()))); got != "(not taken)" {
		t.Errorf("read ahead with an output kept apart: %s, want it not taken (read with its output)", got)
	}
}
