package runengine_test

import (
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
)

// TestClusterHeldTickResumedElsewhere: a schedule tick held on the node
// that owns its shard, for a process paused there, fires once the process
// is resumed on another node, at the owner's next lease round (which reads
// the pauses); nothing stays held or in flight on the owner. A held tick
// is not handed out again while its process is paused, so without that
// round's release it would stay held for good. (Before, the owner handed
// it out again after handOutTTL, 5 s, and fired it then, but kept it in
// its held ticks for good; a node whose shard moved away kept it in
// flight for good too, a key less of maxDueInflight's room.)
func TestClusterHeldTickResumedElsewhere(t *testing.T) {
	t.Parallel()
	t.Run("badger", func(t *testing.T) {
		t.Parallel()
		heldTickResumedElsewhere(t, sharedBadger(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		pg, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: pgtest.Schema(t, dsn)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pg.Close() })
		heldTickResumedElsewhere(t, pg)
	})
}

func heldTickResumedElsewhere(t *testing.T, base store.Store) {
	const ttl = 9 * time.Second
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	a := openNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", mu: mu, keys: keys}, shards: 1, ttl: ttl})
	in, err := process.DecodeIn([]byte(`{"name":"Quarterly","trigger":{"type":"schedule","cron":"*/15 * * * *","timezone":"UTC"},
		"steps":[{"key":"wait","type":"wait","config":{"duration":"24h"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := a.procs.Create(t.Context(), tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.PauseProcess(t.Context(), tenant, def.ID); err != nil {
		t.Fatal(err)
	}
	b := openNode(t, base, nodeConfig{id: "b", lease: lc, clock: ec, prov: &recorder{node: "b", mu: mu, keys: keys}, shards: 1, ttl: ttl})
	if got := b.eng.Shards(); len(got) != 0 {
		t.Fatalf("b took shards %v from a live a", got)
	}
	ec.Advance(16 * time.Minute) // the tick of :15 is due
	waitFor(t, "a holds the paused process's tick", func() bool { _, held := runengine.SchedHeld(a.eng); return held == 1 })
	if _, err := b.eng.ResumeProcess(t.Context(), tenant, def.ID, "usr_test"); err != nil {
		t.Fatal(err)
	}
	runsOf := func() []*runengine.Run {
		rs, _, err := b.eng.ListRuns(t.Context(), tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	waitFor(t, "both lease rounds are armed", func() bool { return lc.Timers() == 2 })
	lc.Advance(ttl / 3)
	waitFor(t, "the held tick's run starts after a's lease round", func() bool { return len(runsOf()) == 1 })
	if got := runsOf()[0].Trigger.Data["fired_at"]; got != "2026-03-02T09:15:00Z" {
		t.Errorf("the run's fired_at = %v, want the held tick's", got)
	}
	waitFor(t, "nothing held or in flight on a", func() bool {
		inflight, held := runengine.SchedHeld(a.eng)
		return inflight == 0 && held == 0
	})
}
