package pgstore

import (
	"context"
	"sync"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

var _ store.Pipeliner = (*Store)(nil)

// Begin opens a transaction committed with CommitAsync (store.Pipeliner).
// CommitAsync sends the writes and waits until they hold their rows'
// locks, which orders every later commit touching those keys after this
// one; the COMMIT itself (and its sync) then runs while the caller fills
// the next transaction. Unlike the contract's minimum, reads are checked
// as in Update (a moved key fails the commit with a conflict): a fencing
// check may read its lease in a pipelined transaction.
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
		writer: writer{reader: reader{s: s, ctx: context.WithoutCancel(ctx), reads: map[string]int64{}}, writes: map[string]write{}},
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

// Discard drops the transaction.
func (p *pipelined) Discard() { p.finish() }
