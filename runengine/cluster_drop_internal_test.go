package runengine

import (
	"errors"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// clusterWorker makes a cluster node's engine, not opened (it holds no
// shard), and returns its first worker, run by the test alone.
func clusterWorker(t *testing.T) *worker {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, _ := engineOn(t, memStore(t), clk, Config{Cluster: &ClusterConfig{NodeID: "a", Shards: 2, LeaseTTL: 9 * time.Second, Clock: clk}})
	return eng.workers[0]
}

func inFlight(s *scheduler, key []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.inflight[string(key)]
	return ok
}

// TestNotMineLetsGoOfInbox: a forwarded command handed out by a node
// whose shard moved away before its worker took it is let go of: the
// node keeps no due key in flight for good (before, the inbox key stayed
// in flight on that node, a key less of maxDueInflight's room, until the
// node owned the shard again), and the new owner applies it.
func TestNotMineLetsGoOfInbox(t *testing.T) {
	w := clusterWorker(t)
	s := w.e.sched
	key := dueKey(w.e.clock.Now(), "ten_a", "run_1", inboxPrefix+"inb_1")
	s.mu.Lock()
	s.inflight[string(key)] = time.Now()
	s.mu.Unlock()
	w.handle(&command{kind: cmdCompleteTask, tenant: "ten_a", runID: "run_1", cl: &clusterArgs{inbox: key},
		task: &taskArgs{taskID: "tsk_1", action: "approve"}})
	if inFlight(s, key) {
		t.Error("the forwarded command of a run not this node's is still in flight")
	}
}

// TestDroppedShardSettlesHeldChanges: a run dropped because its shard
// changed hands tells what waited for its held changes that they were not
// made (the owner makes them): a timer's due key held with a call in
// flight is let go of (before, it stayed in flight on the node for good).
func TestDroppedShardSettlesHeldChanges(t *testing.T) {
	w := clusterWorker(t)
	s := w.e.sched
	key := dueKey(w.e.clock.Now(), "ten_a", "run_1", "tok")
	s.mu.Lock()
	s.inflight[string(key)] = time.Now()
	s.mu.Unlock()
	var told error
	en := &entry{run: &Run{ID: "run_1", Tenant: "ten_a"}, inflight: "call_1"}
	en.held.settled = []func(error){func(err error) { s.settle(key, err) }, func(err error) { told = err }}
	k := runKeyOf("ten_a", "run_1")
	w.cache[k] = en
	w.dropShards([]bool{true, true})
	if _, ok := w.cache[k]; ok {
		t.Fatal("the run of a shard that changed hands is still held")
	}
	if inFlight(s, key) {
		t.Error("the timer held on the dropped run is still in flight")
	}
	if !errors.Is(told, errNotOwner) {
		t.Errorf("the held change's waiter was told %v, want errNotOwner", told)
	}
}

// TestParkedKeyOfAShardNotHeldIsForgotten: on a cluster node, a parked
// due key of a run whose shard the node does not hold (any more) is
// forgotten at its retry, though the key is still stored: its new owner
// handles it. Before its retry it is kept.
func TestParkedKeyOfAShardNotHeldIsForgotten(t *testing.T) {
	w := clusterWorker(t)
	s := w.e.sched
	key := dueKey(w.e.clock.Now(), "ten_a", "run_1", "tok")
	if err := w.e.st.Update(t.Context(), func(tx store.Txn) error { return tx.Set(key, nil) }); err != nil {
		t.Fatal(err)
	}
	s.park("ten_a", "run_1", key, errCorruptRun)
	now := w.e.clock.Now()
	look := func(at time.Time) []string {
		t.Helper()
		if err := w.e.st.View(t.Context(), func(r store.Reader) error { return s.forgetGoneParked(r, at) }); err != nil {
			t.Fatal(err)
		}
		return parkedKeys(s)
	}
	if got := look(now.Add(parkFirst - time.Nanosecond)); len(got) != 1 {
		t.Errorf("before its retry: %d parked, want the key kept", len(got))
	}
	if got := look(now.Add(parkFirst)); len(got) != 0 {
		t.Errorf("at its retry, the key of a shard not held is still parked: %q", got)
	}
}
