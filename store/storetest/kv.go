package storetest

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// largeValue is the size of the large values every store must take: just
// under 1 MiB. (In memory Badger keeps values below its 1 MiB value
// threshold; ExerciseReopen writes larger ones on disk.)
const largeValue = 1<<20 - 1

// exerciseKV checks Get, Set and Delete.
func exerciseKV(t *testing.T, open opener) {
	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "present", "v")
		err := s.View(t.Context(), func(r store.Reader) error {
			_, err := r.Get([]byte("absent"))
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("View Get of a missing key: got %v, want an error marked store.ErrNotFound", err)
		}
		err = s.Update(t.Context(), func(tx store.Txn) error {
			_, err := tx.Get([]byte("absent"))
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Update Get of a missing key: got %v, want an error marked store.ErrNotFound", err)
		}
	})

	t.Run("SetGetDelete", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		type step struct {
			op, key, value string // op is set, delete or get; get wants value, "" with missing
			missing        bool
		}
		for i, st := range []step{
			{op: "get", key: "k", missing: true},
			{op: "set", key: "k", value: "one"},
			{op: "get", key: "k", value: "one"},
			{op: "set", key: "k", value: "two"},
			{op: "get", key: "k", value: "two"},
			{op: "set", key: "k2", value: "other"},
			{op: "delete", key: "k"},
			{op: "get", key: "k", missing: true},
			{op: "get", key: "k2", value: "other"},
			{op: "delete", key: "never-written"},
			{op: "delete", key: "k"},
			{op: "set", key: "k", value: "three"},
			{op: "get", key: "k", value: "three"},
		} {
			switch st.op {
			case "set":
				set(t, s, st.key, st.value)
			case "delete":
				update(t, s, func(tx store.Txn) error { return tx.Delete([]byte(st.key)) })
			case "get":
				got, ok := get(t, s, st.key)
				if ok == st.missing || got != st.value {
					t.Fatalf("step %d: Get %q = %q, present %v; want %q, present %v", i, st.key, got, ok, st.value, !st.missing)
				}
			}
		}
	})

	t.Run("BinaryKeysAndValues", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		pairs := []kv{
			{"\x00", "zero"},
			{"\x00\x00", "\x00\x00\x00"},
			{"\xff", "\xff\xfe"},
			{"\xff\xff\xff", "ff"},
			{"k\x00\xffk", "mixed"},
			{strings.Repeat("long", 250), strings.Repeat("\x00\xff", 500)},
			{string(store.Key("tenant", "r", "kind", "id", 42)), "encoded"},
		}
		update(t, s, func(tx store.Txn) error {
			for _, p := range pairs {
				if err := tx.Set([]byte(p.Key), []byte(p.Value)); err != nil {
					return err
				}
			}
			return nil
		})
		for _, p := range pairs {
			got, ok := get(t, s, p.Key)
			if !ok || got != p.Value {
				t.Errorf("Get %q = %q, present %v; want %q", p.Key, got, ok, p.Value)
			}
		}
	})

	t.Run("EmptyValue", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "empty", "")
		got, ok := get(t, s, "empty")
		if !ok || got != "" {
			t.Errorf("Get of an empty value = %q, present %v; want \"\", present", got, ok)
		}
		if diff := cmp.Diff([]kv{{"empty", ""}}, scan(t, s, store.ScanOptions{})); diff != "" {
			t.Errorf("Scan (-want +got):\n%s", diff)
		}
	})

	t.Run("GetReturnsCopy", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		set(t, s, "k", "original")
		for _, name := range []string{"View", "Update"} {
			read := func(fn func(store.Reader) error) error {
				if name == "View" {
					return s.View(t.Context(), fn)
				}
				return s.Update(t.Context(), func(tx store.Txn) error { return fn(tx) })
			}
			err := read(func(r store.Reader) error {
				v, err := r.Get([]byte("k"))
				if err != nil {
					return err
				}
				copy(v, "XXXXXXXX")
				again, err := r.Get([]byte("k"))
				if err != nil {
					return err
				}
				if string(again) != "original" {
					t.Errorf("%s: after changing the slice Get returned, Get = %q, want \"original\"", name, again)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if got, _ := get(t, s, "k"); got != "original" {
			t.Errorf("stored value after changing Get's slice = %q, want \"original\"", got)
		}
	})

	t.Run("LargeValues", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		rng := rand.New(rand.NewPCG(1, 2))
		big := func() []byte {
			b := make([]byte, largeValue)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
		want := map[string][]byte{}
		for _, k := range []string{"big/a", "big/b", "big/c"} {
			v := big()
			want[k] = v
			update(t, s, func(tx store.Txn) error { return tx.Set([]byte(k), v) })
		}
		set(t, s, "big/small", "small")
		want["big/small"] = []byte("small")
		// Overwrite one and delete another.
		want["big/b"] = big()
		update(t, s, func(tx store.Txn) error { return tx.Set([]byte("big/b"), want["big/b"]) })
		delete(want, "big/c")
		update(t, s, func(tx store.Txn) error { return tx.Delete([]byte("big/c")) })

		view(t, s, func(r store.Reader) error {
			for k, w := range want {
				got, err := r.Get([]byte(k))
				if err != nil {
					return err
				}
				if !bytes.Equal(got, w) {
					t.Errorf("Get %q: %d bytes differ from the %d written", k, len(got), len(w))
				}
			}
			seen := 0
			err := r.Scan(store.ScanOptions{Prefix: []byte("big/")}, func(key, value []byte) error {
				seen++
				if w, ok := want[string(key)]; !ok || !bytes.Equal(value, w) {
					t.Errorf("Scan %q: %d bytes, want %d bytes equal to those written (known key %v)", key, len(value), len(w), ok)
				}
				return nil
			})
			if seen != len(want) {
				t.Errorf("Scan saw %d keys, want %d", seen, len(want))
			}
			return err
		})
	})
}
