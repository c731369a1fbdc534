package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
)

type gadget struct {
	ID    string `json:"id"`
	Code  string `json:"code"`
	Color string `json:"color"`
}

var gadgets = &store.Collection[gadget]{
	Name: "gadget",
	ID:   func(g *gadget) string { return g.ID },
	Indexes: []store.Index[gadget]{
		{Name: "code", Unique: true, Values: func(g *gadget) [][]any { return [][]any{{g.Code}} }},
		{Name: "color", Values: func(g *gadget) [][]any { return [][]any{{g.Color}} }},
	},
}

// blindTxn is a transaction that may not read.
type blindTxn struct{ store.Txn }

func (blindTxn) Get([]byte) ([]byte, error) { return nil, errors.New("PutNew read a key") }

// TestPutNew: PutNew writes what PutOver writes for a new record (the
// record and every index entry, the unique one holding the id), without
// reading, and the record is then found through its indexes.
func TestPutNew(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	g := &gadget{ID: "g1", Code: "A-1", Color: "red"}
	raw, _ := json.Marshal(g)
	if err := st.Update(ctx, func(tx store.Txn) error { return gadgets.PutNew(blindTxn{tx}, "t_new", g, raw) }); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(ctx, func(tx store.Txn) error { return gadgets.PutOver(tx, "t_over", nil, g, raw) }); err != nil {
		t.Fatal(err)
	}
	entries := func(tenant string) map[string]string {
		out := map[string]string{}
		_ = st.View(ctx, func(r store.Reader) error {
			prefix := store.Key(tenant)
			return r.Scan(store.ScanOptions{Prefix: prefix}, func(k, v []byte) error {
				out[strings.TrimPrefix(string(k), string(prefix))] = string(v)
				return nil
			})
		})
		return out
	}
	if diff := cmp.Diff(entries("t_over"), entries("t_new")); diff != "" || len(entries("t_new")) != 3 {
		t.Errorf("PutNew's entries (-PutOver's +PutNew's):\n%s", diff)
	}
	err = st.View(ctx, func(r store.Reader) error {
		got, err := gadgets.Lookup(r, "t_new", "code", "A-1")
		if err != nil || got.ID != "g1" {
			return errors.Join(err, errors.New("not found by its unique code"))
		}
		n, err := gadgets.CountBy(r, "t_new", "color", "red")
		if err != nil || n != 1 {
			return errors.Join(err, errors.New("not counted by its color"))
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
