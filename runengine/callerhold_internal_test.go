package runengine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// holdCommitter is a gatedCommitter whose hold for callers lasts wait.
func holdCommitter(t *testing.T, wait time.Duration) (*gatedStore, *committer) {
	t.Helper()
	gs, c, _ := gatedCommitter(t, 100, true)
	c.hold.maxWait = func() time.Duration { return wait }
	return gs, c
}

// submitKeys submits one change of tenant ten_a per key, with a caller
// waiting or not, and returns the channel each change's result is sent on.
func submitKeys(c *committer, caller bool, keys ...string) []chan error {
	return submitOf(c, "ten_a", caller, keys...)
}

// submitOf is submitKeys for tenant.
func submitOf(c *committer, tenant string, caller bool, keys ...string) []chan error {
	var out []chan error
	for _, key := range keys {
		ch := make(chan error, 1)
		c.submit(&delta{tenant: tenant, apply: setKey([]byte(key), []byte("v")), caller: caller, after: func(err error) { ch <- err }})
		out = append(out, ch)
	}
	return out
}

// waitAll fails t unless every change of chs is durable.
func waitAll(t *testing.T, chs []chan error) {
	t.Helper()
	for i, ch := range chs {
		if err := testwait.Recv(t, ch, fmt.Sprintf("change %d durable", i)); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
}

// landCallers commits n changes with a caller waiting in one commit: they
// queue behind a flood commit the store holds, which then lands.
func landCallers(t *testing.T, gs *gatedStore, c *committer, n int) {
	t.Helper()
	flood := submitKeys(c, false, "flood")
	gs.waitHeld(t)
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("caller-%d", i))
	}
	callers := submitKeys(c, true, keys...)
	gs.open()
	waitAll(t, flood)
	waitAll(t, callers)
	gs.waitLanded(t)
}

// TestCommitWaitsForAnsweredCallers: once a commit answered several
// callers, the next one waits for their next changes instead of launching
// with a change that came first, so they commit together; after a single
// caller's commit it does not wait, nor for another tenant's change, nor
// beyond its bound, nor once the committer closes.
func TestCommitWaitsForAnsweredCallers(t *testing.T) {
	t.Parallel()
	t.Run("several callers", func(t *testing.T) {
		t.Parallel()
		gs, c := holdCommitter(t, time.Minute)
		landCallers(t, gs, c, 3)
		first := submitKeys(c, false, "end-1")
		select {
		case <-gs.landed:
			t.Fatal("a change committed alone while the callers of the last commit were awaited")
		case <-time.After(50 * time.Millisecond):
		}
		back := submitKeys(c, true, "next-1", "next-2", "next-3")
		waitAll(t, first)
		waitAll(t, back)
		gs.waitLanded(t)
		select {
		case <-gs.landed:
			t.Fatal("the callers' changes took a commit of their own")
		default:
		}
	})
	t.Run("one caller", func(t *testing.T) {
		t.Parallel()
		gs, c := holdCommitter(t, time.Minute)
		landCallers(t, gs, c, 1)
		waitAll(t, submitKeys(c, false, "end-1"))
	})
	t.Run("another tenant", func(t *testing.T) {
		t.Parallel()
		gs, c := holdCommitter(t, time.Minute)
		landCallers(t, gs, c, 3)
		waitAll(t, submitOf(c, "ten_b", false, "other-1"))
	})
	t.Run("bound", func(t *testing.T) {
		t.Parallel()
		gs, c := holdCommitter(t, time.Millisecond)
		landCallers(t, gs, c, 3)
		waitAll(t, submitKeys(c, false, "end-1"))
	})
	t.Run("close", func(t *testing.T) {
		t.Parallel()
		gs, c := holdCommitter(t, time.Minute)
		landCallers(t, gs, c, 3)
		held := submitKeys(c, false, "end-1")
		select {
		case <-gs.landed:
			t.Fatal("a change committed alone while the callers of the last commit were awaited")
		case <-time.After(50 * time.Millisecond):
		}
		c.close()
		waitAll(t, held)
		var got string
		if err := gs.View(t.Context(), func(r store.Reader) error {
			v, err := r.Get([]byte("end-1"))
			got = string(v)
			return err
		}); err != nil || got != "v" {
			t.Errorf("after close, end-1 = %q, %v; want v", got, err)
		}
	})
}

