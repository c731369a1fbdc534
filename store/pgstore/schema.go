package pgstore

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the version of the table layout this code writes. Open
// migrates a database at an older version up to it and refuses one at a
// newer version with ErrSchemaTooNew.
const SchemaVersion = 1

// ErrSchemaTooNew marks Open's refusal of a database whose layout a newer
// release of bas wrote.
var ErrSchemaTooNew = errors.New("pgstore: the database schema is newer than this code")

// migrations[i] takes the layout from version i to version i+1. Each is
// plain SQL that PostgreSQL, CockroachDB and YugabyteDB share; {schema} is
// replaced by the quoted schema name.
var migrations = []string{
	// 0 -> 1: the key-value table.
	`CREATE TABLE IF NOT EXISTS {schema}.bas_kv (
		k bytea PRIMARY KEY,
		v bytea NOT NULL,
		ver int8 NOT NULL
	)`,
}

// migrate creates the schema and its version table when missing and brings
// the layout to SchemaVersion. Several processes opening one new database
// at once race on CREATE ... IF NOT EXISTS (PostgreSQL reports a unique
// violation on its catalog); migrate retries those.
func (s *Store) migrate(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		err = s.migrateOnce(ctx)
		if err == nil || !retryableDDL(err) {
			return err
		}
	}
	return err
}

func (s *Store) migrateOnce(ctx context.Context) error {
	q := s.q
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return errors.Wrap(err, "pgstore: migrate: begin")
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, stmt := range []string{
		`CREATE SCHEMA IF NOT EXISTS ` + s.schemaIdent,
		q(`CREATE TABLE IF NOT EXISTS {schema}.bas_schema (id int4 PRIMARY KEY, version int4 NOT NULL)`),
		q(`INSERT INTO {schema}.bas_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`),
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return errors.Wrapf(err, "pgstore: migrate: %s", stmt)
		}
	}
	var version int
	if err := tx.QueryRow(ctx, q(`SELECT version FROM {schema}.bas_schema WHERE id = 1 FOR UPDATE`)).Scan(&version); err != nil {
		return errors.Wrap(err, "pgstore: migrate: read the schema version")
	}
	if version > SchemaVersion {
		return errors.WithHint(
			errors.Mark(errors.Newf("pgstore: schema %s is at version %d, newer than the version %d this code knows", s.schemaIdent, version, SchemaVersion), ErrSchemaTooNew),
			"a newer release of bas migrated this database: run that release (or newer), or point this one at another schema or database")
	}
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, q(migrations[v])); err != nil {
			return errors.Wrapf(err, "pgstore: migrate to version %d", v+1)
		}
	}
	if version < SchemaVersion {
		if _, err := tx.Exec(ctx, q(`UPDATE {schema}.bas_schema SET version = $1 WHERE id = 1`), SchemaVersion); err != nil {
			return errors.Wrap(err, "pgstore: migrate: record the version")
		}
	}
	return errors.Wrap(tx.Commit(ctx), "pgstore: migrate: commit")
}

// retryableDDL reports whether a migration failed only because another
// process migrated at the same time.
func retryableDDL(err error) bool {
	switch sqlState(err) {
	case "40001", "40P01", "23505", "42P06", "42P07":
		return true
	}
	return false
}
