package badgerstore

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/dgraph-io/badger/v4"
)

// emptyMemTableErr is the message of the error (ristretto's z.NewFile,
// which Badger wraps as text) that Badger's Open returns for a memtable
// log file a crash left empty, under the context memTablesErr.
const (
	emptyMemTableErr = "Create a new file"
	memTablesErr     = "while opening memtables"
)

// ErrClosed is returned by View, Update and RunGC once Close has begun. It
// is marked bas.ErrUnavailable.
var ErrClosed = errors.Mark(errors.New("badgerstore: store is closed"), errs.Unavailable)

// Store is a store.Store on a Badger database. It is safe for concurrent
// use; a transaction (the Reader or Txn handed to fn) is not.
type Store struct {
	db        *badger.DB
	log       *slog.Logger
	clock     clock.Clock
	maxTxn    int64 // Badger's limit on the bytes one transaction writes
	maxValue  int64 // the largest value Badger accepts
	inMemory  bool
	stopGC    chan struct{}
	gcStopped chan struct{} // closed when the GC loop has returned

	trimStopped chan struct{} // closed when the builder trim loop has returned (builders.go)

	mu       sync.Mutex // guards closed and the Add side of inflight
	closed   bool
	inflight sync.WaitGroup // View, Update and RunGC calls in progress

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when missing) the database in opts.Dir, or an empty
// in-memory one, and starts the value-log GC schedule.
func Open(opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	bo := opts.badgerOptions()
	db, err := badger.Open(bo)
	if err != nil && !opts.InMemory && strings.Contains(err.Error(), memTablesErr) &&
		strings.Contains(err.Error(), emptyMemTableErr) {
		// A crash between Badger's creating a memtable's log file and its
		// sizing it leaves that file empty, and Badger's next Open fails on
		// it (dgraph-io/badger#2207, v4.7 to at least v4.9.6) after sizing it
		// itself, with nothing in it. A second Open therefore finds an
		// empty memtable, which it skips. Badger holds the directory's lock
		// meanwhile and released it when the first Open failed. That Open
		// leaves behind what it had started (nine goroutines, its caches,
		// the memtable files it had mapped: Badger skips its clean-up on
		// this error), once, at start-up; the match on both messages keeps
		// the retry to this one case.
		opts.Logger.Warn("badgerstore: a memtable log left empty by a crash; opening again", "dir", opts.Dir, "error", err)
		db, err = badger.Open(bo)
	}
	if err != nil {
		err = errors.Wrapf(err, "badgerstore: open %q", opts.Dir)
		if strings.Contains(err.Error(), "directory lock") {
			err = errors.Mark(errors.WithHint(err, "only one process, and one Store within it, may open a directory at a time: close the other first"), errs.Conflict)
		}
		return nil, err
	}
	s := &Store{
		db:        db,
		log:       opts.Logger,
		clock:     opts.Clock,
		maxTxn:    db.MaxBatchSize(),
		maxValue:  bo.ValueLogFileSize,
		inMemory:  opts.InMemory,
		stopGC:    make(chan struct{}),
		gcStopped: make(chan struct{}),
	}
	if opts.InMemory {
		// In memory every value must fit in the LSM tree, which takes values
		// below the value threshold. (Badger's own check lets a value of
		// exactly the threshold through, and then panics writing it.)
		s.maxValue = bo.ValueThreshold - 1
	}
	if opts.InMemory || opts.GCInterval < 0 {
		close(s.gcStopped)
	} else {
		go s.gcLoop(opts.GCInterval)
	}
	s.startTrim(db)
	return s, nil
}

// begin registers a call that uses the database, so Close waits for it. It
// fails with ErrClosed once Close has begun.
func (s *Store) begin() (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.WithStack(ErrClosed)
	}
	s.inflight.Add(1)
	return s.inflight.Done, nil
}

// View runs fn in a read-only snapshot taken when View begins: commits that
// land while fn runs are not visible to it.
func (s *Store) View(ctx context.Context, fn func(store.Reader) error) error {
	done, err := s.begin()
	if err != nil {
		return err
	}
	defer done()
	if err := ctx.Err(); err != nil {
		return errors.WithStack(err)
	}
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	return fn(&reader{txn: txn})
}

// Update runs fn in a read-write transaction and commits it with a synced
// write: it returns nil only once the commit is on disk. Badger writes
// concurrent commits in batches but syncs its log once per commit of the
// batch (Badger v4.9's writeToLSM), and a commit is answered when its whole
// batch is written: a commit queued behind another pays for that one's sync
// too. Writers that commit often gather their changes into fewer, larger
// transactions (the run engine's group commit).
//
// When the commit conflicts (a key fn read was written by a commit that
// landed after this transaction began, including a key fn found missing),
// Update runs fn again in a new transaction, up to
// store.MaxConflictRetries times; a conflict that outlasts them is marked
// store.ErrConflict. fn must therefore have no outside effects. An error
// from fn discards the transaction (nothing is written) and is returned as
// is, never retried, even when it is itself a conflict (a unique index
// taken). A transaction that writes more than about 15% of
// Options.MemTableSize (counting values kept in the value log, see
// Options.ValueThreshold, by their pointers) fails with an error marked
// bas.ErrTooLarge.
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
		txn := s.db.NewTransaction(true)
		defer txn.Discard()
		if err := fn(&writer{reader: reader{txn: txn}, s: s}); err != nil {
			// Stop retrying: only a failed commit is an optimistic conflict.
			fnErr = err
			return nil
		}
		return s.commitError(txn.Commit())
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

