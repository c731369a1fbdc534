package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
)

var _ store.Waker = (*Store)(nil)

// channel is the NOTIFY channel of topic in this store's schema: stores
// on other schemas of the database never hear it. It stays well under
// PostgreSQL's 63-byte identifier limit.
func (s *Store) channel(topic string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s.schemaIdent))
	if len(topic) > 32 {
		topic = topic[:32]
	}
	return fmt.Sprintf("bas_%s_%016x", topic, h.Sum64())
}

// Wake signals the processes listening on topic in this store's schema
// (pg_notify), at once, outside any transaction.
func (s *Store) Wake(ctx context.Context, topic string) error {
	done, err := s.begin()
	if err != nil {
		return err
	}
	defer done()
	_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, s.channel(topic))
	return dbError(err, "wake")
}

// listenRetry is how long Listen waits before listening again on a new
// connection when its connection failed.
const listenRetry = time.Second

// Listen holds one connection of the pool listening on topic (LISTEN) and
// calls fn for each notification, until ctx ends or the store closes; a
// failed connection is replaced (signals sent meanwhile are lost: fn is a
// hint, see store.Waker). It returns nil when ctx ended or the store
// closed.
func (s *Store) Listen(ctx context.Context, topic string, fn func()) error {
	done, err := s.begin()
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.quit, cancel)
	defer stop()
	for ctx.Err() == nil {
		if err := s.listenOnce(ctx, topic, fn); err != nil && ctx.Err() == nil {
			t := time.NewTimer(listenRetry)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	return nil
}

func (s *Store) listenOnce(ctx context.Context, topic string, fn func()) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return errors.WithStack(err)
	}
	// The connection listens: it goes back to no one.
	defer func() {
		_ = c.Conn().Close(context.Background())
		c.Release()
	}()
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel(topic)}.Sanitize()); err != nil {
		return errors.WithStack(err)
	}
	fn() // signals sent before LISTEN took effect are not lost
	for {
		if _, err := c.Conn().WaitForNotification(ctx); err != nil {
			return errors.WithStack(err)
		}
		fn()
	}
}
