package runengine_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// stallingHeartbeats is a store whose writes of node a's membership lease
// (its lease round's first write), once armed, wait until stall is closed,
// as when the round of a node on a slow machine or database comes late.
type stallingHeartbeats struct {
	store.Store
	armed   atomic.Bool
	stall   chan struct{}
	stalled atomic.Int32
}

func (s *stallingHeartbeats) Update(ctx context.Context, fn func(store.Txn) error) error {
	return s.Store.Update(ctx, func(tx store.Txn) error { return fn(&stallingTxn{Txn: tx, s: s}) })
}

type stallingTxn struct {
	store.Txn
	s *stallingHeartbeats
}

func (tx *stallingTxn) Set(key, value []byte) error {
	if tx.s.armed.Load() && bytes.Equal(key, store.Key("_lease", "member/a")) {
		tx.s.stalled.Add(1)
		<-tx.s.stall
	}
	return tx.Txn.Set(key, value)
}

// TestClusterLapsedLeaseReclaimedAtOnce: a node whose shard leases lapsed
// because its lease round is late, with no other node taking them, answers
// a start at once: the refused commit reclaims the shard's lease with its
// token and goes through (before: refused until the round ran, a 503 when
// the round took longer than the retries).
func TestClusterLapsedLeaseReclaimedAtOnce(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	base := &stallingHeartbeats{Store: sharedBadger(t), stall: make(chan struct{})}
	lc, ec := clock.NewFake(t0), clock.NewFake(t0)
	mu, keys := newRecorders()
	finished := make(chan string, 1)
	a := openNode(t, base, nodeConfig{id: "a", lease: lc, clock: ec, prov: &recorder{node: "a", mu: mu, keys: keys},
		shards: 4, ttl: ttl, onFinish: func(_, id string, _ runengine.RunStatus) { finished <- id }})
	defer close(base.stall) // before the node closes: its round waits on it
	def := chainProcess(t, a.procs, `{"type":"manual"}`, 1)
	tokens := func() []int64 {
		var out []int64
		if err := base.View(t.Context(), func(r store.Reader) error {
			for i := range 4 {
				l, err := lease.Get(r, lease.ShardName(i))
				if err != nil {
					return err
				}
				out = append(out, l.Token)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := tokens()
	waitFor(t, "a's lease round is armed", func() bool { return lc.Timers() >= 1 })
	base.armed.Store(true)
	lc.Advance(ttl + time.Second) // a's round comes now, too late, and stalls
	waitFor(t, "a's late round stalls", func() bool { return base.stalled.Load() > 0 })

	r, err := a.eng.Start(t.Context(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID})
	if err != nil {
		t.Fatalf("a start on the node whose leases lapsed: %v", err)
	}
	if got := testwait.Recv(t, finished, "the run finished"); got != r.ID {
		t.Fatalf("finished %s, want %s", got, r.ID)
	}
	after := tokens()
	for i := range before {
		if after[i] != before[i] {
			t.Errorf("shard %d: token %d, want %d (reclaimed, not taken anew)", i, after[i], before[i])
		}
	}
}
