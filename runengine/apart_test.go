package runengine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// TestLargeOutputsStoredApart runs a step whose output is over 64 KiB: the
// run read by id has it, lists show it omitted, and after a reopen a later
// step still reads it.
func TestLargeOutputsStoredApart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	prov, gate := &testProvider{}, &autoGate{auto: true}
	openAt := func() *bundle {
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return open(t, st, clk, prov, gate)
	}
	b := openAt()
	ctx := context.Background()
	def := b.create(t, `{"type":"event","event":"test.big"}`, `[
		{"key":"one","type":"execute","capability":"test.echo","config":{"args":{"a":"${trigger.data.blob}","b":"${trigger.data.blob}"}}},
		{"key":"check","type":"human_task","config":{"title":"Check"}},
		{"key":"two","type":"execute","capability":"test.echo","config":{"args":{"n":"${steps.one.b}"}}}]`)
	blob := strings.Repeat("x", 40<<10)
	started, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "test.big", Data: map[string]any{"blob": blob}}))
	if err != nil || len(started) != 1 {
		t.Fatalf("publish: %d runs, %v", len(started), err)
	}
	id := runID(t, started[0])
	r := b.waitRun(t, id, "waiting on the task", stepStatus("check", runengine.StepWaitingTask))
	if out, ok := r.Steps[0].Output.(map[string]any); !ok || out["a"] != blob || out["b"] != blob {
		t.Fatalf("the run read by id lacks its big output")
	}
	listed, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
	if err != nil || len(listed) != 1 {
		t.Fatal(err)
	}
	if out, ok := listed[0].Steps[0].Output.(map[string]any); !ok || out["bytes"] == nil || out["a"] != nil {
		t.Errorf("listed output = %.200v", listed[0].Steps[0].Output)
	}
	taskID := *r.Steps[1].TaskID
	b.eng.Close()
	b.st.Close()

	b = openAt()
	if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: taskID, Action: "complete", Actor: "usr_a"}); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	if out, ok := r.Steps[2].Output.(map[string]any); !ok || out["n"] != blob {
		t.Errorf("a later step did not read the output stored apart")
	}
}
