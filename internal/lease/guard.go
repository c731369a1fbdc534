package lease

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Exclusive opens a store that only this node writes: it acquires the
// lease called name, waiting while another live node holds it (a standby
// takes over once the holder is gone for a TTL; ctx ends the wait with an
// error marked ErrHeld), renews it every TTL/3, and checks it (Check) inside every
// Update and pipelined transaction, so a node that lost the lease (it
// stalled past the expiry and another node took over) can no longer write.
// A lease that lapsed with no other node taking it (a renewal that came
// late) is reclaimed by the next renewal or write (Manager.Reclaim).
// Close stops the renewals, releases the lease and closes st. It keeps
// st's store.Pipeliner ability.
//
// This is the single-active-node guard for a shared database: a second
// node refuses to start instead of running the same work twice, and takes
// over (Exclusive succeeds) once the first is gone for a TTL.
func Exclusive(ctx context.Context, st store.Store, cfg Config, name string, log *slog.Logger) (store.Store, error) {
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var l Lease
	for waited := false; ; waited = true {
		l, err = m.Acquire(ctx, name)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrHeld) {
			return nil, err
		}
		if !waited {
			log.Warn("waiting for the store's lease: another node works on this database and schema", slog.Any("error", err))
		}
		t := m.clock.NewTimer(m.ttl / 10)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.WithHint(errors.WithSecondaryError(err, ctx.Err()),
				"another node works on this database and schema: run one node per database and schema, or wait for the other to stop (its lease then expires)")
		case <-t.C():
		}
	}
	g := &guard{Store: st, m: m, lease: l, log: log, stop: make(chan struct{}), stopped: make(chan struct{})}
	go g.renew()
	if p, ok := st.(store.Pipeliner); ok {
		return &pipeGuard{guard: g, pipe: p}, nil
	}
	return g, nil
}

type guard struct {
	store.Store
	m   *Manager
	log *slog.Logger

	mu    sync.Mutex
	lease Lease

	stop, stopped chan struct{}
	closeOnce     sync.Once
	closeErr      error
}

func (g *guard) current() Lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lease
}

// renew renews the lease every TTL/3 until Close or until it is lost.
func (g *guard) renew() {
	defer close(g.stopped)
	for {
		t := g.m.clock.NewTimer(g.m.ttl / 3)
		select {
		case <-g.stop:
			t.Stop()
			return
		case <-t.C():
		}
		ctx, cancel := context.WithTimeout(context.Background(), g.m.ttl/3)
		err := g.reclaim(ctx)
		cancel()
		switch {
		case errors.Is(err, ErrFenced):
			g.log.Error("lease lost: this node no longer writes to the store", slog.String("lease", g.current().Name), slog.Any("error", err))
			return
		case err != nil:
			g.log.Warn("lease renewal failed; retrying", slog.Any("error", err))
		}
	}
}

// reclaim renews the lease, also when it lapsed (a renewal that came late:
// the machine or the database slow) provided no other node took it
// meanwhile (Manager.Reclaim). It fails with ErrFenced once another node
// took over.
func (g *guard) reclaim(ctx context.Context) error {
	l, err := g.m.Reclaim(ctx, g.current())
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.lease = l
	g.mu.Unlock()
	return nil
}

// Update runs fn after checking, in its transaction, that this node still
// holds the lease. A lease that lapsed with no other node taking it is
// reclaimed and the Update runs again, rather than refused until the next
// renewal.
func (g *guard) Update(ctx context.Context, fn func(store.Txn) error) error {
	err := g.update(ctx, fn)
	if errors.Is(err, ErrFenced) && g.reclaim(ctx) == nil {
		err = g.update(ctx, fn)
	}
	return err
}

func (g *guard) update(ctx context.Context, fn func(store.Txn) error) error {
	l := g.current()
	return g.Store.Update(ctx, func(tx store.Txn) error {
		if err := g.m.Check(tx, l); err != nil {
			return fenced(err)
		}
		return fn(tx)
	})
}

// Close stops the renewals, releases the lease and closes the store.
func (g *guard) Close() error {
	g.closeOnce.Do(func() {
		close(g.stop)
		<-g.stopped
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := g.m.Release(ctx, g.current()); err != nil {
			g.log.Warn("lease release failed; it expires on its own", slog.Any("error", err))
		}
		g.closeErr = g.Store.Close()
	})
	return g.closeErr
}

// pipeGuard is a guard over a store.Pipeliner.
type pipeGuard struct {
	*guard
	pipe store.Pipeliner
}

// Begin opens a pipelined transaction that checks the lease first. A lease
// that lapsed with no other node taking it is reclaimed and the
// transaction begun again under the renewed lease.
func (g *pipeGuard) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	for reclaimed := false; ; reclaimed = true {
		tx, err := g.pipe.Begin(ctx)
		if err != nil {
			return nil, err
		}
		err = g.m.Check(tx, g.current())
		if err == nil {
			return tx, nil
		}
		tx.Discard()
		if reclaimed || !errors.Is(err, ErrFenced) || g.reclaim(ctx) != nil {
			return nil, fenced(err)
		}
	}
}

// fenced turns a refused Check into what a caller of the store sees: the
// node is unavailable for writes (503), and the error is still ErrFenced.
// A lease that only lapsed is reclaimed before the caller sees this, so
// its message says the renewal failed, not that another node took over.
func fenced(err error) error {
	if !errors.Is(err, ErrFenced) {
		return err
	}
	msg := "this node no longer holds the store's lease: another node took over"
	if errors.Is(err, errLapsed) {
		msg = "this node's lease on the store lapsed and could not be renewed; try again"
	}
	return errors.Mark(errors.WithSecondaryError(errs.Unavailablef("%s", msg), err), ErrFenced)
}
