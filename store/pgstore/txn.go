package pgstore

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Scan reads rows in batches that grow from scanFirstBatch to
// scanMaxBatch: a short page costs one small query, a long walk few.
const (
	scanFirstBatch = 32
	scanMaxBatch   = 1024
)

// reader is the store.Reader of a View, and the read half of an Update.
// It takes a connection and opens its snapshot at the first read.
type reader struct {
	s    *Store
	ctx  context.Context
	conn *pgxpool.Conn
	open bool // a snapshot transaction is open on conn

	// reads holds the version of every key read (0: missing); nil in a
	// View, which has nothing to check.
	reads map[string]int64
}

// acquire takes a connection from the pool when the reader has none.
func (r *reader) acquire() error {
	if r.conn != nil {
		return nil
	}
	c, err := r.s.pool.Acquire(r.ctx)
	if err != nil {
		return dbError(err, "acquire a connection")
	}
	r.conn = c
	return nil
}

// snapshot makes sure the snapshot transaction is open.
func (r *reader) snapshot() error {
	if r.open {
		return nil
	}
	if err := r.acquire(); err != nil {
		return err
	}
	if _, err := r.conn.Exec(r.ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return dbError(err, "begin a snapshot")
	}
	r.open = true
	return nil
}

// endSnapshot commits the read-only snapshot transaction.
func (r *reader) endSnapshot() error {
	if !r.open {
		return nil
	}
	r.open = false
	_, err := r.conn.Exec(r.ctx, "COMMIT")
	return dbError(err, "end a snapshot")
}

// release returns the connection. One left inside a transaction (fn failed,
// a query was cancelled) is rolled back first; pgxpool destroys a
// connection that is still in a transaction rather than reuse it.
func (r *reader) release() {
	if r.conn == nil {
		return
	}
	if r.open || r.conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = r.conn.Exec(context.WithoutCancel(r.ctx), "ROLLBACK")
		r.open = false
	}
	r.conn.Release()
	r.conn = nil
}

func (r *reader) noteRead(key []byte, ver int64) {
	if r.reads != nil {
		r.reads[string(key)] = ver
	}
}

// get reads key from the snapshot.
func (r *reader) get(key []byte) (val []byte, ver int64, err error) {
	if err := r.snapshot(); err != nil {
		return nil, 0, err
	}
	err = r.conn.QueryRow(r.ctx, r.s.sqlGet, key).Scan(&val, &ver)
	if errors.Is(err, pgx.ErrNoRows) {
		r.noteRead(key, 0)
		return nil, 0, errors.Mark(errors.Newf("pgstore: key %q not found", key), store.ErrNotFound)
	}
	if err != nil {
		return nil, 0, dbError(err, "get")
	}
	r.noteRead(key, ver)
	if val == nil {
		val = []byte{}
	}
	return val, ver, nil
}

// Get returns the value at key (a copy the caller owns).
func (r *reader) Get(key []byte) ([]byte, error) {
	v, _, err := r.get(key)
	return v, err
}

// row is one key-value pair read by a scan batch.
type row struct {
	key, val []byte
	ver      int64
}

