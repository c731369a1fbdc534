// Package pgtest gives tests a PostgreSQL schema of their own on the
// database named by BAS_PG_DSN (.ci/postgres.sh starts a throwaway cluster
// and prints it; .ci/run does so for CI).
//
// Outside CI a test without BAS_PG_DSN is skipped with a message saying
// how to run it; in CI (CI=true) a missing BAS_PG_DSN fails it, so the
// PostgreSQL tests cannot silently stop running.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN is the environment variable naming the test database.
const EnvDSN = "BAS_PG_DSN"

// DSN returns the test database's connection string, or skips t (fails it
// in CI) when there is none.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set in CI: .ci/run starts PostgreSQL with .ci/postgres.sh and exports it", EnvDSN)
	}
	t.Skipf("%s is not set: run `eval \"$(.ci/postgres.sh start)\"` (PostgreSQL 15's binaries) or point it at a database to run the PostgreSQL tests", EnvDSN)
	return ""
}

// Schema returns the name of a new, empty schema for t, dropped (with
// everything in it) when t ends.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "t_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { Drop(t, dsn, name) })
	return name
}

// Drop drops schema with everything in it.
func Drop(t testing.TB, dsn, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("pgtest: connect to drop schema %s: %v", schema, err)
		return
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}
