//go:build failpoints

package runengine_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// TestFailpointCockpitCountersSkipFailedCommits: commits that fail (the
// group commit refused) move no counter held in memory; the ones after
// them do.
func TestFailpointCockpitCountersSkipFailedCommits(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := &counterReads{Store: st}
	var failing atomic.Bool
	b := openWith(t, cs, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(c *runengine.Config) {
		c.Failpoints.InGroupCommit = func(int) error {
			if failing.Load() {
				return errors.New("failpoint: the group commit fails")
			}
			return nil
		}
	})
	ctx := context.Background()
	def := b.create(t, `{"type":"manual"}`, `[{"key":"check","type":"human_task","config":{"title":"Check"}}]`)
	first := b.start(t, def.ID)
	b.waitRun(t, first, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	checkCockpit(t, b, cs, tenant, "before the failed commits")

	failing.Store(true)
	for range 3 {
		if _, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Actor: "usr_test"}); err == nil {
			t.Fatal("a start whose commit failed succeeded")
		}
	}
	failing.Store(false)
	checkCockpit(t, b, cs, tenant, "after the failed commits")
	c, err := b.eng.Cockpit(ctx, tenant, runengine.Viewer{CanWork: true}, nil)
	if err != nil || c.Running != 1 || c.WaitingOnYou != 1 {
		t.Fatalf("after the failed commits: %d running, %d waiting on you, %v; want 1, 1", c.Running, c.WaitingOnYou, err)
	}
	second := b.start(t, def.ID)
	b.waitRun(t, second, "waiting on its task", stepStatus("check", runengine.StepWaitingTask))
	checkCockpit(t, b, cs, tenant, "after a commit that landed")
	if c, err = b.eng.Cockpit(ctx, tenant, runengine.Viewer{CanWork: true}, nil); err != nil || c.Running != 2 {
		t.Fatalf("after a commit that landed: %d running, %v; want 2", c.Running, err)
	}
}