// batch reads up to limit rows of the range, in scan order, strictly after
// from (strictly before it in reverse) when from is set.
func (r *reader) batch(opts store.ScanOptions, from []byte, limit int) ([]row, error) {
	if err := r.snapshot(); err != nil {
		return nil, err
	}
	cols := "k, v, ver"
	if opts.KeysOnly {
		cols = "k, NULL::bytea, ver"
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	end := store.PrefixEnd(opts.Prefix)
	if !opts.Reverse {
		if from != nil {
			where = append(where, "k > "+arg(from))
		} else if len(opts.Prefix) > 0 {
			where = append(where, "k >= "+arg(opts.Prefix))
		}
		if end != nil {
			where = append(where, "k < "+arg(end))
		}
	} else {
		if from != nil {
			where = append(where, "k < "+arg(from))
		} else if end != nil {
			where = append(where, "k < "+arg(end))
		}
		if len(opts.Prefix) > 0 {
			where = append(where, "k >= "+arg(opts.Prefix))
		}
	}
	sql := "SELECT " + cols + " FROM " + r.s.schemaIdent + ".bas_kv"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if opts.Reverse {
		sql += " ORDER BY k DESC"
	} else {
		sql += " ORDER BY k"
	}
	sql += " LIMIT " + arg(limit)
	rows, err := r.conn.Query(r.ctx, sql, args...)
	if err != nil {
		return nil, dbError(err, "scan")
	}
	out, err := pgx.CollectRows(rows, func(rw pgx.CollectableRow) (row, error) {
		var x row
		err := rw.Scan(&x.key, &x.val, &x.ver)
		return x, err
	})
	if err != nil {
		return nil, dbError(err, "scan")
	}
	return out, nil
}

// Scan walks the range in batches, so fn may run other queries (a Get, a
// nested Scan) on the same snapshot between rows.
func (r *reader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	return r.scan(opts, nil, fn)
}

// scan merges the rows of the snapshot with pending, the transaction's own
// writes within the range in scan order (nil val: deleted).
func (r *reader) scan(opts store.ScanOptions, pending []pendingWrite, fn func(key, value []byte) error) error {
	if len(opts.After) > 0 && !bytes.HasPrefix(opts.After, opts.Prefix) {
		return errors.Newf("pgstore: scan cursor %q does not start with the scan prefix %q", opts.After, opts.Prefix)
	}
	var from []byte
	if len(opts.After) > 0 {
		from = opts.After
	}
	// before reports whether a comes before b in scan order.
	before := func(a, b []byte) bool {
		if opts.Reverse {
			return bytes.Compare(a, b) > 0
		}
		return bytes.Compare(a, b) < 0
	}
	emit := func(key, val []byte) error {
		if opts.KeysOnly {
			val = nil
		} else if val == nil {
			val = []byte{}
		}
		return fn(key, val)
	}
	// Drop pending writes at or before the cursor.
	for len(pending) > 0 && from != nil && !before(from, pending[0].key) {
		pending = pending[1:]
	}
	limit := scanFirstBatch
	for {
		rows, err := r.batch(opts, from, limit)
		if err != nil {
			return err
		}
		for _, rw := range rows {
			r.noteRead(rw.key, rw.ver)
			for len(pending) > 0 && before(pending[0].key, rw.key) {
				p := pending[0]
				pending = pending[1:]
				if !p.del {
					if err := emit(p.key, p.val); err != nil {
						return unstop(err)
					}
				}
			}
			if len(pending) > 0 && bytes.Equal(pending[0].key, rw.key) {
				p := pending[0]
				pending = pending[1:]
				if p.del {
					continue // deleted by this transaction
				}
				rw.val = p.val
			}
			if err := emit(rw.key, rw.val); err != nil {
				return unstop(err)
			}
		}
		if len(rows) < limit {
			break
		}
		from = rows[len(rows)-1].key
		limit = min(2*limit, scanMaxBatch)
	}
	for _, p := range pending {
		if !p.del {
			if err := emit(p.key, p.val); err != nil {
				return unstop(err)
			}
		}
	}
	return nil
}

// unstop turns store.ErrStop from fn into the end of the scan.
func unstop(err error) error {
	if errors.Is(err, store.ErrStop) {
		return nil
	}
	return err
}

// write is one buffered change of an Update.
type write struct {
	val []byte
	del bool
}

// pendingWrite is a buffered change with its key, for merging into scans.
type pendingWrite struct {
	key, val []byte
	del      bool
}

// writer is the store.Txn of an Update: reads see the snapshot overlaid
// with the buffered writes, which the commit sends.
type writer struct {
	reader
	writes map[string]write
}

// Get returns the value at key, as this transaction left it.
func (w *writer) Get(key []byte) ([]byte, error) {
	if wr, ok := w.writes[string(key)]; ok {
		if wr.del {
			return nil, errors.Mark(errors.Newf("pgstore: key %q not found", key), store.ErrNotFound)
		}
		return bytes.Clone(wr.val), nil
	}
	return w.reader.Get(key)
}

// Scan walks the range as this transaction left it.
func (w *writer) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	var pending []pendingWrite
	end := store.PrefixEnd(opts.Prefix)
	for k, wr := range w.writes {
		key := []byte(k)
		if !bytes.HasPrefix(key, opts.Prefix) || (end != nil && bytes.Compare(key, end) >= 0) {
			continue
		}
		pending = append(pending, pendingWrite{key: key, val: wr.val, del: wr.del})
	}
	slices.SortFunc(pending, func(a, b pendingWrite) int {
		if opts.Reverse {
			return bytes.Compare(b.key, a.key)
		}
		return bytes.Compare(a.key, b.key)
	})
	return w.reader.scan(opts, pending, fn)
}

// Set buffers value at key (both copied).
func (w *writer) Set(key, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > MaxValueSize {
		return errs.TooLargef("value of %d bytes is over the store's limit of %d bytes", len(value), MaxValueSize)
	}
	w.writes[string(key)] = write{val: append([]byte{}, value...)}
	return nil
}

// Delete buffers the removal of key.
func (w *writer) Delete(key []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	w.writes[string(key)] = write{del: true}
	return nil
}

