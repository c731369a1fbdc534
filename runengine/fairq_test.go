package runengine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFairQueueRounds hands out one tenant's commands all at once, and
// several tenants' in rounds of at most fairQuantum each, in turn.
func TestFairQueueRounds(t *testing.T) {
	t.Parallel()
	var f fairQueue
	push := func(tenant string, n int) {
		for range n {
			f.push(&command{tenant: tenant})
		}
	}
	count := func(batch []*command) map[string]int {
		m := map[string]int{}
		for _, c := range batch {
			m[c.tenant]++
		}
		return m
	}
	push("flood", 100)
	if diff := cmp.Diff(map[string]int{"flood": 100}, count(f.round(nil))); diff != "" {
		t.Errorf("one tenant's round (-want +got):\n%s", diff)
	}
	push("flood", 40)
	push("quiet", 1)
	push("flood", 10)
	var rounds []map[string]int
	for len(f.active) > 0 {
		rounds = append(rounds, count(f.round(nil)))
	}
	want := []map[string]int{{"flood": fairQuantum, "quiet": 1}, {"flood": 50 - fairQuantum}}
	if diff := cmp.Diff(want, rounds); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	// Order within a tenant is kept, and the quiet tenant's command comes
	// within the first round.
	var f2 fairQueue
	for i := range 3 * fairQuantum {
		f2.push(&command{tenant: "flood", runID: string(rune('a' + i%26))})
	}
	f2.push(&command{tenant: "quiet", runID: "q"})
	first := f2.round(nil)
	if len(first) != fairQuantum+1 || first[fairQuantum].runID != "q" || first[0].runID != "a" || first[1].runID != "b" {
		t.Errorf("first round = %d commands, quiet at %v", len(first), first[len(first)-1].runID)
	}
	for i := range maxQueuedTenants + 10 {
		f2.push(&command{tenant: "t" + string(rune('A'+i))})
		f2.round(nil)
	}
	if n := len(f2.tenants); n > maxQueuedTenants+1 {
		t.Errorf("kept %d tenant queues", n)
	}
}

// TestCommitShare gives a tenant alone whole batches, and, once another
// tenant is active, at most commitQuantum changes per transaction, the
// rest held back in order for the next ones.
func TestCommitShare(t *testing.T) {
	t.Parallel()
	var s commitShare
	// offer adds n changes of tenant to the open transaction and returns
	// how many it took.
	offer := func(tenant string, n int) int {
		took := 0
		for range n {
			if !s.hold(&delta{tenant: tenant}) {
				took++
			}
		}
		return took
	}
	if got := offer("flood", 500); got != 500 {
		t.Fatalf("a tenant alone: took %d of 500", got)
	}
	s.launched()
	if got := offer("quiet", 1); got != 1 {
		t.Fatalf("quiet took %d", got)
	}
	if got := offer("flood", 500); got != commitQuantum {
		t.Errorf("flood beside quiet: took %d, want %d", got, commitQuantum)
	}
	held := s.launched()
	if len(held) != 500-commitQuantum {
		t.Fatalf("held %d", len(held))
	}
	// The held changes go first into the next transaction, as many as
	// the quantum allows; a new change of the tenant waits behind them.
	took := 0
	for _, d := range held {
		if !s.hold(d) {
			took++
		}
	}
	if took != commitQuantum || offer("flood", 1) != 0 || offer("quiet", 1) != 1 {
		t.Errorf("second transaction took %d held changes", took)
	}
	// Once quiet is out of the window, flood gets whole batches again.
	for range shareWindow + 1 {
		for _, d := range s.launched() {
			d.tenant = ""
		}
		offer("flood", 1)
	}
	s.launched()
	if got := offer("flood", 500); got != 500 {
		t.Errorf("flood alone again: took %d of 500", got)
	}
	if len(s.takeHeld()) != 0 {
		t.Error("changes held while a tenant is alone")
	}
}

// TestFairQueueEngineCommandIsABarrier: a command of no tenant (a cluster
// node's change of shards) is handed out after every command queued before
// it, whatever their tenants' turns, and before every command queued after
// it (a run resumed on a gained shard must not be handled before the drop
// of that shard's stale entries).
func TestFairQueueEngineCommandIsABarrier(t *testing.T) {
	t.Parallel()
	var f fairQueue
	name := func(tenant string, n int) *command {
		return &command{tenant: tenant, runID: tenant + string(rune('0'+n))}
	}
	for i := range 20 {
		f.push(name("a", i%10))
	}
	f.push(name("b", 1))
	f.push(&command{runID: "drop"})
	f.push(name("a", 9))
	f.push(name("b", 2))
	var got []string
	for len(f.ordered) > 0 || len(f.active) > 0 {
		for _, c := range f.round(nil) {
			got = append(got, c.runID)
		}
	}
	drop := -1
	for i, id := range got {
		if id == "drop" {
			drop = i
		}
	}
	if drop != 21 || len(got) != 24 {
		t.Fatalf("the engine command came %d of %d: %v", drop, len(got), got)
	}
	if diff := cmp.Diff([]string{"a9", "b2"}, got[22:]); diff != "" {
		t.Errorf("after the engine command (-want +got):\n%s", diff)
	}
}
