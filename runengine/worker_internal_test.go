package runengine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestWorkerSweepThreshold: a worker forgets durable idle runs down to
// maxIdle once more than sweepAt are idle; the threshold is maxIdle +
// idleSlack, and after a sweep that had to keep runs not yet durable (a
// burst) it is what the sweep kept + idleSlack, until a sweep brings the
// idle runs back to maxIdle.
func TestWorkerSweepThreshold(t *testing.T) {
	w := newWorker(&Engine{})
	rs := idleRuns{w: w}
	add := func(k, notDurable int) []*entry { return rs.add(RunWaiting, k, notDurable) }
	type state struct{ Idle, Cached, SweepAt int }
	step := func(what string, want state) {
		t.Helper()
		w.sweep()
		if diff := cmp.Diff(want, state{len(w.idle), len(w.cache), w.sweepAt}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}

	add(maxIdle+idleSlack, 0)
	step("over maxIdle at the start", state{maxIdle, maxIdle, maxIdle + idleSlack})
	add(idleSlack, 0)
	step("at the threshold", state{maxIdle + idleSlack, maxIdle + idleSlack, maxIdle + idleSlack})
	add(1, 0)
	step("one over the threshold", state{maxIdle, maxIdle, maxIdle + idleSlack})

	// A burst of 400 runs not yet durable: the sweep forgets the durable
	// ones and keeps the burst, and the threshold follows it.
	burst := add(400, 400)
	step("a burst not yet durable", state{400, 400, 400 + idleSlack})
	for _, en := range burst {
		en.pending.Add(-1) // their commit is durable
	}
	add(idleSlack, 0)
	step("at the burst's threshold", state{400 + idleSlack, 400 + idleSlack, 400 + idleSlack})
	add(1, 0)
	step("over the burst's threshold", state{maxIdle, maxIdle, maxIdle + idleSlack})

	// A run with a call in flight is not idle and not forgotten.
	en := &entry{run: &Run{Tenant: "ten_a", ID: "run_busy"}, inflight: "call_1"}
	w.cache[runKeyOf("ten_a", "run_busy")] = en
	w.markIdle(en)
	add(idleSlack+1, 0)
	step("with a run in flight", state{maxIdle, maxIdle + 1, maxIdle + idleSlack})
	if _, ok := w.cache[runKeyOf("ten_a", "run_busy")]; !ok {
		t.Error("the run with a call in flight was forgotten")
	}
}

// idleRuns makes runs in a worker's memory with nothing in flight.
type idleRuns struct {
	w *worker
	n int
}

// add makes k more such runs of the status, of which the first notDurable
// have a commit in flight, and marks them idle; it returns them.
func (rs *idleRuns) add(status RunStatus, k, notDurable int) []*entry {
	var ens []*entry
	for i := range k {
		en := &entry{run: &Run{Tenant: "ten_a", ID: fmt.Sprintf("run_%d", rs.n), Status: status}}
		rs.n++
		if i < notDurable {
			en.pending.Add(1)
		}
		rs.w.cache[runKeyOf(en.run.Tenant, en.run.ID)] = en
		rs.w.markIdle(en)
		ens = append(ens, en)
	}
	return ens
}

// TestWorkerForgetsEndedRuns: an ended run is not kept among the idle
// runs: once more than endedAt ended runs gathered, the sweep forgets every
// one whose commits are over, keeps those with a commit in flight and looks
// again once idleSlack more ended; runs that wait are kept up to maxIdle
// as before.
func TestWorkerForgetsEndedRuns(t *testing.T) {
	w := newWorker(&Engine{})
	add := (&idleRuns{w: w}).add
	type state struct{ Idle, Ended, Cached, EndedAt int }
	step := func(what string, want state) {
		t.Helper()
		w.sweep()
		if diff := cmp.Diff(want, state{len(w.idle), len(w.ended), len(w.cache), w.endedAt}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}

	add(RunWaiting, 10, 0)
	add(RunCompleted, 5, 0)
	add(RunFailed, 3, 2)
	add(RunCancelled, 1, 0)
	add(RunRejected, 1, 0)
	step("ended runs forgotten, those with a commit in flight kept", state{10, 2, 12, 2 + idleSlack})
	notDurable := add(RunCompleted, idleSlack, idleSlack)
	step("at the threshold", state{10, 2 + idleSlack, 12 + idleSlack, 2 + idleSlack})
	for _, en := range notDurable {
		en.pending.Add(-1)
	}
	add(RunCompleted, 1, 0)
	step("over the threshold", state{10, 2, 12, 2 + idleSlack})

	// A run that ends while idle moves to the ended runs with its next
	// command (load takes it out of the idle runs first).
	var waiting *entry
	for _, en := range w.idle {
		waiting = en
		break
	}
	k := runKeyOf(waiting.run.Tenant, waiting.run.ID)
	if en, err := w.load(k.tenant, k.runID); err != nil || en != waiting {
		t.Fatalf("load: %v %v", en, err)
	}
	waiting.run.Status = RunCompleted
	w.markIdle(waiting)
	if _, ok := w.idle[k]; ok {
		t.Error("the ended run is still among the idle runs")
	}
	if _, ok := w.ended[k]; !ok {
		t.Error("the ended run is not among the ended runs")
	}
	w.endedAt = 0
	step("the run that ended is forgotten", state{9, 2, 11, 2 + idleSlack})
	if _, ok := w.cache[k]; ok {
		t.Error("the run that ended is still in memory")
	}
}

// TestStoppedWorkerSettlesItsCalls: a call the worker is to make itself
// (cmdCall) counts as a call in flight until it is made, or dropped by the
// worker once it stopped, whether it was queued before the worker stopped
// or sent after: Close, which waits for the calls in flight, is then not
// held up by it.
func TestStoppedWorkerSettlesItsCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued bool
	}{{"queued, then stopped", true}, {"sent to a stopped worker", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{}
			w := newWorker(e)
			pc := &pendingCall{w: w}
			pc.cmd = command{kind: cmdCallResult, tenant: "ten_a", runID: "run_1", result: &pc.res}
			if tc.queued {
				w.callHere(pc)
				w.stop()
				w.loop() // drops what is queued and returns
			} else {
				w.stop()
				w.callHere(pc)
			}
			settled := make(chan struct{})
			go func() { e.calls.Wait(); close(settled) }()
			testwait.Until(t, "the dropped call settled", func() bool {
				select {
				case <-settled:
					return true
				default:
					return false
				}
			})
		})
	}
}