func checkKey(key []byte) error {
	switch {
	case len(key) == 0:
		return errors.New("pgstore: empty key")
	case len(key) > MaxKeySize:
		return errs.TooLargef("key of %d bytes is over the store's limit of %d bytes", len(key), MaxKeySize)
	}
	return nil
}

// commit ends the snapshot and applies the transaction (apply), then
// commits it. See the package doc, Transactions.
func (w *writer) commit() error {
	if len(w.writes) == 0 {
		// Nothing to write: the reads were a consistent snapshot.
		return w.endSnapshot()
	}
	if err := w.apply(); err != nil {
		return err
	}
	_, err := w.conn.Exec(w.ctx, "COMMIT")
	return dbError(err, "commit")
}

// apply ends the snapshot and sends, in one round trip, a transaction that
// locks the keys fn read (shared when it only read them, exclusive when it
// also wrote them, in key order), holds the keys fn found missing, checks
// that none of the keys fn read moved since, and applies the writes. It
// leaves the transaction open for the caller to commit; a key that moved
// is a conflict.
func (w *writer) apply() error {
	if err := w.acquire(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	snapEnd := 0
	if w.open {
		b.Queue("COMMIT")
		w.open = false
		snapEnd = 1
	}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")

	var readWrite, readOnly, missing [][]byte
	for k, v := range w.reads {
		if _, ok := w.writes[k]; ok {
			readWrite = append(readWrite, []byte(k))
		} else {
			readOnly = append(readOnly, []byte(k))
		}
		if v == 0 {
			missing = append(missing, []byte(k))
		}
	}
	var locks []string
	for _, l := range []struct {
		keys [][]byte
		sql  string
	}{{readWrite, w.s.sqlLock}, {readOnly, w.s.sqlShare}} {
		if len(l.keys) > 0 {
			slices.SortFunc(l.keys, bytes.Compare)
			b.Queue(l.sql, l.keys)
			locks = append(locks, l.sql)
		}
	}
	slices.SortFunc(missing, bytes.Compare)
	if len(missing) > 0 {
		b.Queue(w.s.sqlHold, missing)
	}
	writes := w.queueWrites(b, missing)

	// Read the results in order; the first failure ends the batch.
	br := w.conn.SendBatch(w.ctx, b)
	err := func() error {
		for range snapEnd {
			if _, err := br.Exec(); err != nil {
				return dbError(err, "end the snapshot")
			}
		}
		if _, err := br.Exec(); err != nil {
			return dbError(err, "begin the commit")
		}
		now := make(map[string]int64, len(w.reads))
		var k []byte
		var v int64
		for range locks {
			rows, _ := br.Query()
			if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
				now[string(k)] = v
				return nil
			}); err != nil {
				return dbError(err, "lock the keys")
			}
		}
		for key, seen := range w.reads {
			if now[key] != seen {
				return conflict(errors.Newf("pgstore: commit: key %q changed after this transaction read it", key))
			}
		}
		if len(missing) > 0 {
			held := 0
			rows, _ := br.Query()
			if _, err := pgx.ForEachRow(rows, []any{&k}, func() error {
				held++
				return nil
			}); err != nil {
				return dbError(err, "check the missing keys")
			}
			if held != len(missing) {
				return conflict(errors.New("pgstore: commit: a key this transaction found missing was created since"))
			}
		}
		for range writes {
			if _, err := br.Exec(); err != nil {
				return dbError(err, "write")
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = dbError(cerr, "commit")
	}
	return err
}

// queueWrites queues the buffered writes, sorted by key so that concurrent
// commits take row locks in one order, with the removal of the
// placeholders held for missing (those not written); it returns how many
// statements it queued.
func (w *writer) queueWrites(b *pgx.Batch, missing [][]byte) int {
	ver := newVersion()
	var setK, setV, delK [][]byte
	var vers []int64
	keys := make([]string, 0, len(w.writes))
	for k := range w.writes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		wr := w.writes[k]
		if wr.del {
			delK = append(delK, []byte(k))
			continue
		}
		setK = append(setK, []byte(k))
		setV = append(setV, wr.val)
		vers = append(vers, ver)
	}
	for _, k := range missing {
		if _, ok := w.writes[string(k)]; !ok {
			delK = append(delK, k) // the placeholder held for the check
		}
	}
	slices.SortFunc(delK, bytes.Compare)
	n := 0
	if len(setK) > 0 {
		b.Queue(w.s.sqlUpsert, setK, setV, vers)
		n++
	}
	if len(delK) > 0 {
		b.Queue(w.s.sqlDelete, delK)
		n++
	}
	return n
}
