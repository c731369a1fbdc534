package store_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
)

// note is a record whose stored value leaves its id to its key.
type note struct{ ID, Text string }

var notes = &store.Collection[note]{
	Name: "note",
	ID:   func(n *note) string { return n.ID },
	Indexes: []store.Index[note]{
		{Name: "text", Values: func(n *note) [][]any { return [][]any{{n.Text}} }},
	},
	DecodeWithID: func(id string, raw []byte) (*note, error) { return &note{ID: id, Text: string(raw)}, nil },
}

// TestCollectionDecodeWithID checks that every read of a collection with
// DecodeWithID gives it the id of the record's key: by id, in a list,
// through an index, and in a range, with ids that hold a NUL byte (escaped
// in keys) and that are prefixes of each other.
func TestCollectionDecodeWithID(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	stored := []note{{"a", "x"}, {"a\x00b", "x"}, {"ab", "y"}, {"b", "x"}}
	err = st.Update(ctx, func(tx store.Txn) error {
		for i := range stored {
			if err := notes.PutRaw(tx, "t1", &stored[i], []byte(stored[i].Text)); err != nil {
				return err
			}
		}
		// Another tenant's record between the ids: never read.
		return notes.PutRaw(tx, "t0", &note{"a\x00a", "z"}, []byte("z"))
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ns []*note) []note {
		out := make([]note, len(ns))
		for i, n := range ns {
			out[i] = *n
		}
		return out
	}
	err = st.View(ctx, func(r store.Reader) error {
		for _, want := range stored {
			got, err := notes.Get(r, "t1", want.ID)
			if err != nil {
				return err
			}
			if *got != want {
				t.Errorf("Get(%q) = %q, want %q", want.ID, *got, want)
			}
		}
		list, _, err := notes.List(r, "t1", store.Page{Forward: true})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(stored, ids(list)); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
		byText, _, err := notes.ListBy(r, "t1", "text", []any{"x"}, store.Page{Forward: true})
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]note{stored[0], stored[1], stored[3]}, ids(byText)); diff != "" {
			t.Errorf("ListBy (-want +got):\n%s", diff)
		}
		inRange, err := notes.ListRange(r, "t1", "a\x00b", "b", 10, 0)
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]note{stored[3], stored[2], stored[1]}, ids(inRange)); diff != "" {
			t.Errorf("ListRange (-want +got):\n%s", diff)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
