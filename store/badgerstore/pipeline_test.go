package badgerstore_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// TestPipelinedCommitsKeepTheirOrder opens a second transaction before the
// first commits, as the run engine does, and checks that commits apply in
// the order CommitAsync was called and a discarded one writes nothing.
func TestPipelinedCommitsKeepTheirOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var p store.Pipeliner = st
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
		step.txn.CommitAsync(func(err error) { done <- err })
	}
	for i := 0; i < 2; i++ {
		if err := testwait.Recv(t, done, "the pipelined commit was told"); err != nil {
			t.Fatalf("commit: %v", err)
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
	defer st.Close()
	err = st.View(ctx, func(r store.Reader) error {
		v, err := r.Get([]byte("k"))
		if err != nil || string(v) != "two" {
			t.Errorf("k = %q, %v; want the later commit's value", v, err)
		}
		for _, k := range []string{"k-one", "k-two"} {
			if _, err := r.Get([]byte(k)); err != nil {
				t.Errorf("%s: %v", k, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
