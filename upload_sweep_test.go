package bas_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/google/go-cmp/cmp"
)

// TestOpenSweepsUploadCutByCrash: a large upload writes its file's chunks,
// after a pending mark, before the commit that records its document. A
// server killed between the two leaves them; the next Open removes them
// at once, not only at an Open an hour or more after the crash. A
// Cluster's node leaves the last hour's, which may be another node's
// upload under way, and removes older ones.
func TestOpenSweepsUploadCutByCrash(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name    string
		cluster bool
		after   time.Duration // from the crash to the next Open
		want    map[string]int
	}{
		{"a minute later", false, time.Minute, map[string]int{}},
		{"a node a minute later", true, time.Minute, map[string]int{"pending marks": 1, "chunks": 3}},
		{"a node over an hour later", true, time.Hour + time.Second, map[string]int{}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			clk := bas.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
			open := func() *bas.Workspace {
				t.Helper()
				st, err := badgerstore.Open(badgerstore.Options{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				ws, err := bas.Open(ctx, bas.Options{Store: st, Clock: clk, Cluster: test.cluster})
				if err != nil {
					t.Fatal(err)
				}
				return ws
			}
			ws := open()
			// The keys the docs app writes for an upload under way (its
			// layout: internal/apps/docs/files.go).
			mark := store.Key(store.System, "docfile-pending", "acme", "fil_cut")
			file := store.Key("acme", "docfile", "fil_cut")
			if err := ws.Store().Update(ctx, func(tx store.Txn) error {
				if err := tx.Set(mark, []byte(`{"at": "`+clk.Now().Format(time.RFC3339Nano)+`"}`)); err != nil {
					return err
				}
				for n := range 3 {
					if err := tx.Set(store.Key("acme", "docfile", "fil_cut", n), bytes.Repeat([]byte("x"), 1024)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := ws.Close(); err != nil {
				t.Fatal(err)
			}

			clk.Advance(test.after)
			ws = open()
			defer ws.Close()
			left := map[string]int{}
			if err := ws.Store().View(ctx, func(r store.Reader) error {
				for name, prefix := range map[string][]byte{"pending marks": mark, "chunks": file} {
					if err := r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(_, _ []byte) error {
						left[name]++
						return nil
					}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, left); diff != "" {
				t.Errorf("left after reopening (-want +got):\n%s", diff)
			}
		})
	}
}
