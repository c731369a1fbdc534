package pgstore

import (
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is the pool size Open uses for a DSN that does not set
// pool_max_conns.
const DefaultMaxConns = 16

// Options configure Open. Exactly one of DSN and Pool must be set.
type Options struct {
	// DSN is a PostgreSQL connection string (URL or key=value form), such as
	// "postgres://bas@db.example.com:5432/bas?sslmode=verify-full". Open
	// makes a pool from it and Close closes that pool. pgxpool's pool_*
	// parameters (pool_max_conns, pool_max_conn_lifetime ...) are honoured.
	DSN string

	// Pool is a pool the caller made and keeps: Close does not close it.
	Pool *pgxpool.Pool

	// Schema is the PostgreSQL schema holding bas's tables; Open creates it
	// when missing. Several stores (tenants of a hosting, tests) may share
	// a database in different schemas. Defaults to "public".
	Schema string
}

func (o Options) withDefaults() Options {
	if o.Schema == "" {
		o.Schema = "public"
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.DSN == "" && o.Pool == nil:
		return errors.New("pgstore: Options.DSN and Options.Pool are both empty: set DSN to a postgres:// connection string, or pass a *pgxpool.Pool")
	case o.DSN != "" && o.Pool != nil:
		return errors.New("pgstore: Options.DSN and Options.Pool are both set: set one of them")
	case len(o.Schema) > 63:
		return errors.Newf("pgstore: Options.Schema %q is longer than PostgreSQL's 63-byte identifiers", o.Schema)
	}
	return nil
}
