package pgstore

import (
	"context"
	"sync"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
)

var _ store.Pipeliner = (*Store)(nil)

// Begin opens a write-only transaction committed with CommitAsync
// (store.Pipeliner). CommitAsync sends the writes and waits until they
// hold their rows' locks, which orders every later commit touching those
// keys after this one; the COMMIT itself (and its sync) then runs while
// the caller fills the next transaction.
func (s *Store) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.WithStack(err)
	}
	done, err := s.begin()
	if err != nil {
		return nil, err
	}
	// The transaction outlives this call: its connection and queries use a
	// context that only Close-time cancellation of the pool ends.
	p := &pipelined{
		writer: writer{reader: reader{s: s, ctx: context.WithoutCancel(ctx)}, writes: map[string]write{}},
		done:   done,
	}
	return p, nil
}

type pipelined struct {
	writer
	done func()
	once sync.Once
}

func (p *pipelined) finish() {
	p.once.Do(func() {
		p.release()
		p.done()
	})
}

// CommitAsync applies the writes in a transaction, returns once they are
// in place (locked), and commits in the background; done reports the
// outcome.
func (p *pipelined) CommitAsync(done func(error)) {
	if err := p.apply(); err != nil {
		p.finish()
		done(err)
		return
	}
	go func() {
		_, err := p.conn.Exec(p.ctx, "COMMIT")
		p.finish()
		done(dbError(err, "commit"))
	}()
}

// apply begins the transaction and sends the writes, in one round trip.
func (p *pipelined) apply() error {
	if err := p.acquire(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	n := p.queueWrites(b, nil)
	br := p.conn.SendBatch(p.ctx, b)
	var err error
	for range 1 + n {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return dbError(err, "write")
}

// Discard drops the transaction.
func (p *pipelined) Discard() { p.finish() }
