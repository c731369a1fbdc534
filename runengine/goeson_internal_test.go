package runengine

import (
	"context"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
)

// autoDecides is a Gate that lets every action run without a person.
type autoDecides struct{}

// Decide answers automatic.
func (autoDecides) Decide(context.Context, GateRequest) (GateDecision, error) {
	return GateDecision{Auto: true, Reason: "test"}, nil
}

// Observe does nothing.
func (autoDecides) Observe(context.Context, Outcome) error { return nil }

// TestRunChangeSaysWhetherItGoesOn: a run's change committed while a call
// of the run is to go out (once that commit lands) says the run goes on,
// so a flood's batch awaits the run's next change (see anticipation); the
// change that ends the run does not.
func TestRunChangeSaysWhetherItGoesOn(t *testing.T) {
	eng, procs, p := numberedEngine(t, Config{Gate: autoDecides{}})
	ctx := context.Background()
	const tenant = "ten_a"
	def := createNew(t, procs, tenant, `{"name": "One call", "trigger": {"type": "manual"},
		"steps": [{"key": "a", "type": "execute", "capability": "test.number", "config": {"args": {}}}]}`)
	// hold makes the committer wait inside a change of no tenant, so the
	// run's next change stays queued where the test reads it.
	hold := func() func() {
		t.Helper()
		applied, unblock := make(chan struct{}), make(chan struct{})
		eng.commits.submit(&delta{apply: func(store.Txn) error {
			close(applied)
			<-unblock
			return nil
		}})
		testwait.Recv(t, applied, "the committer is held")
		release := sync.OnceFunc(func() { close(unblock) })
		t.Cleanup(release) // before the engine closes, which waits for the committer
		return release
	}
	queued := func(what string) bool {
		t.Helper()
		var goesOn bool
		testwait.Until(t, what+" is queued", func() bool {
			eng.commits.mu.Lock()
			defer eng.commits.mu.Unlock()
			for _, d := range eng.commits.q {
				if d.tenant == tenant {
					goesOn = d.goesOn
					return true
				}
			}
			return false
		})
		return goesOn
	}
	release := hold()
	started := make(chan error, 1)
	go func() {
		_, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID, Subject: Subject{Type: "order", Label: "PO-1"}})
		started <- err
	}()
	if !queued("the run's start") {
		t.Error("the start of a run whose call goes out once it lands does not say the run goes on")
	}
	release()
	if err := testwait.Recv(t, started, "the start"); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, p.entered, "the call")
	release = hold()
	close(p.release[0])
	if queued("the run's end") {
		t.Error("the change that ends the run says the run goes on")
	}
	release()
}
