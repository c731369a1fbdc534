package pgstore

import (
	"strings"

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
	// a database in different schemas. Defaults to the first schema of
	// the connection string's search_path parameter
	// ("postgres://h/db?search_path=bas"), else "public".
	Schema string
}

// defaultSchema is the schema named first by a connection's search_path
// setting, or "public".
func defaultSchema(params map[string]string) string {
	first, _, _ := strings.Cut(params["search_path"], ",")
	first = strings.Trim(strings.TrimSpace(first), `"`)
	if first == "" || first == "$user" {
		return "public"
	}
	return first
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
