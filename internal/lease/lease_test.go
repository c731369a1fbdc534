package lease_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const ttl = 10 * time.Second

// stores runs test on Badger in memory and on PostgreSQL (skipped without
// BAS_PG_DSN outside CI).
func stores(t *testing.T, test func(t *testing.T, st store.Store)) {
	t.Run("badger", func(t *testing.T) {
		t.Parallel()
		st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		test(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		t.Parallel()
		st, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: pgtest.Schema(t, dsn)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		test(t, st)
	})
}

func manager(t *testing.T, st store.Store, clk clock.Clock, owner string) *lease.Manager {
	t.Helper()
	m, err := lease.New(lease.Config{Store: st, Clock: clk, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExpiry: a held lease is refused to others until the instant it
// expires, and then goes to the next owner with a larger token.
func TestExpiry(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		a, b := manager(t, st, clk, "node-a"), manager(t, st, clk, "node-b")
		la, err := a.Acquire(ctx, "shard/1")
		if err != nil {
			t.Fatal(err)
		}
		if la.Token != 1 || la.Owner != "node-a" || !la.Expires.Equal(clk.Now().Add(ttl)) {
			t.Errorf("first lease = %+v, want token 1 held by node-a for the TTL", la)
		}
		clk.Advance(ttl - time.Nanosecond) // just inside
		if _, err := b.Acquire(ctx, "shard/1"); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("Acquire of a lease held for 1ns more: %v, want ErrHeld", err)
		}
		clk.Advance(time.Nanosecond) // just outside
		lb, err := b.Acquire(ctx, "shard/1")
		if err != nil {
			t.Fatalf("Acquire of an expired lease: %v", err)
		}
		if diff := cmp.Diff(lease.Lease{Name: "shard/1", Owner: "node-b", Token: 2, Expires: clk.Now().Add(ttl)}, lb); diff != "" {
			t.Errorf("lease taken over (-want +got):\n%s", diff)
		}
		// The old owner can neither renew nor re-take it.
		if _, err := a.Reclaim(ctx, la); !errors.Is(err, lease.ErrFenced) {
			t.Errorf("Reclaim by the expired owner: %v, want ErrFenced", err)
		}
		if _, err := a.Acquire(ctx, "shard/1"); !errors.Is(err, lease.ErrHeld) {
			t.Errorf("Acquire by the expired owner: %v, want ErrHeld", err)
		}
		// Renewal keeps the token; release lets the next owner in at once,
		// with a larger token.
		clk.Advance(ttl / 2)
		lb2, err := b.Reclaim(ctx, lb)
		if err != nil || lb2.Token != 2 || !lb2.Expires.Equal(clk.Now().Add(ttl)) {
			t.Errorf("Reclaim = %+v, %v; want token 2 until now+TTL", lb2, err)
		}
		if err := b.Release(ctx, lb2); err != nil {
			t.Fatal(err)
		}
		if la3, err := a.Acquire(ctx, "shard/1"); err != nil || la3.Token != 3 {
			t.Errorf("Acquire after a release = %+v, %v; want token 3", la3, err)
		}
	})
}

// TestFencing: a stale owner's write is refused, even when the takeover
// commits while the stale write's transaction is already running.
func TestFencing(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		a, b := manager(t, st, clk, "node-a"), manager(t, st, clk, "node-b")
		la, err := a.Acquire(ctx, "shard/1")
		if err != nil {
			t.Fatal(err)
		}
		write := func(m *lease.Manager, l lease.Lease, val string, pause func()) error {
			return st.Update(ctx, func(tx store.Txn) error {
				if err := m.Check(tx, l); err != nil {
					return err
				}
				pause()
				return tx.Set([]byte("run/1"), []byte(val))
			})
		}
		if err := write(a, la, "a1", func() {}); err != nil {
			t.Fatalf("the holder's write: %v", err)
		}

		// A checks its lease, then stalls (a long GC pause) past its
		// expiry; B takes over and writes; A's write then commits.
		paused, resume := make(chan struct{}), make(chan struct{})
		free := sync.OnceFunc(func() { close(resume) })
		t.Cleanup(free) // a failing test must not leave A's write paused
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			done <- write(a, la, "a2-stale", func() {
				once.Do(func() {
					close(paused)
					<-resume
				})
			})
		}()
		testwait.Recv(t, paused, "A's write paused after its lease check")
		clk.Advance(ttl)
		lb, err := b.Acquire(ctx, "shard/1")
		if err != nil {
			t.Fatalf("takeover: %v", err)
		}
		if err := write(b, lb, "b1", func() {}); err != nil {
			t.Fatalf("the new holder's write: %v", err)
		}
		free()
		if err := testwait.Recv(t, done, "the stale owner's write returned"); !errors.Is(err, lease.ErrFenced) {
			t.Errorf("the stale owner's write: %v, want ErrFenced", err)
		}
		// A later stale write is refused too, and so is one with a forged
		// (old) token by the new owner.
		if err := write(a, la, "a3-stale", func() {}); !errors.Is(err, lease.ErrFenced) {
			t.Errorf("a later stale write: %v, want ErrFenced", err)
		}
		old := lb
		old.Token = la.Token
		if err := write(b, old, "b-old-token", func() {}); !errors.Is(err, lease.ErrFenced) {
			t.Errorf("a write with an old token: %v, want ErrFenced", err)
		}
		err = st.View(ctx, func(r store.Reader) error {
			v, err := r.Get([]byte("run/1"))
			if err != nil || string(v) != "b1" {
				t.Errorf("run/1 = %q, %v; want only the new holder's write", v, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestOneWinner: nodes racing for a free lease: exactly one gets it.
func TestOneWinner(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		const nodes = 8
		var wg sync.WaitGroup
		results := make(chan error, nodes)
		for i := range nodes {
			m := manager(t, st, clk, fmt.Sprintf("node-%d", i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := m.Acquire(context.Background(), "cron/tick")
				results <- err
			}()
		}
		testwait.Wait(t, &wg, "every node's Acquire returned")
		close(results)
		won := 0
		for err := range results {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, lease.ErrHeld):
				t.Errorf("Acquire: %v", err)
			}
		}
		if won != 1 {
			t.Errorf("%d nodes acquired the lease, want 1", won)
		}
	})
}

// TestBalance: shards spread over three nodes, each held by one; when a
// node dies its shards go to the others at expiry; when it comes back it
// gets its share again.
func TestBalance(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		const shards = 24
		names := []string{"node-a", "node-b", "node-c"}
		ms := map[string]*lease.Manager{}
		held := map[string]map[int]lease.Lease{}
		for _, n := range names {
			ms[n] = manager(t, st, clk, n)
		}
		round := func(alive ...string) {
			t.Helper()
			for range 2 { // releases land in the first round, takeovers in the second
				for _, n := range alive {
					h, err := ms[n].Balance(ctx, shards, held[n])
					if err != nil {
						t.Fatalf("Balance %s: %v", n, err)
					}
					held[n] = h
				}
			}
		}
		// check: every shard held by exactly one of alive, each with a fair share.
		check := func(what string, alive ...string) {
			t.Helper()
			owner := map[int]string{}
			for _, n := range alive {
				if len(held[n]) < shards/len(alive)/3 {
					t.Errorf("%s: %s holds %d of %d shards, too few for %d nodes", what, n, len(held[n]), shards, len(alive))
				}
				for i := range held[n] {
					if prev, ok := owner[i]; ok {
						t.Errorf("%s: shard %d held by %s and %s", what, i, prev, n)
					}
					owner[i] = n
				}
			}
			if len(owner) != shards {
				t.Errorf("%s: %d of %d shards held", what, len(owner), shards)
			}
		}
		round("node-a")
		round(names...)
		check("three nodes", names...)

		// node-c dies: it stops heartbeating; nothing moves before expiry.
		clk.Advance(ttl / 2)
		round("node-a", "node-b")
		clk.Advance(ttl / 2)
		delete(held, "node-c")
		round("node-a", "node-b")
		check("node-c dead", "node-a", "node-b")

		// node-c comes back and gets its share, handed over by the others.
		held["node-c"] = nil
		round(names...)
		check("node-c back", names...)
	})
}

