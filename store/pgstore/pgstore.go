package pgstore

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Limits of what one Set may write.
const (
	// MaxKeySize is the longest key: PostgreSQL's btree refuses index
	// entries above about 2.7 KB.
	MaxKeySize = 2048
	// MaxValueSize is the largest value (PostgreSQL's bytea takes up to
	// 1 GB; one row this large is already a design mistake).
	MaxValueSize = 64 << 20
)

// ErrClosed is returned by View and Update once Close has begun. It is
// marked errs.Unavailable.
var ErrClosed = errors.Mark(errors.New("pgstore: store is closed"), errs.Unavailable)

// Store is a store.Store on PostgreSQL. It is safe for concurrent use; a
// transaction (the Reader or Txn handed to fn) is not.
type Store struct {
	pool        *pgxpool.Pool
	ownsPool    bool
	schemaIdent string // the quoted schema name

	// SQL with the schema filled in.
	sqlGet, sqlLock, sqlShare, sqlHold, sqlUpsert, sqlDelete string

	mu       sync.Mutex // guards closed and the Add side of inflight
	closed   bool
	inflight sync.WaitGroup

	closeOnce sync.Once
	// quit ends the Listen calls when Close begins (they hold a
	// connection, which the pool's Close would wait for).
	quit    context.Context
	quitNow context.CancelFunc
}

var _ store.Store = (*Store)(nil)

// Open connects (making a pool from opts.DSN, or using opts.Pool), creates
// or migrates the tables in opts.Schema, and returns the store.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Store{pool: opts.Pool}
	s.quit, s.quitNow = context.WithCancel(context.Background())
	if s.pool == nil {
		cfg, err := pgxpool.ParseConfig(opts.DSN)
		if err != nil {
			// pgx's message may quote the DSN, password included.
			return nil, errors.New("pgstore: Options.DSN is not a valid PostgreSQL connection string (postgres://user@host:port/db?sslmode=...)")
		}
		if !strings.Contains(opts.DSN, "pool_max_conns") {
			cfg.MaxConns = DefaultMaxConns
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, errors.Wrap(err, "pgstore: connect")
		}
		s.pool, s.ownsPool = pool, true
	}
	if opts.Schema == "" {
		opts.Schema = defaultSchema(s.pool.Config().ConnConfig.RuntimeParams)
	}
	s.schemaIdent = pgx.Identifier{opts.Schema}.Sanitize()
	s.sqlGet = s.q(`SELECT v, ver FROM {schema}.bas_kv WHERE k = $1`)
	s.sqlLock = s.q(`SELECT k, ver FROM {schema}.bas_kv WHERE k = ANY($1) ORDER BY k FOR UPDATE`)
	s.sqlShare = s.q(`SELECT k, ver FROM {schema}.bas_kv WHERE k = ANY($1) ORDER BY k FOR SHARE`)
	// A placeholder row (version 0, deleted again before the commit) holds
	// a key found missing: it waits for a concurrent creation of the key,
	// and makes later ones wait for this commit.
	s.sqlHold = s.q(`INSERT INTO {schema}.bas_kv (k, v, ver) SELECT k, '', 0 FROM unnest($1::bytea[]) AS u(k)
		ON CONFLICT (k) DO NOTHING RETURNING k`)
	s.sqlUpsert = s.q(`INSERT INTO {schema}.bas_kv (k, v, ver) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::int8[])
		ON CONFLICT (k) DO UPDATE SET v = excluded.v, ver = excluded.ver`)
	s.sqlDelete = s.q(`DELETE FROM {schema}.bas_kv WHERE k = ANY($1)`)
	if err := s.migrate(ctx); err != nil {
		if s.ownsPool {
			s.pool.Close()
		}
		return nil, err
	}
	return s, nil
}

// q fills the schema into a statement.
func (s *Store) q(sql string) string { return strings.ReplaceAll(sql, "{schema}", s.schemaIdent) }

// Pool returns the connection pool the store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// begin registers a call that uses the database, so Close waits for it.
func (s *Store) begin() (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.WithStack(ErrClosed)
	}
	s.inflight.Add(1)
	return s.inflight.Done, nil
}

// View runs fn in a read-only snapshot taken at fn's first read.
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	done, err := s.begin()
	if err != nil {
		return err
	}
	defer done()
	if err := ctx.Err(); err != nil {
		return errors.WithStack(err)
	}
	r := &reader{s: s, ctx: ctx}
	defer r.release()
	if err := fn(r); err != nil {
		return err
	}
	return r.endSnapshot()
}

// Update runs fn in a read-write transaction and returns once its commit
// is durable (as durable as the database's synchronous_commit makes it).
// When a key fn read changed before the commit, fn runs again, up to
// store.MaxConflictRetries times; fn must therefore have no outside
// effects. An error from fn discards the transaction and is returned as
// is, never retried.
func (s *Store) Update(ctx context.Context, fn func(store.Txn) error) error {
	done, err := s.begin()
	if err != nil {
		return err
	}
	defer done()
	var fnErr error
	err = store.Retry(ctx, func() error {
		if err := ctx.Err(); err != nil {
			return errors.WithStack(err)
		}
		w := &writer{reader: reader{s: s, ctx: ctx, reads: map[string]int64{}}, writes: map[string]write{}}
		defer w.release()
		if err := fn(w); err != nil {
			fnErr = err
			return nil
		}
		return w.commit()
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// Close waits for the View and Update calls in progress, then closes the
// pool when Open made it. Later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.quitNow()
		s.inflight.Wait()
		if s.ownsPool {
			s.pool.Close()
		}
	})
	return nil
}

// newVersion returns a version for the keys one commit writes: random and
// never 0 (0 stands for a missing key).
func newVersion() int64 {
	for {
		if v := rand.Int64(); v != 0 {
			return v
		}
	}
}

// sqlState returns the SQLSTATE of a PostgreSQL error, or "".
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// conflict marks err as an optimistic conflict: store.Retry runs the
// transaction again, and one that outlasts the retries maps to 409.
func conflict(err error) error {
	return errors.Mark(errors.Mark(err, store.ErrConflict), errs.Conflict)
}

// dbError wraps an error of the database, marking serialization failures
// and deadlocks as conflicts.
func dbError(err error, what string) error {
	if err == nil {
		return nil
	}
	switch sqlState(err) {
	case "40001", "40P01":
		return conflict(errors.Wrapf(err, "pgstore: %s", what))
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errors.Wrapf(err, "pgstore: %s", what)
	}
	return errors.Mark(errors.Wrapf(err, "pgstore: %s", what), errs.Unavailable)
}
