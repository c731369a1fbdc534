package lease_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// nopClose is a store whose Close leaves the shared store open, so two
// guards (two nodes) can share one.
type nopClose struct{ store.Store }

func (nopClose) Close() error { return nil }

// TestExclusive: a second node cannot open the store while the first
// holds it; it can once the first closes, or once the first stalls past
// the expiry, and then the first's writes are refused.
func TestExclusive(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		cfg := func(owner string) lease.Config {
			return lease.Config{Store: st, Clock: clk, Owner: owner, TTL: ttl}
		}
		shared := st
		if p, ok := st.(store.Pipeliner); ok {
			shared = struct {
				nopClose
				store.Pipeliner
			}{nopClose{st}, p}
		}
		a, err := lease.Exclusive(ctx, shared, cfg("node-a"), "engine", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := a.(store.Pipeliner); !ok {
			t.Errorf("the guard hides the store's Pipeliner")
		}
		// A second node waits; given up, it says the lease is held.
		type opened struct {
			st  store.Store
			err error
		}
		gaveUp, cancel := context.WithCancel(ctx)
		impatient := make(chan error, 1)
		go func() {
			_, err := lease.Exclusive(gaveUp, shared, cfg("node-x"), "engine", nil)
			impatient <- err
		}()
		testwait.Until(t, "node-x waited on the fake clock beside node-a's renewal", func() bool { return clk.Timers() >= 2 })
		cancel()
		if err := testwait.Recv(t, impatient, "node-x gave up"); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("a second node that gave up waiting: %v, want ErrHeld", err)
		}
		second := make(chan opened, 1)
		go func() {
			b, err := lease.Exclusive(ctx, shared, cfg("node-b"), "engine", nil)
			second <- opened{b, err}
		}()
		testwait.Until(t, "node-b waited on the fake clock beside node-a's renewal", func() bool { return clk.Timers() >= 2 })
		if err := a.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("a")) }); err != nil {
			t.Fatalf("the holder's write: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(ttl / 10) // node-b tries again
		got := testwait.Recv(t, second, "node-b opened the store once node-a closed")
		if got.err != nil {
			t.Fatalf("the waiting node after the first closed: %v", got.err)
		}
		b := got.st
		defer b.Close()

		// node-b stalls past its expiry (its renewal does not come: node-c's
		// clock is past b's expiry, node-b's is not); node-c takes over;
		// node-b's writes are refused, its reclaim too.
		late := cfg("node-c")
		late.Clock = clock.NewFake(clk.Now().Add(ttl + time.Second))
		c, err := lease.Exclusive(ctx, shared, late, "engine", nil)
		if err != nil {
			t.Fatalf("a node after the holder's expiry: %v", err)
		}
		defer c.Close()
		err = b.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("b-stale")) })
		if !errors.Is(err, lease.ErrFenced) || !errors.Is(err, errs.Unavailable) {
			t.Errorf("the stale node's write: %v, want ErrFenced marked Unavailable", err)
		}
		if !strings.Contains(err.Error(), "another node took over") {
			t.Errorf("the stale node's write: %q, want it to say another node took over", err)
		}
		if p, ok := b.(store.Pipeliner); ok {
			if _, err := p.Begin(ctx); !errors.Is(err, lease.ErrFenced) {
				t.Errorf("the stale node's pipelined transaction: %v, want ErrFenced", err)
			}
		}
		if err := c.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("c")) }); err != nil {
			t.Fatalf("the new holder's write: %v", err)
		}
		err = st.View(ctx, func(r store.Reader) error {
			v, err := r.Get([]byte("k"))
			if err != nil || string(v) != "c" {
				t.Errorf("k = %q, %v; want the new holder's write", v, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestExclusiveReclaimsALapse: a node whose renewal came late, its lease
// lapsed with no other node taking it, keeps writing (before: the renewal
// found the lease expired and gave up for good, every write refused).
func TestExclusiveReclaimsALapse(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
		a, err := lease.Exclusive(ctx, nopClose{st}, lease.Config{Store: st, Clock: clk, Owner: "node-a", TTL: ttl}, "engine", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		testwait.Until(t, "node-a's renewal is armed", func() bool { return clk.Timers() >= 1 })
		clk.Advance(2 * ttl) // the renewal comes late
		if err := a.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("a")) }); err != nil {
			t.Fatalf("a write after the lapse: %v", err)
		}
		err = st.View(ctx, func(r store.Reader) error {
			l, err := lease.Get(r, "engine")
			if err == nil && (l.Owner != "node-a" || l.Token != 1 || !l.Held(clk.Now())) {
				t.Errorf("the lease after the lapse: %+v, want node-a's, token 1, held", l)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// lateRenewals is the lease store of a node whose renewals do not come:
// once armed, an update fails unless its context is marked as a write's,
// so a write under a lapsed lease meets the lapse itself.
type lateRenewals struct {
	store.Store
	armed atomic.Bool
}

// writeCtx marks the context of a write through the guard.
type writeCtx struct{}

func (s *lateRenewals) Update(ctx context.Context, fn func(store.Txn) error) error {
	if s.armed.Load() && ctx.Value(writeCtx{}) == nil {
		return errors.New("the renewal comes late")
	}
	return s.Store.Update(ctx, fn)
}

// TestExclusiveWriteReclaimsALapse: with no renewal coming, a write (an
// Update, a pipelined transaction) after the lease lapsed reclaims it
// itself and goes through.
func TestExclusiveWriteReclaimsALapse(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := context.WithValue(t.Context(), writeCtx{}, true)
		guarded := store.Store(nopClose{st})
		if p, ok := st.(store.Pipeliner); ok {
			guarded = struct {
				nopClose
				store.Pipeliner
			}{nopClose{st}, p}
		}
		a, clk := lapsedGuard(t, ctx, st, guarded)
		if err := a.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("a")) }); err != nil {
			t.Fatalf("a write after the lapse: %v", err)
		}
		if p, ok := a.(store.Pipeliner); ok {
			clk.Advance(2 * ttl)
			tx, err := p.Begin(ctx)
			if err != nil {
				t.Fatalf("a pipelined transaction after the lapse: %v", err)
			}
			tx.Discard()
		}
	})
}

// TestExclusiveLapseNotReclaimed: a write after a lapse whose reclaim
// fails (the store refuses the renewal's write) is refused as fenced and
// unavailable, saying the lease could not be renewed, not that another
// node took over (none did).
func TestExclusiveLapseNotReclaimed(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		a, _ := lapsedGuard(t, ctx, st, nopClose{st})
		err := a.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("a")) })
		if !errors.Is(err, lease.ErrFenced) || !errors.Is(err, errs.Unavailable) {
			t.Fatalf("a write after a lapse not reclaimed: %v, want ErrFenced marked Unavailable", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "could not be renewed") || strings.Contains(msg, "another node") {
			t.Errorf("a write after a lapse not reclaimed: %q, want it to say the lease could not be renewed", msg)
		}
	})
}

// lapsedGuard opens node-a's guard over guarded, its lease kept in st,
// and lets the lease lapse: the fake clock passes the TTL while renewals
// are refused (an Update on a context without writeCtx fails). The guard
// is closed at the test's end, after renewals are let through again.
func lapsedGuard(t *testing.T, ctx context.Context, st, guarded store.Store) (store.Store, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	late := &lateRenewals{Store: st}
	a, err := lease.Exclusive(ctx, guarded, lease.Config{Store: late, Clock: clk, Owner: "node-a", TTL: ttl}, "engine", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	t.Cleanup(func() { late.armed.Store(false) }) // before Close: its release goes through
	testwait.Until(t, "node-a's renewal is armed", func() bool { return clk.Timers() >= 1 })
	late.armed.Store(true)
	clk.Advance(2 * ttl)
	return a, clk
}
