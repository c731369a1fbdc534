package runengine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// runScans is a Badger store that counts the scans of run records made
// through View.
type runScans struct {
	*badgerstore.Store
	n atomic.Int64
}

func (s *runScans) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(runScanReader{r, s}) })
}

type runScanReader struct {
	store.Reader
	s *runScans
}

// ReadVersion and KeyVersion pass the store's versions on (see
// store.VersionReader), so the engine's reads through View use them.
func (r runScanReader) ReadVersion() uint64 { return r.Reader.(store.VersionReader).ReadVersion() }

func (r runScanReader) KeyVersion(key []byte) (uint64, error) {
	return r.Reader.(store.VersionReader).KeyVersion(key)
}

func (r runScanReader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	if parts, err := store.DecodeKey(opts.Prefix); err == nil && len(parts) == 3 && parts[1] == "r" && parts[2] == "run" {
		r.s.n.Add(1)
	}
	return r.Reader.Scan(opts, fn)
}

// TestCockpitRecentRunsByKey: once a tenant's cockpit was read, and it has
// more runs than the engine holds the ids of, its recent runs and the
// first page of its run list are read by those ids, not by a scan of the
// run records, and are the newest runs the store holds (the list with
// List's cursor): after each start, beside ids whose commit never landed,
// and once those crowd out the runs held (a scan then).
func TestCockpitRecentRunsByKey(t *testing.T) {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rs := &runScans{Store: st}
	eng, procs := engineOn(t, rs, clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)), Config{})
	ctx := context.Background()
	if err := eng.Open(ctx); err != nil {
		t.Fatal(err)
	}
	const tenant = "ten_recent"
	def, _ := startNew(t, eng, procs, tenant, `{"name":"Wait","trigger":{"type":"manual"},
		"steps":[{"key":"wait","type":"wait","config":{"duration":"24h"}}]}`)
	start := func() {
		t.Helper()
		if _, err := eng.Start(ctx, StartParams{Tenant: tenant, ProcessID: def.ID}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(rs []*Run) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID+" "+string(r.Status))
		}
		return out
	}
	// check reads the cockpit and the store's newest runs and returns how
	// many scans of the run records the cockpit made.
	check := func(what string) int64 {
		t.Helper()
		before := rs.n.Load()
		c, err := eng.Cockpit(ctx, tenant, Viewer{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		scans := rs.n.Load() - before
		want, _, err := eng.ListRuns(ctx, tenant, RunQuery{}, store.Page{Limit: recentRunsShown})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ids(want), ids(c.RecentRuns)); diff != "" {
			t.Fatalf("recent runs %s (-store +cockpit):\n%s", what, diff)
		}
		return scans
	}
	// list reads the first page of the run list for each limit, checks it
	// and its cursor against the run records', and returns how many scans
	// of the run records the lists made.
	list := func(what string) int64 {
		t.Helper()
		var scans int64
		for _, limit := range []int{0, 10, recentHeld - 1} {
			before := rs.n.Load()
			got, next, err := eng.ListRuns(ctx, tenant, RunQuery{}, store.Page{Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			scans += rs.n.Load() - before
			var want []*Run
			var wantNext string
			err = st.View(ctx, func(r store.Reader) error {
				var err error
				want, wantNext, err = runs.List(r, tenant, store.Page{Limit: limit})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
				t.Fatalf("first page of %d %s (-store +list):\n%s", limit, what, diff)
			}
			if next != wantNext {
				t.Fatalf("first page of %d %s: next %q, want %q", limit, what, next, wantNext)
			}
		}
		return scans
	}
	for range 3 {
		start()
	}
	check("at the first read") // reads the tenant's counters and newest runs
	// While the tenant has no more runs than the engine holds the ids of,
	// their records are scanned (few, so on few tables); then read by key.
	for i := 4; i <= recentHeld+8; i++ {
		want := int64(1)
		if i > recentHeld {
			want = 0
		}
		if n := check(fmt.Sprintf("of %d runs", i)); n != want {
			t.Fatalf("the cockpit of %d runs scanned the run records %d times, want %d", i, n, want)
		}
		if n := list(fmt.Sprintf("of %d runs", i)); n != 3*want {
			t.Fatalf("the first pages of %d runs scanned the run records %d times, want %d", i, n, 3*want)
		}
		start()
	}
	// Ids of runs whose commit never landed, newer than every run: the
	// cockpit passes over them, and once they crowd out the runs held it
	// scans the run records.
	phantom := func() {
		var v uint64 // the version a commit would read at
		if err := st.View(ctx, func(r store.Reader) error { v = r.(store.VersionReader).ReadVersion(); return nil }); err != nil {
			t.Fatal(err)
		}
		eng.countCache.ran(tenant, eng.ids.New("run", eng.clock.Now()), v)
	}
	for range recentHeld - recentRunsShown - 1 { // eleven runs held: a page of ten and one to tell there are more
		phantom()
	}
	if n := check("beside ids with no run"); n != 0 {
		t.Errorf("with the newest runs still held the cockpit scanned the run records %d times, want none", n)
	}
	if n := list("beside ids with no run"); n != 2 {
		t.Errorf("with eleven runs held the first pages scanned the run records %d times, want 2 (those of more than 10)", n)
	}
	for range recentRunsShown + 1 {
		phantom()
	}
	if n := check("with every held id a run's that never landed"); n != 1 {
		t.Errorf("the cockpit scanned the run records %d times, want 1", n)
	}
	start()
	check("after a start beside them")
	list("after a start beside them")
	// The ids read again at a load, with the versions of their records:
	// the reads then pass over what was written before them all
	// (store.ScanOptions.Since) and still find every run held.
	eng.countCache.mu.Lock()
	eng.countCache.drop(eng.countCache.byName[tenant])
	eng.countCache.mu.Unlock()
	if n := check("read again at a load"); n != 1 {
		t.Errorf("at the load and after, the cockpit scanned the run records %d times, want 1 (the load's)", n)
	}
	if _, _, since, cut := eng.countCache.recentRange(tenant); since == 0 || !cut {
		t.Errorf("after the load: since %d, cut %v; want a version, and cut", since, cut)
	}
	if n := list("read again at a load"); n != 0 {
		t.Errorf("after the load the first pages scanned the run records %d times, want none", n)
	}
}
