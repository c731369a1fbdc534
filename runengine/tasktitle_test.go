package runengine_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// TestTaskTitleBounded checks that a task's title and description, whose
// references a run fills in from its data, are cut to MaxTaskTitle and
// MaxTaskDescription characters: a person's long answer in an earlier step
// does not make every inbox, the cockpit's open tasks and the task.created
// event carry it.
func TestTaskTitleBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"ask","type":"human_task","config":{"title":"Ask",
		"fields":[{"key":"name","label":"Name","type":"text"}]}},
		{"key":"greet","type":"human_task","config":{"title":"Hello ${steps.ask.fields.name}",
		"description":"About ${steps.ask.fields.name}"}}]`)
	e := func(n int) string { return strings.Repeat("é", n) }
	for _, c := range []struct {
		name, answer, title, desc string
	}{
		{"short", "Ann", "Hello Ann", "About Ann"},
		{"title at its bound", e(runengine.MaxTaskTitle - 6), "Hello " + e(runengine.MaxTaskTitle-6), "About " + e(runengine.MaxTaskTitle-6)},
		{"description at its bound", e(runengine.MaxTaskDescription - 6), "Hello " + e(runengine.MaxTaskTitle-6), "About " + e(runengine.MaxTaskDescription-6)},
		{"long", e(5000), "Hello " + e(runengine.MaxTaskTitle-6), "About " + e(runengine.MaxTaskDescription-6)},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := b.start(t, def.ID)
			r := b.waitRun(t, id, "waiting on ask", stepStatus("ask", runengine.StepWaitingTask))
			if _, err := b.eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: tenant, TaskID: *r.Steps[0].TaskID,
				Action: "complete", Fields: map[string]any{"name": c.answer}, Actor: "usr_a"}); err != nil {
				t.Fatal(err)
			}
			r = b.waitRun(t, id, "waiting on greet", stepStatus("greet", runengine.StepWaitingTask))
			task, err := b.eng.GetTask(ctx, tenant, *r.Steps[1].TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.title, task.Title); diff != "" {
				t.Errorf("title (%d characters) (-want +got):\n%s", utf8.RuneCountInString(task.Title), diff)
			}
			if task.Description == nil {
				t.Fatal("no description")
			}
			if diff := cmp.Diff(c.desc, *task.Description); diff != "" {
				t.Errorf("description (%d characters) (-want +got):\n%s", utf8.RuneCountInString(*task.Description), diff)
			}
		})
	}
}
