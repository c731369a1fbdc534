package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// exerciseTxn checks commit, rollback, read-your-writes and snapshots.
func exerciseTxn(t *testing.T, open opener) {
	t.Run("UpdateCommits", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "k1", "v1", "k2", "v2", "k3", "v3")
		update(t, s, func(tx store.Txn) error {
			if err := tx.Delete([]byte("k2")); err != nil {
				return err
			}
			return tx.Set([]byte("k3"), []byte("v3b"))
		})
		want := []kv{{"k1", "v1"}, {"k3", "v3b"}}
		if diff := cmp.Diff(want, scan(t, s, store.ScanOptions{})); diff != "" {
			t.Errorf("after two commits (-want +got):\n%s", diff)
		}
	})

	t.Run("ErrorRollsBack", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "keep", "old", "gone", "still here")
		boom := errors.New("storetest: boom")
		calls := 0
		err := s.Update(t.Context(), func(tx store.Txn) error {
			calls++
			for _, op := range []error{
				tx.Set([]byte("keep"), []byte("new")),
				tx.Set([]byte("added"), []byte("x")),
				tx.Delete([]byte("gone")),
			} {
				if op != nil {
					return op
				}
			}
			return errors.Wrap(boom, "fn failed")
		})
		if !errors.Is(err, boom) {
			t.Errorf("Update returned %v, want the error of fn", err)
		}
		if calls != 1 {
			t.Errorf("fn ran %d times, want 1", calls)
		}
		want := []kv{{"gone", "still here"}, {"keep", "old"}}
		if diff := cmp.Diff(want, scan(t, s, store.ScanOptions{})); diff != "" {
			t.Errorf("after a failed Update (-want +got):\n%s", diff)
		}
	})

	t.Run("ErrorFromFnIsNotRetried", func(t *testing.T) {
		t.Parallel()
		// A conflict fn reports itself (a unique value taken) is an answer,
		// not an optimistic conflict: fn must run once, not be retried.
		s := open(t)
		calls := 0
		err := s.Update(t.Context(), func(tx store.Txn) error {
			calls++
			if err := tx.Set([]byte("k"), []byte("v")); err != nil {
				return err
			}
			return errs.Conflictf("name already taken")
		})
		if !errors.Is(err, errs.Conflict) || errs.PublicMessage(err) != "name already taken" {
			t.Errorf("Update returned %v, want fn's conflict", err)
		}
		if calls != 1 {
			t.Errorf("fn ran %d times, want 1", calls)
		}
		if _, ok := get(t, s, "k"); ok {
			t.Errorf("the write of a failed Update was committed")
		}
	})

	t.Run("ReadYourWrites", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "a", "1", "c", "3", "e", "5")
		want := []kv{{"a", "1b"}, {"b", "2"}, {"d", "4"}, {"e", "5"}}
		wantRev := []kv{{"e", "5"}, {"d", "4"}, {"b", "2"}, {"a", "1b"}}
		update(t, s, func(tx store.Txn) error {
			for _, err := range []error{
				tx.Set([]byte("b"), []byte("2")),
				tx.Delete([]byte("c")),
				tx.Set([]byte("d"), []byte("4")),
				tx.Set([]byte("a"), []byte("1b")),
			} {
				if err != nil {
					return err
				}
			}
			if v, err := tx.Get([]byte("b")); err != nil || string(v) != "2" {
				t.Errorf("Get of a key set in this transaction = %q, %v; want \"2\"", v, err)
			}
			if _, err := tx.Get([]byte("c")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get of a key deleted in this transaction: %v, want store.ErrNotFound", err)
			}
			got, err := scanAll(tx, store.ScanOptions{})
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Scan inside the transaction (-want +got):\n%s", diff)
			}
			got, err = scanAll(tx, store.ScanOptions{Reverse: true})
			if err != nil {
				return err
			}
			if diff := cmp.Diff(wantRev, got); diff != "" {
				t.Errorf("reverse Scan inside the transaction (-want +got):\n%s", diff)
			}
			got, err = scanAll(tx, store.ScanOptions{After: []byte("a"), Reverse: false})
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want[1:], got); diff != "" {
				t.Errorf("Scan after \"a\" inside the transaction (-want +got):\n%s", diff)
			}
			return nil
		})
		if diff := cmp.Diff(want, scan(t, s, store.ScanOptions{})); diff != "" {
			t.Errorf("after commit (-want +got):\n%s", diff)
		}
	})

	t.Run("ViewSeesASnapshot", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "p/1", "old", "p/3", "old")
		read := make(chan struct{})
		committed := make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(committed) }) }
		defer release() // also when the test fails before the commit
		viewDone := make(chan error, 1)
		go func() {
			viewDone <- s.View(t.Context(), func(r store.Reader) error {
				before, err := scanAll(r, store.ScanOptions{Prefix: []byte("p/")})
				if err != nil {
					return err
				}
				close(read)
				<-committed
				after, err := scanAll(r, store.ScanOptions{Prefix: []byte("p/")})
				if err != nil {
					return err
				}
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("a View saw a commit that landed after it began (-before +after):\n%s", diff)
				}
				for _, k := range []string{"p/1", "p/2"} {
					v, err := r.Get([]byte(k))
					switch {
					case k == "p/1" && (err != nil || string(v) != "old"):
						t.Errorf("Get p/1 in the older snapshot = %q, %v; want \"old\"", v, err)
					case k == "p/2" && !errors.Is(err, store.ErrNotFound):
						t.Errorf("Get p/2 in the older snapshot = %q, %v; want store.ErrNotFound", v, err)
					}
				}
				return nil
			})
		}()
		select {
		case <-read:
		case err := <-viewDone:
			t.Fatalf("View ended before the commit: %v", err)
		}
		update(t, s, func(tx store.Txn) error {
			for _, err := range []error{
				tx.Set([]byte("p/1"), []byte("new")),
				tx.Set([]byte("p/2"), []byte("new")),
				tx.Delete([]byte("p/3")),
			} {
				if err != nil {
					return err
				}
			}
			return nil
		})
		release()
		if err := <-viewDone; err != nil {
			t.Fatalf("View: %v", err)
		}
		want := []kv{{"p/1", "new"}, {"p/2", "new"}}
		if diff := cmp.Diff(want, scan(t, s, store.ScanOptions{Prefix: []byte("p/")})); diff != "" {
			t.Errorf("a new View (-want +got):\n%s", diff)
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := canceled(t)
		ran := false
		err := s.Update(ctx, func(tx store.Txn) error {
			ran = true
			return tx.Set([]byte("k"), []byte("v"))
		})
		if !errors.Is(err, context.Canceled) || ran {
			t.Errorf("Update with a cancelled context: %v, fn ran %v; want context.Canceled without running fn", err, ran)
		}
		err = s.View(ctx, func(store.Reader) error { ran = true; return nil })
		if !errors.Is(err, context.Canceled) || ran {
			t.Errorf("View with a cancelled context: %v, fn ran %v; want context.Canceled without running fn", err, ran)
		}
		if _, ok := get(t, s, "k"); ok {
			t.Errorf("an Update with a cancelled context wrote")
		}
	})
}