// TestStoppedWorkerDropsCallResults: a call's result that reaches a
// worker once it stopped (a call past Close's grace period), or was queued
// when it stopped, is dropped, and what the gate and the provider handed
// over with it is told the commit did not happen, so the gate releases
// the counts it holds for it. Before, nothing was told, and the gate kept
// them.
func TestStoppedWorkerDropsCallResults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued bool
	}{{"queued, then stopped", true}, {"sent to a stopped worker", false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(&Engine{})
			told := make(chan error, 2)
			res := &callResult{token: "call"}
			res.gateWrites.Settled = append(res.gateWrites.Settled, func(err error) { told <- err })
			res.writes.OnSettled(func(err error) { told <- err })
			c := &command{kind: cmdCallResult, tenant: "ten_a", runID: "run_1", result: res}
			if tc.queued {
				w.send(c)
				w.stop()
				w.loop() // drops what is queued and returns
			} else {
				w.stop()
				w.send(c)
			}
			for _, what := range []string{"the gate's writes", "the call's writes"} {
				if err := testwait.Recv(t, told, what+" told"); !errors.Is(err, errDropped) {
					t.Fatalf("%s were told %v, want %v", what, err, errDropped)
				}
			}
		})
	}
}

// countingCaller counts the capability calls made through it.
type countingCaller struct{ n int }

func (c *countingCaller) Call(context.Context, capability.Call) (json.RawMessage, error) {
	c.n++
	return json.RawMessage(`{}`), nil
}

// TestWorkerMakesOnlyCallsItsRunAwaits: a call the worker makes itself
// (cmdCall) is made when its run still awaits it (or is not in memory: the
// result is checked once the run is loaded), not when the run moved on
// (cancelled, or waiting for another call); either way the command
// becomes the call's result and the call is no longer in flight.
func TestWorkerMakesOnlyCallsItsRunAwaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cached   bool
		inflight string
		made     bool
	}{
		{"awaited", true, "call-1", true},
		{"not in memory", false, "", true},
		{"cancelled", true, "", false},
		{"another call awaited", true, "call-2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller := &countingCaller{}
			e := &Engine{ctx: context.Background(), cfg: Config{Capabilities: caller, CallTimeout: time.Minute}}
			w := newWorker(e)
			if tc.cached {
				w.cache[runKeyOf("ten_a", "run_1")] = &entry{inflight: tc.inflight}
			}
			pc := &pendingCall{w: w, capID: "test.echo", args: json.RawMessage(`{}`), key: "run_1/a/1"}
			pc.res.token = "call-1"
			pc.cmd = command{kind: cmdCall, tenant: "ten_a", runID: "run_1", result: &pc.res, call: pc}
			e.calls.Add(1)
			w.makeCall(&pc.cmd)
			if got := caller.n == 1; got != tc.made {
				t.Errorf("call made = %v, want %v", got, tc.made)
			}
			if pc.cmd.kind != cmdCallResult || pc.cmd.call != nil || pc.cmd.result.token != "call-1" {
				t.Errorf("command after the call: kind %d, call %p, token %q", pc.cmd.kind, pc.cmd.call, pc.cmd.result.token)
			}
			settled := make(chan struct{})
			go func() { e.calls.Wait(); close(settled) }()
			testwait.Until(t, "the call settled", func() bool {
				select {
				case <-settled:
					return true
				default:
					return false
				}
			})
		})
	}
}

// TestStoppedWorkerSettlesEngineStart: a start the engine made (a
// schedule's tick) that reaches a worker already stopped leaves the
// tenant's door, so a caller after it is not kept waiting.
func TestStoppedWorkerSettlesEngineStart(t *testing.T) {
	e := &Engine{starting: newStartGate(1, 0, clock.Real{})}
	w := newWorker(e)
	w.stop()
	var got []error
	cmd := &command{kind: cmdStart, tenant: "ten_a", runID: "run_1", start: &startArgs{
		settled: []func(error){func(err error) { got = append(got, err) }},
	}}
	if !e.enterGate(cmd) {
		t.Fatal("enterGate found no room in an empty gate")
	}
	w.send(cmd)
	if len(got) != 1 || got[0] != errClosed {
		t.Errorf("settled with %v, want once with %v", got, errClosed)
	}
	if g := e.starting; g.busy != 0 || len(g.tenants) != 0 {
		t.Errorf("after the start was dropped: %d starts in progress, slots of %d tenants", g.busy, len(g.tenants))
	}
}
