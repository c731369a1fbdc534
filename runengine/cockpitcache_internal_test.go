package runengine

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestCountCacheHoldsFewTenants: the counters of at most max tenants are
// held, the least recently read forgotten first; a commit of a tenant not
// held holds nothing, and a tenant read again is read from the store.
func TestCountCacheHoldsFewTenants(t *testing.T) {
	eng, _ := memEngine(t, Config{})
	eng.countCache.max = 2
	ctx := context.Background()
	setCounter := func(tenant string, n int64) {
		t.Helper()
		key := counterKey(tenant, "inflight", "finance")
		err := eng.commits.commitWait(ctx, &delta{apply: func(store.Txn) error { return nil }, counters: []counterInc{{key, n}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	running := func(tenant string) int {
		t.Helper()
		c, err := eng.Cockpit(ctx, tenant, Viewer{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Running
	}
	held := func() []string {
		eng.countCache.mu.Lock()
		defer eng.countCache.mu.Unlock()
		var out []string
		for e := eng.countCache.lru.Front(); e != nil; e = e.Next() {
			out = append(out, e.Value.(*tenantCounts).tenant)
		}
		return out
	}
	for i, tenant := range []string{"ten_a", "ten_b", "ten_c"} {
		setCounter(tenant, int64(i+1))
	}
	for _, tenant := range []string{"ten_a", "ten_b", "ten_c"} {
		running(tenant)
	}
	if diff := cmp.Diff([]string{"ten_c", "ten_b"}, held()); diff != "" {
		t.Errorf("held after reading three (-want +got):\n%s", diff)
	}
	setCounter("ten_a", 10) // not held: holds nothing
	if diff := cmp.Diff([]string{"ten_c", "ten_b"}, held()); diff != "" {
		t.Errorf("held after a commit of a tenant not held (-want +got):\n%s", diff)
	}
	setCounter("ten_b", 5)
	got := []int{running("ten_a"), running("ten_b"), running("ten_c")}
	if diff := cmp.Diff([]int{11, 7, 3}, got); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ten_c", "ten_b"}, held()); diff != "" {
		t.Errorf("held at the end (-want +got):\n%s", diff)
	}
	if n := eng.countCache.held.Load(); n != 2 {
		t.Errorf("held count %d, want 2", n)
	}
}

// TestCountCacheKeepsTheWindowsDays: a commit of a day before the oldest
// held is not held, and reading the cockpit forgets the days that left the
// window; a node's share and keys of other shapes are not counters.
func TestCountCacheKeepsTheWindowsDays(t *testing.T) {
	k := newCountCache(4)
	tc := &tenantCounts{tenant: "ten_a", cells: map[string]*countCell{}, from: "2026-03-01"}
	k.add(string(store.Key("ten_a")), tc)
	k.landed(map[string]int64{
		counterKey("ten_a", "completed", "2026-02-28"):                        1,
		counterKey("ten_a", "completed", "2026-03-01"):                        2,
		counterKey("ten_a", "minutes", "2026-03-02"):                          3,
		counterKey("ten_a", "overdue"):                                        4,
		counterKey("ten_a", "overdue") + string(store.Key("node-2")):          5,
		counterKey("ten_a", "inflight", "sales") + string(store.Key("n-2")):   6,
		counterKey("ten_b", "completed", "2026-03-01"):                        7,
		string(binary.BigEndian.AppendUint64(store.Key("ten_a", "count"), 9)): 8,
	})
	cells := func() []string {
		var out []string
		for _, c := range tc.cells {
			out = append(out, c.name+"/"+c.part)
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff([]string{"completed/2026-03-01", "minutes/2026-03-02", "overdue/"}, cells()); diff != "" {
		t.Errorf("cells held (-want +got):\n%s", diff)
	}
	tc.prune("2026-03-02")
	if diff := cmp.Diff([]string{"minutes/2026-03-02", "overdue/"}, cells()); diff != "" {
		t.Errorf("cells held after the day moved (-want +got):\n%s", diff)
	}
}
