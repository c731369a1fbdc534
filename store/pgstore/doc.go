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
//     (ver); its writes are buffered in the process (reads see them).
//   - The commit is one SERIALIZABLE transaction, sent in one round trip
//     with the reads' check: it re-reads the versions of the keys fn read,
//     writes the buffered changes with a new version, and commits only
//     when no version moved. A moved version is a conflict, and so is a
//     serialization failure (SQLSTATE 40001) or a deadlock (40P01) of the
//     commit itself; Update runs fn again (store.Retry, with backoff).
//
// Commits are therefore serializable in commit order, with key-precise
// conflicts: PostgreSQL's own SSI would both accept orders the contract
// forbids (a read of a missing key later created) and refuse disjoint
// transactions that share an index page; here its serializability only
// guards the short commit transactions against each other. On CockroachDB
// every transaction is SERIALIZABLE anyway and the same code runs
// unchanged; expect more 40001 retries under contention there, which
// Update absorbs.
//
// # Pipelined commits
//
// Store implements store.Pipeliner, which the run engine uses for its
// write-only batches: CommitAsync sends the writes and returns once they
// hold their rows' locks (so any later commit touching those keys is
// ordered after them), and the COMMIT with its sync completes in the
// background while the engine fills the next batch. Measured with the
// engine's Chain3 benchmark at 64 starters it lifts throughput by a
// quarter to three quarters (see the README's Scaling section).
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
