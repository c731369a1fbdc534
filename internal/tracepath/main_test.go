package main

import (
	"bytes"
	"context"
	"runtime/trace"
	"strings"
	"testing"
	"time"

	gotrace "golang.org/x/exp/trace"
)

// handOff runs a region in which the calling goroutine waits for a
// goroutine it starts, which works a while, then wakes it.
func handOff() {
	r := trace.StartRegion(context.Background(), "handoff")
	done := make(chan struct{})
	go worker(done)
	<-done
	r.End()
}

//go:noinline
func worker(done chan struct{}) {
	deadline := time.Now().Add(2 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	close(done)
}

// TestPathFollowsTheWaker traces a region whose goroutine waits for another
// it created: the critical path runs back, without a gap, from the
// region's end through the worker that woke it (its running) to the
// goroutine that created it and on to the region's start, and the report
// names both. The path's shape is asserted, not its durations: a loaded
// machine stretches any of them.
func TestPathFollowsTheWaker(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("the test binary is being traced already")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		handOff()
	}
	trace.Stop()
	p, err := read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var rs []region
	for _, x := range p.regions {
		if x.typ == "handoff" {
			rs = append(rs, x)
		}
	}
	if len(rs) != 3 {
		t.Fatalf("%d handoff regions, want 3", len(rs))
	}
	for _, x := range rs {
		segs := p.path(x)
		if len(segs) == 0 {
			t.Errorf("region %v: no path", x)
			continue
		}
		// From the region's end back: its goroutine, then the worker
		// (running when it woke it), then its goroutine again (which
		// created the worker), each stretch ending where the one
		// before it begins.
		var who []string
		workerRan := false
		for i, s := range segs {
			name := p.names[s.g]
			if len(who) == 0 || who[len(who)-1] != name {
				who = append(who, name)
			}
			if strings.HasSuffix(name, ".worker") && s.state == gotrace.GoRunning {
				workerRan = true
			}
			if i > 0 && s.e != segs[i-1].b {
				t.Errorf("the path has a gap: %v then %v", segs[i-1], s)
			}
		}
		region := p.names[x.g]
		if len(who) != 3 || who[0] != region || !strings.HasSuffix(who[1], ".worker") || who[2] != region {
			t.Errorf("the path goes through %v, want %s, the worker, %s", who, region, region)
		}
		if !workerRan {
			t.Errorf("the path %v does not show the worker running", segs)
		}
		if first, last := segs[0], segs[len(segs)-1]; first.e != x.e || last.b != x.b {
			t.Errorf("the path runs from %v to %v, want the region's %v to %v", last.b, first.e, x.b, x.e)
		}
	}
	var out bytes.Buffer
	p.report(&out, "handoff", 0.5, time.Millisecond)
	for _, want := range []string{"== handoff: 3 runs", "Running " + p.names[rs[0].g], "tracepath.worker"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPathEndsAtATie: two goroutines that made each other ready at one
// timestamp (a coarse clock) end the path there rather than looping: the
// waker's state is the one it was in before that moment.
func TestPathEndsAtATie(t *testing.T) {
	t.Parallel()
	p := &parsed{gs: map[gotrace.GoID][]transition{
		1: {{t: 5, from: gotrace.GoWaiting, to: gotrace.GoRunnable, by: 2}, {t: 6, from: gotrace.GoRunnable, to: gotrace.GoRunning}},
		2: {{t: 5, from: gotrace.GoWaiting, to: gotrace.GoRunnable, by: 1}},
	}}
	segs := p.path(region{typ: "tie", g: 1, b: 0, e: 10})
	want := []segment{{g: 1, state: gotrace.GoRunning, b: 6, e: 10}, {g: 1, state: gotrace.GoRunnable, b: 5, e: 6}}
	if len(segs) != len(want) || segs[0] != want[0] || segs[1] != want[1] {
		t.Errorf("path = %v, want %v", segs, want)
	}
}
