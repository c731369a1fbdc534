package runengine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// collected is the output collectStep makes of a part event: over
// MaxInlineOutputBytes when big.
func collected(tag string, big bool) map[string]any {
	if !big {
		return map[string]any{"tag": tag}
	}
	return map[string]any{"tag": tag, "blob": strings.Repeat(tag, (runengine.MaxInlineOutputBytes+1024)/len(tag))}
}

// collectStep is a step type that keeps the output made of each
// "test.part" event (see collected) as its output so far (SetOutput),
// until an event with done set completes it with that event's output.
func collectStep() process.StepType {
	return process.Define(process.StepDef[struct{}]{
		Type: "collect", Label: "Collect", Description: "Keeps each part event's output until one says done.",
		Run: func(env process.StepEnv) bool {
			if ev, ok := env.EventArrived(); ok {
				m := ev.Data
				tag, _ := m["tag"].(string)
				out := collected(tag, m["big"] == true)
				if m["done"] == true {
					env.DropWaiter()
					return env.Complete(out, true)
				}
				env.SetOutput(out)
				env.Wait()
				return false
			}
			if _, waiting := env.Pending(); !waiting {
				env.AddWaiter("test.part", nil)
				env.Wait()
			}
			return false
		},
	})
}

// TestOutputSetAgainAfterStoredApart sets a step's output to one over
// MaxInlineOutputBytes (stored apart), then a small one, then a large one
// again, then completes the step with a small one and later with a large
// one, with a reopen between each: the run read by id, a rerun's reused
// output and the later step that reads it must all have the last output.
func TestOutputSetAgainAfterStoredApart(t *testing.T) {
	t.Parallel()
	types, err := process.NewStepRegistry(append(process.StepTypes(), collectStep())...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	prov, gate := &testProvider{}, &autoGate{auto: true}
	ctx := context.Background()
	var b *bundle
	openAt := func() {
		if b != nil {
			b.eng.Close()
			b.st.Close()
		}
		st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		procs := process.NewService(process.Config{Store: st, Clock: clk, StepTypes: types})
		b = openWith(t, st, clk, prov, gate, func(c *runengine.Config) {
			c.Processes, c.StepTypes = procs, types
		})
		b.procs = procs
	}
	openAt()
	def, err := b.procs.Create(ctx, tenant, "usr_test", process.ProcessIn{Name: "Collect", Trigger: process.Trigger{Type: "manual"},
		Steps: []process.Step{{Key: "collect", Type: "collect"}, {Key: "after", Type: process.StepExecute, Capability: "test.echo",
			Config: []byte(`{"args":{"tag":"${steps.collect.tag}"}}`)}}})
	if err != nil {
		t.Fatal(err)
	}

	big := func(tag string) map[string]any { return collected(tag, true) }
	small := func(tag string) map[string]any { return collected(tag, false) }
	part := func(out map[string]any, done bool) {
		t.Helper()
		if _, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "test.part",
			Data: map[string]any{"tag": out["tag"], "big": out["blob"] != nil, "done": done}}); err != nil {
			t.Fatal(err)
		}
	}
	outputIs := func(id, what string, want map[string]any) *runengine.Run {
		t.Helper()
		r := b.waitRun(t, id, what, func(r *runengine.Run) bool { return cmp.Equal(r.Steps[0].Output, any(want)) })
		openAt()
		got, err := b.eng.GetRun(ctx, tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(any(want), got.Steps[0].Output); diff != "" {
			t.Errorf("%s: the output read after a reopen (-want +got):\n%.600s", what, diff)
		}
		err = b.st.View(ctx, func(r store.Reader) error {
			_, err := r.Get(store.Key(tenant, "run-output", id, "collect"))
			return err
		})
		if apart := err == nil; apart != (want["blob"] != nil) || (!apart && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("%s: the output kept apart: %v (%v)", what, apart, err)
		}
		return r
	}

	for _, last := range []map[string]any{small("end"), big("END")} {
		id := b.start(t, def.ID)
		b.waitRun(t, id, "waiting for parts", stepStatus("collect", runengine.StepWaiting))
		part(big("one"), false)
		outputIs(id, "first large output", big("one"))
		part(small("two"), false)
		outputIs(id, "small output after a large one", small("two"))
		part(big("three"), false)
		outputIs(id, "large output again", big("three"))
		part(last, true)
		b.waitRun(t, id, "completed", status(runengine.RunCompleted))
		r := outputIs(id, "completed with the last output", last)
		if diff := cmp.Diff(any(map[string]any{"tag": last["tag"]}), r.Steps[1].Output); diff != "" {
			t.Errorf("the later step read (-want +got):\n%s", diff)
		}
		listed, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(listed, func(r *runengine.Run) bool { return r.ID == id })
		if i < 0 {
			t.Fatalf("run %s is not listed", id)
		}
		if out, _ := listed[i].Steps[0].Output.(map[string]any); (out["bytes"] != nil) != (last["blob"] != nil) || out["tag"] != nil && out["tag"] != last["tag"] {
			t.Errorf("the last output %v is listed as %.200v", last["tag"], listed[i].Steps[0].Output)
		}

		re, err := b.eng.Rerun(ctx, tenant, id, "after", "usr_test")
		if err != nil {
			t.Fatal(err)
		}
		b.waitRun(t, re.ID, "rerun completed", status(runengine.RunCompleted))
		rr := outputIs(re.ID, "the rerun's reused output", last)
		if diff := cmp.Diff(any(map[string]any{"tag": last["tag"]}), rr.Steps[1].Output); diff != "" {
			t.Errorf("the rerun's later step read (-want +got):\n%s", diff)
		}
	}
}
