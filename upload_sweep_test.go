package bas_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/store"
)

// TestOpenSweepsUploadCutByCrash: a large upload writes its file's chunks,
// after a pending mark, before the commit that records its document. A
// server killed between the two leaves them; the next Open removes them
// at once, not only at an Open an hour or more after the crash.
func TestOpenSweepsUploadCutByCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := bas.NewFakeClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	ws, err := bas.Open(ctx, bas.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// The keys the docs app writes for an upload under way (its layout:
	// internal/apps/docs/files.go).
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

	clk.Advance(time.Minute) // restarted a minute after the crash
	ws, err = bas.Open(ctx, bas.Options{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
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
	if len(left) > 0 {
		t.Errorf("left after reopening: %v", left)
	}
}
