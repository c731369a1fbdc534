package automation

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// memoService returns a gate that decides from memory, on a store of its
// own, with the workspace levels patches (by tenant) set.
func memoService(t *testing.T, c clock.Clock, patches map[string]string) *Service {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := New(Config{Store: st, Clock: c})
	for tenant, patch := range patches {
		p, err := ParsePatch([]byte(patch))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateWorkspace(context.Background(), tenant, "u1", p); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestGateMemoForgets: the day counts kept in memory are bounded. Up to
// maxCounts they are kept; past it, those with no decision in flight are
// forgotten (a decision in flight keeps its counts), and when the day
// changes, the counts of older days are forgotten.
func TestGateMemoForgets(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	all := `{"percent": 100, "max_percent": 100}`
	s := memoService(t, fc, map[string]string{"t0": all, "t1": all, "t2": all})
	s.memo.maxCounts = 4
	ctx := context.Background()
	decide := func(tenant string) callwrites.Batch {
		t.Helper()
		w := callwrites.Writes{Joins: true}
		d, err := s.Decide(callwrites.With(ctx, &w), runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1", RunID: "run_1",
			StepKey: "pay", ItemKey: "run_1/pay", New: true})
		if err != nil || !d.Auto {
			t.Fatalf("decision of %s: %+v, %v", tenant, d, err)
		}
		return w.TakeAll()
	}
	counts := func() int {
		s.memo.mu.Lock()
		defer s.memo.mu.Unlock()
		return len(s.memo.counts)
	}
	for i := range 2 {
		b := decide(fmt.Sprintf("t%d", i))
		b.Drop(nil)
	}
	if n := counts(); n != 4 {
		t.Errorf("%d counts kept at the bound of 4, want 4", n)
	}
	inFlight := decide("t2") // 6 counts: the settled 4 are forgotten
	if n := counts(); n != 2 {
		t.Errorf("%d counts kept past the bound, want 2 (those in flight)", n)
	}
	inFlight.Drop(nil)

	fc.Advance(24 * time.Hour)
	b := decide("t0")
	if n := counts(); n != 2 {
		t.Errorf("%d counts the next day, want 2 (today's)", n)
	}
	b.Drop(nil)
}

// TestGateMemoItemTwiceInABatch: one item asked twice in one batch gets
// one answer, handed and counted once.
func TestGateMemoItemTwiceInABatch(t *testing.T) {
	t.Parallel()
	s := memoService(t, clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)), map[string]string{"t1": `{"percent": 100, "max_percent": 100}`})
	ctx := context.Background()
	var ws [2]callwrites.Writes
	batch := make([]*pendingDecision, 2)
	for i := range batch {
		batch[i] = &pendingDecision{req: runengine.GateRequest{Tenant: "t1", ProcessID: "prc_1", RunID: "run_1", StepKey: "pay",
			ItemKey: "run_1/pay", New: true}, key: "run_1/pay", writes: &ws[i]}
	}
	s.decideBatch(ctx, batch)
	counts := 0
	for i := range ws {
		b := ws[i].TakeAll()
		counts += len(b.Counts)
		b.Drop(nil)
	}
	if batch[0].out != batch[1].out || !batch[0].out.Auto || counts != 2 {
		t.Errorf("answers %+v and %+v, %d count increments; want one automatic answer counted once (2)", batch[0].out, batch[1].out, counts)
	}
}

