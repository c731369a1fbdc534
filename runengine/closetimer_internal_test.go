package runengine

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// runTimerKeys lists the due keys of the run's timers.
func runTimerKeys(t *testing.T, st store.Store, runID string) (keys [][]byte, tokens []string) {
	t.Helper()
	err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "due"), KeysOnly: true}, func(key, _ []byte) error {
			parts, err := store.DecodeKey(key)
			if err != nil {
				return err
			}
			if parts[4].(string) == runID {
				keys, tokens = append(keys, append([]byte(nil), key...)), append(tokens, parts[5].(string))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, tokens
}

// closedWithWaitingRun starts a run of tenant ten_a waiting an hour, on an
// engine it then closes, and returns the engine's store and clock.
func closedWithWaitingRun(t *testing.T) (store.Store, *clock.Fake, *Run) {
	t.Helper()
	st := memStore(t)
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, st, clk, Config{})
	_, r := startNew(t, eng, procs, "ten_a", `{"name":"Wait","trigger":{"type":"manual"},
		"steps":[{"key":"wait","type":"wait","config":{"duration":"1h"}}]}`)
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	return st, clk, r
}

// TestTimerKeptWhenItsRunCannotBeRead: a timer handed to a worker whose
// read of the run fails for a reason other than the run being gone (here
// the engine closing, which cancels its reads while the workers finish
// their batch) keeps its due key, and fires on the next open; and the run
// of a timer whose run is gone has the key removed. Before, any failed
// read removed the key: a run whose timer came due as the server shut down
// waited for good.
func TestTimerKeptWhenItsRunCannotBeRead(t *testing.T) {
	t.Parallel()
	st, clk, r := closedWithWaitingRun(t)
	ctx := context.Background()
	keys, tokens := runTimerKeys(t, st, r.ID)
	if len(keys) != 1 {
		t.Fatalf("the waiting run has %d timer keys, want 1", len(keys))
	}
	clk.Advance(2 * time.Hour)

	// An engine closing: its reads are cancelled, and its worker handles
	// the timer (not opened: the test is the worker).
	closing, _ := engineOn(t, st, clk, Config{})
	closing.cancel()
	w := closing.workers[0]
	w.handle(&command{kind: cmdTimer, tenant: "ten_a", runID: r.ID, timer: &timerArgs{key: keys[0], token: tokens[0]}})
	gone := dueKey(clk.Now(), "ten_a", "run_gone", "tok")
	if err := st.Update(ctx, func(tx store.Txn) error { return tx.Set(gone, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := closing.Close(); err != nil { // commits what the worker submitted
		t.Fatal(err)
	}
	if got, _ := runTimerKeys(t, st, r.ID); len(got) != 1 {
		t.Fatalf("the timer's due key was removed by a worker that could not read its run")
	}

	eng, _ := schedEngine(t, st, clk, Config{})
	testwait.Until(t, "the kept timer fires on the next open", func() bool {
		got, err := eng.GetRun(ctx, "ten_a", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == RunCompleted
	})
	testwait.Until(t, "the timer of a run that is gone is removed", func() bool {
		got, _ := runTimerKeys(t, st, "run_gone")
		return len(got) == 0
	})
}

// TestUnreadCallResultTellsItsWrites: a call's result whose run cannot be
// read for a reason other than its being gone (the engine closing) is
// dropped, and what it handed over is told the commit did not happen, so
// the autonomy gate releases the counts it holds for it. Before, nothing
// was told, and the gate kept them.
func TestUnreadCallResultTellsItsWrites(t *testing.T) {
	t.Parallel()
	st, clk, r := closedWithWaitingRun(t)
	closing, _ := engineOn(t, st, clk, Config{})
	closing.cancel()
	told := make(chan error, 2)
	res := &callResult{token: "stale"}
	res.gateWrites.Settled = append(res.gateWrites.Settled, func(err error) { told <- err })
	res.writes.OnSettled(func(err error) { told <- err })
	closing.workers[0].handle(&command{kind: cmdCallResult, tenant: "ten_a", runID: r.ID, result: res})
	for _, what := range []string{"the gate's writes", "the call's writes"} {
		if err := testwait.Recv(t, told, what+" told"); err == nil {
			t.Fatalf("%s were told the commit happened", what)
		}
	}
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
}
