package bas

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
	"github.com/cockroachdb/errors"
)

// engineLease is the lease a workspace holds on its PostgreSQL database
// and schema while it works there.
const engineLease = "engine"

// postgresStore opens the PostgreSQL store Options.PostgresDSN or
// Options.Postgres names, or returns nil when neither is set.
//
// One workspace works on a database and schema at a time: the store holds
// a lease (renewed every 5 seconds, lapsing 15 seconds after its holder
// dies) and every write checks it, so a second workspace waits in Open as
// a standby and takes over when the first is gone, and a workspace that
// lost its lease cannot write over its successor.
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
	var b [4]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	// The lease runs on the wall clock whatever Options.Clock is: it is
	// about processes being alive, not about business time.
	g, err := lease.Exclusive(ctx, s, lease.Config{Store: s, Clock: clock.Real{}, Owner: owner}, engineLease, opts.Logger)
	if err != nil {
		_ = s.Close()
		return nil, errors.Wrap(err, "take the PostgreSQL store's lease")
	}
	return g, nil
}
