package store_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// TestHooked: an Update given a context from AlsoInUpdate also runs the
// hook in its transaction, only when its own function succeeds; other
// Updates do not; a transaction knows its Update's context; the store
// keeps its Pipeliner ability.
func TestHooked(t *testing.T) {
	t.Parallel()
	bs, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	st := store.Hooked(bs)
	if _, ok := st.(store.Pipeliner); !ok {
		t.Error("the hooked store lost Begin")
	}
	if store.Hooked(st) != st {
		t.Error("hooking twice wrapped twice")
	}
	mark := []byte("mark")
	ctx := store.AlsoInUpdate(context.Background(), func(tx store.Txn) error { return tx.Set(mark, []byte("x")) })
	has := func() bool {
		found := false
		_ = st.View(context.Background(), func(r store.Reader) error {
			_, err := r.Get(mark)
			found = err == nil
			return nil
		})
		return found
	}
	if err := st.Update(context.Background(), func(tx store.Txn) error { return tx.Set([]byte("a"), nil) }); err != nil || has() {
		t.Fatalf("an Update without the hook wrote the mark (%v)", err)
	}
	failed := errors.New("refused")
	if err := st.Update(ctx, func(store.Txn) error { return failed }); !errors.Is(err, failed) || has() {
		t.Fatalf("a failed Update wrote the mark (%v)", err)
	}
	if err := st.Update(ctx, func(tx store.Txn) error { return tx.Set([]byte("b"), nil) }); err != nil || !has() {
		t.Fatalf("the hooked Update did not write the mark (%v)", err)
	}
	type key struct{}
	var seen any
	vctx := context.WithValue(context.Background(), key{}, "call")
	if err := st.Update(vctx, func(tx store.Txn) error {
		seen = store.TxnContext(tx).Value(key{})
		return nil
	}); err != nil || seen != "call" {
		t.Errorf("TxnContext gave %v (%v), want the Update's context", seen, err)
	}
}
