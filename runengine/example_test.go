package runengine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
)

// An engine on an in-memory Badger store runs a one-step process: a route
// step needs no provider. Runs advance in the background; OnFinish says
// when one's end is durable.
func Example() {
	ctx := context.Background()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	procs := process.NewService(process.Config{Store: st})
	caps := registry.New(registry.Config{Store: st})
	finished := make(chan string, 1)
	eng, err := runengine.New(runengine.Config{
		Store:        st,
		Capabilities: caps,
		Processes:    procs,
		OnFinish:     func(tenant, runID string, status runengine.RunStatus) { finished <- string(status) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := eng.Open(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	in, err := process.DecodeIn([]byte(`{
		"name": "Route invoices",
		"function": "finance",
		"trigger": {"type": "manual"},
		"steps": [{"key": "route", "type": "route", "config": {
			"input": {"amount_cents": 250000},
			"rules": [{"id": "large", "when": {"amount_cents": {"gte": 100000}}, "queue": "controller"}],
			"default": {"queue": "clerks"}
		}}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	def, err := procs.Create(ctx, "acme", "usr_ada", in)
	if err != nil {
		fmt.Println(err)
		return
	}
	started, err := eng.Start(ctx, runengine.StartParams{
		Tenant:    "acme",
		ProcessID: def.ID,
		Subject:   runengine.Subject{Type: "invoice", Label: "INV-7"},
		Actor:     "usr_ada",
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	select {
	case status := <-finished:
		fmt.Println("finished:", status)
	case <-time.After(time.Minute):
		fmt.Println("the run did not finish within a minute")
		return
	}
	run, err := eng.GetRun(ctx, "acme", started.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	out := run.Steps[0].Output.(map[string]any)
	fmt.Println(run.Subject.Label, run.Steps[0].Key, run.Steps[0].Status, out["queue"])
	// Output:
	// finished: completed
	// INV-7 route completed controller
}
