//go:build failpoints

package runengine_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
)

// TestFailpointFailedFirstCommitFreesItsRunCapSlot: a new run takes a run
// cap slot at its start; when its first commit fails the run is gone, and
// so is its slot: the next start (cap one) runs, not waiting for good for
// a slot the lost run holds.
func TestFailpointFailedFirstCommitFreesItsRunCapSlot(t *testing.T) {
	t.Parallel()
	for _, c := range oneSlotCaps {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var failed atomic.Int32
			b := openChanged(t, func(cfg *runengine.Config) {
				c.change(cfg)
				cfg.Failpoints.InGroupCommit = func(int) error {
					if failed.CompareAndSwap(0, 1) {
						return errors.New("failpoint: the group commit fails")
					}
					return nil
				}
			})
			def := b.create(t, `{"type":"manual"}`, `[{"key":"act","type":"execute","capability":"test.echo","config":{"args":{"n":1}}}]`)
			ctx := context.Background()
			_, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
				Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
			if err == nil || failed.Load() != 1 {
				t.Fatalf("the first start answered %v (its commit failed: %v), want an error", err, failed.Load() == 1)
			}
			id := b.start(t, def.ID)
			b.waitRun(t, id, "completed, not waiting for the lost run's slot", status(runengine.RunCompleted))
		})
	}
}