// TestCallerHoldCounts: the hold counts the callers of each batch and
// waits for most of those the last one answered (stragglers go in the
// next), not counting the callers whose changes came while it was in
// flight, and never for a single caller's.
func TestCallerHoldCounts(t *testing.T) {
	t.Parallel()
	batch := func(callers, others int) []*delta {
		var out []*delta
		for range others {
			out = append(out, &delta{})
		}
		for range callers {
			out = append(out, &delta{caller: true})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		last []*delta
		// during came while the last commit was in flight, back after it
		// landed, one at a time.
		during, back []*delta
		wait         bool
	}{
		{"nothing answered", batch(0, 5), batch(0, 1), nil, false},
		{"one caller answered", batch(1, 5), batch(0, 1), nil, false},
		{"two answered, none back", batch(2, 0), batch(0, 3), nil, true},
		{"two answered, one back", batch(2, 0), nil, batch(1, 0), true},
		{"two answered, both back", batch(2, 0), nil, batch(2, 0), false},
		{"two answered, two others came meanwhile", batch(2, 0), batch(2, 0), nil, true},
		{"two answered, two others came meanwhile, one back", batch(2, 0), batch(2, 0), batch(1, 0), true},
		{"two answered, two others came meanwhile, both back", batch(2, 0), batch(2, 0), batch(2, 0), false},
		{"sixteen answered, eleven back", batch(16, 9), batch(4, 4), batch(11, 0), true},
		{"sixteen answered, twelve back", batch(16, 9), batch(4, 4), batch(12, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &callerHold{maxWait: func() time.Duration { return time.Minute }}
			h.launched(tc.last)
			open := slices.Clone(tc.during)
			got := len(open) > 0 && h.wait(open, 0)
			for _, d := range tc.back {
				open = append(open, d)
				got = h.wait(open, 1)
			}
			if got != tc.wait {
				t.Errorf("wait = %v, want %v", got, tc.wait)
			}
			h.launched(open)
			if h.timer != nil || h.seen != 0 || h.callers != 0 || h.base != 0 {
				t.Errorf("after launch: timer %v, seen %d, callers %d, base %d; want none", h.timer != nil, h.seen, h.callers, h.base)
			}
		})
	}
}

// TestCallerHoldLearnsReturnTimes: while callers lately took longer than
// the bound to come back on average, a batch in probeEvery is held, the others
// launch at once; a hold they outlast counts against them, callers that
// come back soon make every batch wait again.
func TestCallerHoldLearnsReturnTimes(t *testing.T) {
	t.Parallel()
	callers := func(n int) []*delta {
		out := make([]*delta, n)
		for i := range out {
			out[i] = &delta{caller: true}
		}
		return out
	}
	bound := time.Minute
	h := &callerHold{maxWait: func() time.Duration { return bound }}
	h.launched(callers(4))
	// held reports whether the next batch, one change of no caller, is
	// held, and launches it.
	held := func() bool {
		got := h.wait([]*delta{{}}, 1)
		h.launched(callers(4))
		return got
	}
	h.ret = time.Hour // lately, callers did not come back in time
	var got []bool
	for range 2 * probeEvery {
		got = append(got, held())
	}
	want := make([]bool, 2*probeEvery)
	want[0], want[probeEvery] = true, true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batches held while callers come back late (-want +got):\n%s", diff)
	}
	// Callers that come back soon (found by the probes): the average
	// falls under the bound.
	h.ret = 2 * bound
	for range 5 * probeEvery {
		h.wait([]*delta{{}}, 1)
		h.wait([]*delta{{}, {caller: true}, {caller: true}, {caller: true}}, 3)
		h.launched(callers(4))
	}
	if h.ret > bound {
		t.Fatalf("return time %v after callers came back at once, want under %v", h.ret, bound)
	}
	for i := range 3 {
		if !held() {
			t.Errorf("batch %d after callers came back at once was not held", i)
		}
	}
	// A hold the callers outlast counts one and a half times its bound.
	h.ret, bound = 0, 8*time.Nanosecond
	h.launched(callers(4))
	if h.wait([]*delta{{}}, 1) {
		testwait.Recv(t, h.timerC(), "the hold's timer")
	}
	if h.wait([]*delta{{}}, 0) {
		t.Fatal("held past the bound")
	}
	if want := 3 * time.Nanosecond; h.ret != want { // (12 - 0) / 4
		t.Errorf("return time after an outlasted hold %v, want %v", h.ret, want)
	}
}
