package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// TestReclaim: a lease its owner still holds, or that lapsed with nobody
// taking it, is renewed with its token and passes Check again; one that
// another owner took (even if given back since), or that was released, is
// fenced off.
func TestReclaim(t *testing.T) {
	t.Parallel()
	type env struct {
		clk         *clock.Fake
		mine, other *lease.Manager
		held        lease.Lease
		name        string
	}
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, e env)
		fenced bool
	}{
		{"still held", func(_ *testing.T, e env) { e.clk.Advance(ttl / 2) }, false},
		{"lapsed, nobody took it", func(_ *testing.T, e env) { e.clk.Advance(2 * ttl) }, false},
		{"lapsed and taken", func(t *testing.T, e env) {
			e.clk.Advance(ttl)
			if _, err := e.other.Acquire(t.Context(), e.name); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"taken and given back", func(t *testing.T, e env) {
			e.clk.Advance(ttl)
			l, err := e.other.Acquire(t.Context(), e.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.other.Release(t.Context(), l); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"released", func(t *testing.T, e env) {
			if err := e.mine.Release(t.Context(), e.held); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stores(t, func(t *testing.T, st store.Store) {
				ctx := t.Context()
				clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
				e := env{clk: clk, mine: manager(t, st, clk, "node-a"), other: manager(t, st, clk, "node-b"), name: "shard/" + tc.name}
				var err error
				if e.held, err = e.mine.Acquire(ctx, e.name); err != nil {
					t.Fatal(err)
				}
				tc.before(t, e)
				got, err := e.mine.Reclaim(ctx, e.held)
				if tc.fenced {
					if !errors.Is(err, lease.ErrFenced) {
						t.Fatalf("Reclaim: %v, want ErrFenced", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Reclaim: %v", err)
				}
				if got.Token != e.held.Token || got.Owner != "node-a" || !got.Expires.Equal(clk.Now().Add(ttl)) {
					t.Errorf("reclaimed %+v, want token %d, node-a, expiring %s", got, e.held.Token, clk.Now().Add(ttl))
				}
				if err := st.Update(ctx, func(tx store.Txn) error { return e.mine.Check(tx, got) }); err != nil {
					t.Errorf("a write under the reclaimed lease: %v", err)
				}
				if _, err := e.other.Acquire(ctx, e.name); !errors.Is(err, lease.ErrHeld) {
					t.Errorf("another owner's Acquire after the reclaim: %v, want ErrHeld", err)
				}
			})
		})
	}
}

// TestBalanceKeepsALapsedShard: a node whose round comes after its shard
// leases lapsed, with nobody having taken them, keeps them with their
// tokens (before: acquired anew with the next token, as a handover, the
// node dropping and re-reading the shards' runs).
func TestBalanceKeepsALapsedShard(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		m := manager(t, st, clk, "node-a")
		held, err := m.Balance(ctx, 4, nil)
		if err != nil || len(held) != 4 {
			t.Fatalf("first round: %d shards, %v", len(held), err)
		}
		clk.Advance(2 * ttl) // the next round comes late
		again, err := m.Balance(ctx, 4, held)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range held {
			if again[i].Token != l.Token {
				t.Errorf("shard %d: token %d after the late round, want %d (kept)", i, again[i].Token, l.Token)
			}
		}
	})
}
