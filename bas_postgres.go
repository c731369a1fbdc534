package bas

import (
	"context"

	"github.com/bas-platform/bas/store/pgstore"
	"github.com/cockroachdb/errors"
)

// postgresStore opens the PostgreSQL store Options.PostgresDSN or
// Options.Postgres names, or returns nil when neither is set.
func postgresStore(ctx context.Context, opts Options) (Store, error) {
	if opts.PostgresDSN == "" && opts.Postgres == nil {
		return nil, nil
	}
	if opts.InMemory {
		return nil, errors.New("bas: Options.InMemory and a PostgreSQL store (Options.PostgresDSN or Options.Postgres) are both set: choose one")
	}
	s, err := pgstore.Open(ctx, pgstore.Options{DSN: opts.PostgresDSN, Pool: opts.Postgres, Schema: opts.PostgresSchema})
	if err != nil {
		return nil, errors.Wrap(err, "open the PostgreSQL store")
	}
	return s, nil
}
