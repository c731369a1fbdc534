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

// A what-if replays a process version over runs people decided. Here the
// candidate leaves the check to a person as the run did, so the person's
// decision is deferred, not compared.
func ExampleEngine_WhatIf() {
	ctx := context.Background()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	procs := process.NewService(process.Config{Store: st})
	eng, err := runengine.New(runengine.Config{Store: st, Capabilities: registry.New(registry.Config{Store: st}), Processes: procs})
	if err == nil {
		err = eng.Open(ctx)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	in, _ := process.DecodeIn([]byte(`{"name":"Review","trigger":{"type":"manual"},
	  "steps":[{"key":"check","type":"human_task","config":{"title":"Check","actions":["accept","refuse"]}}]}`))
	def, err := procs.Create(ctx, "ten_1", "usr_1", in)
	if err != nil {
		fmt.Println(err)
		return
	}
	run, _ := eng.Start(ctx, runengine.StartParams{Tenant: "ten_1", ProcessID: def.ID, Subject: runengine.Subject{Type: "doc", Label: "D-1"}})
	run, _ = eng.WaitRunUntil(ctx, "ten_1", run.ID, func(r *runengine.Run) bool { return r.Steps[0].TaskID != nil })
	if _, err := eng.CompleteTask(ctx, runengine.CompleteTaskParams{Tenant: "ten_1", TaskID: *run.Steps[0].TaskID, Action: "accept", Actor: "usr_2"}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := eng.WaitRun(ctx, "ten_1", run.ID); err != nil {
		fmt.Println(err)
		return
	}

	job, err := eng.WhatIf(ctx, "ten_1", runengine.WhatIfParams{ProcessID: def.ID}, "usr_1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for deadline := time.Now().Add(time.Minute); job.Status != runengine.JobCompleted; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			fmt.Println("the what-if did not complete within a minute")
			return
		}
		if job, err = eng.GetJob(ctx, "ten_1", job.ID); err != nil {
			fmt.Println(err)
			return
		}
	}
	rep := job.Result
	fmt.Printf("cases %d, compared %d, deferred %d\n", rep.Cases, rep.Compared, rep.Deferred)
	// Output: cases 1, compared 0, deferred 1
}
