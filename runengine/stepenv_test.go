package runengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// A step type the engine's means drive is one declaration too: this file
// adds "confirm" (a person answers yes or no, then test.echo is called with
// the answer) with its executor, and registers it with one line.

// ConfirmConfig configures a confirm step.
type ConfirmConfig struct {
	Question string `json:"question" jsonschema:"required,minLength=1,maxLength=200"`
}

func confirmStep() process.StepType {
	return process.Define(process.StepDef[ConfirmConfig]{
		Type: "confirm", Label: "Confirm", Description: "Asks a person yes or no, then echoes the answer.",
		Needs: func(process.Step) []string { return []string{"test.echo"} },
		Run: func(env process.StepEnv) bool {
			if env.Called() {
				out, ok := env.CallOutcome()
				if !ok {
					return false
				}
				return env.Complete(map[string]any{"echo": out}, true)
			}
			if t, ok := env.TaskDone(); ok {
				env.Resume()
				env.Call("test.echo", map[string]any{"answer": t.Outcome, "by": t.CompletedBy}, "call", "")
				return false
			}
			if env.HasTask() {
				return false
			}
			var cfg ConfirmConfig
			if err := env.Config(&cfg); err != nil {
				return env.Fail(err)
			}
			env.CreateTask(process.TaskSpec{Title: cfg.Question, Actions: []string{"yes", "no"}})
			return false
		},
	})
}

func TestAddedDrivenStepType(t *testing.T) {
	t.Parallel()
	types, err := process.NewStepRegistry(append(process.StepTypes(), confirmStep())...) // the registry line
	if err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	b := &bundle{st: st, clk: clk, prov: &testProvider{}, gate: &autoGate{auto: true}}
	b.procs = process.NewService(process.Config{Store: st, Clock: clk, StepTypes: types})
	b.reg = registry.New(registry.Config{Store: st, Clock: clk})
	if err := b.reg.Register(b.prov); err != nil {
		t.Fatal(err)
	}
	b.eng, err = runengine.New(runengine.Config{Store: st, Clock: clk, Capabilities: b.reg, Processes: b.procs,
		Gate: b.gate, RetryBase: time.Second, StepTypes: types})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.eng.Close()
		st.Close()
	})

	if confirm, _ := types.Lookup("confirm"); confirm.Pure {
		t.Error("a type with Run is not pure")
	}
	in := process.ProcessIn{Name: "Confirm", Trigger: process.Trigger{Type: "manual"}, Steps: []process.Step{
		{Key: "ask", Type: "confirm", Config: []byte(`{"question":"Pay ${subject.label}?"}`)},
		{Key: "after", Type: process.StepExecute, Capability: "test.echo", Config: []byte(`{"args":{"said":"${steps.ask.echo.answer}"}}`)},
	}}
	def, err := b.procs.Create(context.Background(), tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	id := b.start(t, def.ID)
	r := b.waitRun(t, id, "waiting for the task", stepStatus("ask", runengine.StepWaitingTask))
	task, err := b.eng.GetTask(context.Background(), tenant, *r.Steps[0].TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Pay INV-1?" || !cmp.Equal(task.Actions, []string{"yes", "no"}) {
		t.Errorf("task %q %v", task.Title, task.Actions)
	}
	if _, err := b.eng.CompleteTask(context.Background(), runengine.CompleteTaskParams{Tenant: tenant, TaskID: task.ID,
		Action: "yes", Actor: "usr_ann"}); err != nil {
		t.Fatal(err)
	}
	r = b.waitRun(t, id, "completed", status(runengine.RunCompleted))
	want := map[string]any{"echo": map[string]any{"answer": "yes", "by": "usr_ann"}}
	if diff := cmp.Diff(want, r.Steps[0].Output); diff != "" {
		t.Errorf("confirm output (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"said": "yes"}, r.Steps[1].Output); diff != "" {
		t.Errorf("next step's output (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{id + "/ask/1", id + "/after/1"}, b.prov.keys()); diff != "" {
		t.Errorf("idempotency keys (-want +got):\n%s", diff)
	}
}