var _ store.Pipeliner = (*Store)(nil)

// Begin opens a write-only transaction committed with CommitAsync
// (store.Pipeliner). It blocks until commits started earlier are applied,
// as every Badger transaction does; a caller keeps one open ahead to
// overlap commits.
func (s *Store) Begin(ctx context.Context) (store.PipelinedTxn, error) {
	if err := ctx.Err(); err != nil {
		return nil, errors.WithStack(err)
	}
	done, err := s.begin()
	if err != nil {
		return nil, err
	}
	txn := s.db.NewTransaction(true)
	return &pipelined{writer: writer{reader: reader{txn: txn}, s: s}, done: done}, nil
}

type pipelined struct {
	writer
	done func()
	once sync.Once
}

func (p *pipelined) finish() { p.once.Do(p.done) }

// CommitAsync starts the commit; done reports its durability.
func (p *pipelined) CommitAsync(done func(error)) {
	p.txn.CommitWith(func(err error) {
		p.finish()
		done(p.s.commitError(err))
	})
}

// Discard drops the transaction.
func (p *pipelined) Discard() {
	p.txn.Discard()
	p.finish()
}

func (s *Store) commitError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrConflict):
		// Both marks: today store.ErrConflict is bas.ErrConflict, but the
		// store's retry mark and the API's 409 kind need not stay one.
		return errors.Mark(errors.Mark(errors.Wrap(err, "badgerstore: commit"), store.ErrConflict), errs.Conflict)
	case errors.Is(err, badger.ErrTxnTooBig):
		return s.tooBig(err)
	default:
		return errors.Wrap(err, "badgerstore: commit")
	}
}

func (s *Store) tooBig(err error) error {
	return errors.WithSecondaryError(errors.WithHint(
		errs.TooLargef("transaction too large: one transaction may write at most %d bytes", s.maxTxn),
		"split the work into smaller transactions, or raise Options.MemTableSize (the limit is 15% of it)"),
		err)
}

// RunGC runs one round of value-log garbage collection now: Badger's
// RunValueLogGC(0.5) until it finds no value-log file worth rewriting or ctx
// ends. It returns how many files were rewritten. The GC schedule calls it;
// a host may call it too, for instance after deleting much data. In memory
// there is nothing to collect and it returns 0, nil.
func (s *Store) RunGC(ctx context.Context) (rewritten int, err error) {
	done, err := s.begin()
	if err != nil {
		return 0, err
	}
	defer done()
	if s.inMemory {
		return 0, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return rewritten, errors.WithStack(err)
		}
		select {
		case <-s.stopGC:
			return rewritten, nil
		default:
		}
		err := s.db.RunValueLogGC(gcDiscardRatio)
		switch {
		case errors.Is(err, badger.ErrNoRewrite):
			return rewritten, nil
		case err != nil:
			return rewritten, errors.Wrap(err, "badgerstore: value log GC")
		}
		rewritten++
	}
}

// gcLoop runs RunGC every interval until Close.
func (s *Store) gcLoop(interval time.Duration) {
	defer close(s.gcStopped)
	ctx := context.Background()
	for {
		t := s.clock.NewTimer(interval)
		select {
		case <-s.stopGC:
			t.Stop()
			return
		case <-t.C():
		}
		n, err := s.RunGC(ctx)
		switch {
		case errors.Is(err, ErrClosed):
			return
		case errors.Is(err, badger.ErrRejected):
			s.log.Debug("badgerstore: value log GC skipped: another GC is running")
		case err != nil:
			s.log.Warn("badgerstore: value log GC failed", slog.Any("error", err), slog.Int("rewritten", n))
		default:
			s.log.Debug("badgerstore: value log GC", slog.Int("rewritten", n))
		}
	}
}

// Close waits for the View, Update and RunGC calls in progress to return,
// stops the GC schedule and closes the database. Later calls of View,
// Update and RunGC fail with ErrClosed. Calling Close again returns the
// first call's result. Close must not be called from inside a transaction.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stopGC)
		s.inflight.Wait()
		<-s.gcStopped
		<-s.trimStopped
		if err := s.db.Close(); err != nil {
			s.closeErr = errors.Wrap(err, "badgerstore: close")
		}
	})
	return s.closeErr
}
