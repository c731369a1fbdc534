package pgtest_test

import (
	"testing"

	"github.com/bas-platform/bas/internal/pgtest"
)

// A test that needs PostgreSQL asks for the DSN (it is skipped without one
// outside CI) and a schema of its own.
func Example() {
	_ = func(t *testing.T) {
		dsn := pgtest.DSN(t)
		schema := pgtest.Schema(t, dsn)
		_, _ = dsn, schema
	}
}
