package pgstore_test

import (
	"testing"

	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
)

// TestPipelinedCommitsKeepTheirOrder opens a second transaction before the
// first commits, as the run engine does, and checks that commits apply in
// the order CommitAsync was called and a discarded one writes nothing.
func TestPipelinedCommitsKeepTheirOrder(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Parallel()
	st := open(t, dsn)
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	var p store.Pipeliner = st
	for round := range 20 {
		first, err := p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		second, err := p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		for _, step := range []struct {
			txn store.PipelinedTxn
			val string
		}{{first, "one"}, {second, "two"}} {
			if err := step.txn.Set([]byte("k"), []byte(step.val)); err != nil {
				t.Fatal(err)
			}
			if err := step.txn.Set([]byte("k-"+step.val), nil); err != nil {
				t.Fatal(err)
			}
			if err := step.txn.Delete([]byte("gone")); err != nil {
				t.Fatal(err)
			}
			step.txn.CommitAsync(func(err error) { done <- err })
		}
		for range 2 {
			if err := testwait.Recv(t, done, "the pipelined commit was told"); err != nil {
				t.Fatalf("round %d: commit: %v", round, err)
			}
		}
		discarded, err := p.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := discarded.Set([]byte("k"), []byte("never")); err != nil {
			t.Fatal(err)
		}
		discarded.Discard()
		err = st.View(ctx, func(r store.Reader) error {
			v, err := r.Get([]byte("k"))
			if err != nil || string(v) != "two" {
				t.Errorf("round %d: k = %q, %v; want the later commit's value", round, v, err)
			}
			for _, k := range []string{"k-one", "k-two"} {
				if _, err := r.Get([]byte(k)); err != nil {
					t.Errorf("round %d: %s: %v", round, k, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