// failingUpdates is a store whose Updates fail once the first ok of them
// ran, as when the database stops answering in the middle of a round.
type failingUpdates struct {
	store.Store
	mu sync.Mutex
	ok int
}

var errStoreDown = errors.New("store down")

func (f *failingUpdates) Update(ctx context.Context, fn func(store.Txn) error) error {
	f.mu.Lock()
	f.ok--
	down := f.ok < 0
	f.mu.Unlock()
	if down {
		return errStoreDown
	}
	return f.Store.Update(ctx, fn)
}

// TestBalanceFailedRoundKeepsHeld: a round whose renewals or releases fail
// returns the error and the leases the node held as they were (they last
// until their expiry), so the node never drops a shard from its view while
// the store still says it is the node's, to pick it up again later with
// the same token.
func TestBalanceFailedRoundKeepsHeld(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		const shards = 8
		held, err := manager(t, st, clk, "node-a").Balance(ctx, shards, nil)
		if err != nil || len(held) != shards {
			t.Fatalf("node-a alone holds %d shards (%v), want %d", len(held), err, shards)
		}
		// node-b joins, so node-a's round both renews and releases.
		if _, err := manager(t, st, clk, "node-b").Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		down := &failingUpdates{Store: st, ok: 1} // the heartbeat passes, nothing after it
		got, err := manager(t, down, clk, "node-a").Balance(ctx, shards, held)
		if !errors.Is(err, errStoreDown) {
			t.Fatalf("Balance on a failing store: %v, want the store's error", err)
		}
		if diff := cmp.Diff(held, got); diff != "" {
			t.Fatalf("leases after a failed round (-want +got):\n%s", diff)
		}
	})
}
