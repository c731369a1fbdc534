package runengine_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
)

// TestTaskTitleBounded checks that a task's title, whose references a run
// fills in from its data, is cut to MaxTaskTitle characters: a person's
// long answer in an earlier step does not make every inbox, the cockpit's
// open tasks and the task.created event carry it.
func TestTaskTitleBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	def := b.create(t, `{"type":"manual"}`, `[{"key":"ask","type":"human_task","config":{"title":"Ask",
		"fields":[{"key":"name","label":"Name","type":"text"}]}},
		{"key":"greet","type":"human_task","config":{"title":"Hello ${steps.ask.fields.name}"}}]`)
	for _, c := range []struct {
		name, answer, want string
	}{
		{"short", "Ann", "Hello Ann"},
		{"at the bound", strings.Repeat("é", runengine.MaxTaskTitle-6), "Hello " + strings.Repeat("é", runengine.MaxTaskTitle-6)},
		{"long", strings.Repeat("é", 5000), "Hello " + strings.Repeat("é", runengine.MaxTaskTitle-6)},
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
			if diff := cmp.Diff(c.want, task.Title); diff != "" {
				t.Errorf("title (%d characters) (-want +got):\n%s", utf8.RuneCountInString(task.Title), diff)
			}
		})
	}
}