// TestGateMemoItemsSettle: a decision is in gateMemo's items only while
// it is in flight: an automatic or supervised one handed to a commit
// until that commit settles (committed or failed), one that commits on
// its own not after Decide returns.
func TestGateMemoItemsSettle(t *testing.T) {
	t.Parallel()
	s := memoService(t, clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)),
		map[string]string{"auto": `{"percent": 100, "max_percent": 100}`, "supervised": `{"percent": 0}`})
	ctx := context.Background()
	items := func() int {
		s.memo.mu.Lock()
		defer s.memo.mu.Unlock()
		return len(s.memo.items)
	}
	req := func(tenant, key string) runengine.GateRequest {
		return runengine.GateRequest{Tenant: tenant, ProcessID: "prc_1", RunID: "run_1", StepKey: key, ItemKey: "run_1/" + key, New: true}
	}
	for _, test := range []struct {
		tenant string
		auto   bool
		settle error
	}{{"auto", true, nil}, {"auto", true, errors.New("the step's commit failed")}, {"supervised", false, nil}} {
		w := callwrites.Writes{Joins: true}
		d, err := s.Decide(callwrites.With(ctx, &w), req(test.tenant, fmt.Sprint("k", test.auto, test.settle != nil)))
		if err != nil || d.Auto != test.auto {
			t.Fatalf("%s: %+v, %v", test.tenant, d, err)
		}
		if n := items(); n != 1 {
			t.Errorf("%s: %d items in flight, want 1", test.tenant, n)
		}
		b := w.TakeAll()
		b.Drop(test.settle)
		if n := items(); n != 0 {
			t.Errorf("%s settled with %v: %d items in flight, want 0", test.tenant, test.settle, n)
		}
	}
	if _, err := s.Decide(ctx, req("auto", "own")); err != nil {
		t.Fatal(err)
	}
	if n := items(); n != 0 {
		t.Errorf("a decision committed on its own: %d items in flight, want 0", n)
	}
}

// TestLevelCacheKeepsOnlyWhatNoWriteOverlapped: a read's levels are kept
// only when no write of levels began or ended since the read began, and
// none is open; while a write is open nothing kept is used.
func TestLevelCacheKeepsOnlyWhatNoWriteOverlapped(t *testing.T) {
	t.Parallel()
	k := levelKey{"t1", "prc_1"}
	read := newStoredLevels(&Level{ID: workspaceID}, nil, "prc_1", time.Now())
	// Each case reads (r: reading, p: put of that read) around writes (b:
	// one begins, e: the oldest open one ends, E: the last ended is told
	// ended again, which does nothing), then looks the levels up.
	cases := []struct {
		steps string
		kept  bool
	}{
		{"rp", true},      // no write
		{"rbpe", false},   // a write began during the read
		{"rbep", false},   // began and ended during it
		{"brep", false},   // the read began while a write was open
		{"berp", true},    // a write ended before the read
		{"rpb", false},    // kept, then a write opens
		{"rpbeE", false},  // and ends
		{"bbeErp", false}, // an end told twice does not end the other write
		{"bbeerp", true},
	}
	for _, tc := range cases {
		c := newLevelCache()
		var gen uint64
		var ends []func()
		var last func()
		for _, step := range tc.steps {
			switch step {
			case 'r':
				gen = c.reading()
			case 'p':
				c.put(gen, k, read)
			case 'b':
				ends = append(ends, c.writing())
			case 'e':
				last = ends[0]
				ends = ends[1:]
				last()
			case 'E':
				last()
			}
		}
		if _, ok := c.get(k); ok != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.steps, ok, tc.kept)
		}
	}
}

// TestOutcomeWritingNoLevelKeepsTheLevelCache: an outcome the gate
// observes keeps it from its levels in memory only when it writes levels:
// a verdict that ramps nothing leaves the kept levels in use, the verdict
// that ramps the process drops them.
func TestOutcomeWritingNoLevelKeepsTheLevelCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memoService(t, clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)),
		map[string]string{"t1": `{"auto_ramp": true, "ramp_min_decisions": 5}`})
	k := levelKey{"t1", "prc_1"}
	var got []bool
	for i := range 6 {
		s.lvCache.put(s.lvCache.reading(), k, newStoredLevels(&Level{ID: workspaceID}, nil, "prc_1", time.Now()))
		if err := s.Observe(ctx, runengine.Outcome{Tenant: "t1", ProcessID: "prc_1", StepKey: "send",
			RunID: fmt.Sprintf("run_%d", i), Actor: "u1", Agreed: true}); err != nil {
			t.Fatal(err)
		}
		_, kept := s.lvCache.get(k)
		got = append(got, kept)
	}
	// The fifth agreeing verdict ramps 0% -> 10%; the sixth is the first
	// of the next ramp_min_decisions.
	if diff := cmp.Diff([]bool{true, true, true, true, false, true}, got); diff != "" {
		t.Errorf("levels kept after each verdict (-want +got):\n%s", diff)
	}
}
