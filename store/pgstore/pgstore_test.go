package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/pgstore"
	"github.com/bas-platform/bas/store/storetest"
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// open opens a store in a schema of its own.
func open(t *testing.T, dsn string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: pgtest.Schema(t, dsn)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) store.Store { return open(t, dsn) })
	// A "directory" is a schema named after it, dropped at the end.
	storetest.ExerciseReopen(t, func(t *testing.T, dir string) store.Store {
		sum := sha256.Sum256([]byte(t.Name() + dir))
		schema := "r_" + hex.EncodeToString(sum[:8])
		t.Cleanup(func() { pgtest.Drop(t, dsn, schema) })
		s, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestSchemaVersion(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	schema := pgtest.Schema(t, dsn)
	// Several processes opening one new database at once all succeed.
	errc := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema})
			if err == nil {
				err = s.Close()
			}
			errc <- err
		}()
	}
	for range 4 {
		if err := testwait.Recv(t, errc, "the concurrent Opens returned"); err != nil {
			t.Fatalf("concurrent Open of a new schema: %v", err)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var version int
	table := pgx.Identifier{schema, "bas_schema"}.Sanitize()
	if err := conn.QueryRow(t.Context(), "SELECT version FROM "+table).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != pgstore.SchemaVersion {
		t.Errorf("schema version after Open = %d, want %d", version, pgstore.SchemaVersion)
	}

	// A newer layout is refused, and left alone.
	if _, err := conn.Exec(t.Context(), "UPDATE "+table+" SET version = $1", pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema})
	if !errors.Is(err, pgstore.ErrSchemaTooNew) || !strings.Contains(err.Error(), "newer than the version") {
		t.Errorf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if err := conn.QueryRow(t.Context(), "SELECT version FROM "+table).Scan(&version); err != nil || version != pgstore.SchemaVersion+1 {
		t.Errorf("version after the refused Open = %d, %v; want it untouched", version, err)
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		opts pgstore.Options
		want string
	}{
		{"nothing", pgstore.Options{}, "both empty"},
		{"bad dsn", pgstore.Options{DSN: "postgres://u:secret@host:notaport/db"}, "not a valid PostgreSQL connection string"},
		{"long schema", pgstore.Options{DSN: "postgres://h/db", Schema: strings.Repeat("s", 64)}, "63-byte"},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := pgstore.Open(t.Context(), test.opts)
			if err == nil || !strings.Contains(err.Error(), test.want) {
				t.Fatalf("Open: %v, want an error containing %q", err, test.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Open's error shows the password: %v", err)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	s := open(t, dsn)
	t.Cleanup(func() { _ = s.Close() })
	for _, test := range []struct {
		name    string
		key     int
		wantErr bool
	}{
		{"longest key", pgstore.MaxKeySize, false},
		{"key one byte too long", pgstore.MaxKeySize + 1, true},
	} {
		t.Run(test.name, func(t *testing.T) {
			key := []byte(strings.Repeat("k", test.key))
			err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set(key, []byte("v")) })
			if got := errors.Is(err, errs.TooLarge); got != test.wantErr {
				t.Fatalf("Set of a %d-byte key: %v, want TooLarge %v", test.key, err, test.wantErr)
			}
		})
	}
}

// A pool passed in stays the caller's: Close leaves it open. A Scan's fn
// may commit another transaction (on another connection of the pool).
func TestBorrowedPool(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := pgstore.Open(t.Context(), pgstore.Options{Pool: pool, Schema: pgtest.Schema(t, dsn)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx := t.Context()
	if err := s.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("p/1"), []byte("a")) }); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: []byte("p/")}, func(key, _ []byte) error {
			return s.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("copy/"+string(key)), []byte("b")) })
		})
	})
	if err != nil {
		t.Fatalf("an Update inside a Scan: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the borrowed pool after Close: %v, want it open", err)
	}
	if err := s.View(ctx, func(store.Reader) error { return nil }); !errors.Is(err, pgstore.ErrClosed) {
		t.Errorf("View after Close: %v, want ErrClosed", err)
	}
}
