// Package pgstore is a store.Store on PostgreSQL, through jackc/pgx v5, so
// that several processes (or machines) can share one database, and so that
// bas can run on PostgreSQL-wire distributed databases (CockroachDB,
// YugabyteDB): it keeps to SQL they share.
//
// # Data
//
// Everything lives in one table, bas_kv (k bytea primary key, v bytea, ver
// int8), in a schema of the caller's choosing (Options.Schema, "public" by
// default), beside bas_schema, which holds the version of this layout. Open
// creates both and migrates an older layout; a layout newer than this code
// knows is refused (ErrSchemaTooNew) so an old binary never writes into a
// database it does not understand. bytea compares bytewise, so range scans
// both ways are index range scans on the primary key.
//
// # Transactions
//
// The Store contract is Badger's optimistic concurrency: an Update whose
// reads were overwritten by a commit that landed after it read them runs
// again, and nothing else does. pgstore keeps it exactly:
//
//   - fn reads from a REPEATABLE READ READ ONLY snapshot (taken at fn's
//     first read) and every key it sees is remembered with its version
//     (ver, random per commit; 0 for a missing key); its writes are
//     buffered in the process (its reads see them).
//   - The commit sends one batch, one round trip: a READ COMMITTED
//     transaction that locks the rows fn read (FOR SHARE, or FOR UPDATE
//     when fn also wrote them, in key order), holds each key fn found
//     missing with a placeholder row (which waits for, and then blocks, a
//     concurrent creation of it, and is deleted again), writes the
//     buffered changes with a new version, and reports the versions it
//     locked. When one moved since fn read it, the transaction is rolled
//     back and Update runs fn again (store.Retry, with backoff); otherwise
//     it commits. A serialization failure (SQLSTATE 40001) or a deadlock
//     (40P01) is a conflict too.
//
// Commits are thus two-phase locked, so serializable in commit order, with
// key-precise conflicts and no lock held while fn runs. PostgreSQL's own
// SERIALIZABLE level would do worse here: it accepts orders the contract
// forbids (fn read a key as missing, another commit then created it) and
// refuses disjoint transactions that share an index page. On CockroachDB,
// where READ COMMITTED is off unless enabled, the same transaction runs
// SERIALIZABLE: still correct, with more 40001 retries under contention,
// which Update absorbs.
//
// # Pipelined commits
//
// Store implements store.Pipeliner, which the run engine uses for its
// write-only batches: CommitAsync sends the writes and returns once they
// hold their rows' locks (so any later commit touching those keys is
// ordered after them), and the COMMIT with its sync completes in the
// background while the engine fills the next batch. Measured with the
// engine's Chain3 benchmark at 64 starters it lifted throughput 1.3-1.8
// times on a loaded machine and made no measurable difference on a quiet
// one (see the README's Scaling section).
//
// # Limits
//
// A key is at most MaxKeySize bytes (PostgreSQL's btree refuses index
// entries above about 2.7 KB); a value at most MaxValueSize.
//
// # Connections
//
// Open takes a DSN (Options.DSN) and makes a pool (16 connections unless
// the DSN says pool_max_conns), or borrows a *pgxpool.Pool (Options.Pool),
// which Close leaves open.
package pgstore
