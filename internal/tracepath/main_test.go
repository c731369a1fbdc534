package main

import (
	"bytes"
	"context"
	"runtime/trace"
	"strings"
	"testing"
	"time"
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
// it created: the critical path runs back from the region's end through
// the worker that woke it (its running time) to the goroutine that created
// it, and the report names both.
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
		var workerRan time.Duration
		var gs []string
		for _, s := range segs {
			gs = append(gs, p.names[s.g])
			if strings.HasSuffix(p.names[s.g], ".worker") && s.state.String() == "Running" {
				workerRan += s.e.Sub(s.b)
			}
		}
		if workerRan < time.Millisecond {
			t.Errorf("the path %v shows the worker running %v, want its 2ms of work", gs, workerRan)
		}
		if last := segs[len(segs)-1]; last.g != x.g {
			t.Errorf("the path begins in %s, not in the region's goroutine that created the worker", p.names[last.g])
		}
		if first := segs[0]; first.g != x.g || first.e != x.e {
			t.Errorf("the path ends in %s at %v, want the region's goroutine at its end", p.names[first.g], first.e)
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
