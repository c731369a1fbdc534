package bas_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/process"
)

// A person claims a human task; a second person's claim is refused by the
// check, which runs right before the change; the first hands it on.
func ExampleWorkspace_AssignTask() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	in, err := process.DecodeIn([]byte(`{"name": "Check", "trigger": {"type": "manual"},
	  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at it"}}]}`))
	if err != nil {
		panic(err)
	}
	def, err := ws.Processes().Create(ctx, "acme", "usr_ann", in)
	if err != nil {
		panic(err)
	}
	run, err := ws.Start(ctx, bas.StartParams{Tenant: "acme", ProcessID: def.ID, Subject: bas.Subject{Type: "x", Label: "X-1"}})
	if err != nil {
		panic(err)
	}
	taskID := *run.Steps[0].TaskID
	unassigned := func(t *bas.Task) error {
		if t.Assignee != nil {
			return fmt.Errorf("%w: task is assigned to %s", bas.ErrConflict, *t.Assignee)
		}
		return nil
	}
	claim := func(who string) (*bas.Task, error) {
		return ws.AssignTask(ctx, bas.AssignTaskParams{Tenant: "acme", TaskID: taskID, Assignee: who,
			Via: bas.AssignViaClaim, Actor: who, Check: unassigned})
	}
	t, err := claim("usr_ann")
	if err != nil {
		panic(err)
	}
	fmt.Println(*t.Assignee)
	_, err = claim("usr_bob")
	fmt.Println(errors.Is(err, bas.ErrConflict))
	t, err = ws.AssignTask(ctx, bas.AssignTaskParams{Tenant: "acme", TaskID: taskID, Assignee: "usr_bob", Actor: "usr_ann"})
	if err != nil {
		panic(err)
	}
	fmt.Println(*t.Assignee)
	// Output:
	// usr_ann
	// true
	// usr_bob
}
