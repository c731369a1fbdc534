package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// exerciseScan checks Scan.
func exerciseScan(t *testing.T, open opener) {
	// scanKeys are stored, in order, with value "v:"+key. They crowd the
	// edges of their prefixes: keys equal to a prefix, keys equal to
	// store.PrefixEnd of a prefix ("b" for "a" and for "a\xff"), 0x00 and
	// 0xff bytes, shorter and longer neighbours.
	scanKeys := []string{
		"\x00",
		"a", "a\x00", "a\x01", "a\xff", "a\xff\x00", "a\xff\xff",
		"b", "b\x00", "ba",
		"\xfe\xff",
		"\xff", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff",
	}
	s := open(t)
	kvs := make([]string, 0, 2*len(scanKeys))
	for _, k := range scanKeys {
		kvs = append(kvs, k, "v:"+k)
	}
	set(t, s, kvs...)

	// rev returns keys in reverse order.
	rev := func(keys ...string) []string {
		out := slices.Clone(keys)
		slices.Reverse(out)
		return out
	}
	prefixA := []string{"a", "a\x00", "a\x01", "a\xff", "a\xff\x00", "a\xff\xff"}
	prefixFF := []string{"\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}

	for _, test := range []struct {
		name    string
		prefix  string
		after   string
		reverse bool
		want    []string
	}{
		{name: "all", want: scanKeys},
		{name: "all reverse", reverse: true, want: rev(scanKeys...)},
		{name: "prefix", prefix: "a", want: prefixA},
		// The key "b" is PrefixEnd("a"): a reverse scan that seeks to it
		// must step over it, not stop.
		{name: "prefix reverse, PrefixEnd present", prefix: "a", reverse: true, want: rev(prefixA...)},
		{name: "prefix ending in 0xff", prefix: "a\xff", want: []string{"a\xff", "a\xff\x00", "a\xff\xff"}},
		{name: "prefix ending in 0xff reverse", prefix: "a\xff", reverse: true, want: []string{"a\xff\xff", "a\xff\x00", "a\xff"}},
		{name: "prefix of 0xff only", prefix: "\xff\xff", want: prefixFF},
		// PrefixEnd("\xff\xff") is nil: the reverse scan starts at the end.
		{name: "prefix of 0xff only reverse", prefix: "\xff\xff", reverse: true, want: rev(prefixFF...)},
		{name: "prefix with longer neighbour", prefix: "b", want: []string{"b", "b\x00", "ba"}},
		{name: "prefix with longer neighbour reverse", prefix: "b", reverse: true, want: []string{"ba", "b\x00", "b"}},
		{name: "prefix of one zero byte", prefix: "\x00", want: []string{"\x00"}},
		{name: "prefix of one zero byte reverse", prefix: "\x00", reverse: true, want: []string{"\x00"}},
		{name: "empty prefix range", prefix: "c"},
		{name: "empty prefix range reverse", prefix: "c", reverse: true},
		{name: "empty range above everything", prefix: "\xff\xff\xff\xff"},
		{name: "empty range above everything reverse", prefix: "\xff\xff\xff\xff", reverse: true},
		{name: "after a key", prefix: "a", after: "a\x01", want: []string{"a\xff", "a\xff\x00", "a\xff\xff"}},
		{name: "after a key reverse", prefix: "a", after: "a\x01", reverse: true, want: []string{"a\x00", "a"}},
		{name: "after a missing key", prefix: "a", after: "a\x02", want: []string{"a\xff", "a\xff\x00", "a\xff\xff"}},
		{name: "after a missing key reverse", prefix: "a", after: "a\x02", reverse: true, want: []string{"a\x01", "a\x00", "a"}},
		{name: "after the prefix itself", prefix: "a", after: "a", want: prefixA[1:]},
		{name: "after the prefix itself reverse", prefix: "a", after: "a", reverse: true},
		{name: "after the last key", prefix: "a", after: "a\xff\xff"},
		{name: "after the last key reverse", prefix: "a", after: "a\xff\xff", reverse: true, want: rev(prefixA[:5]...)},
		{name: "after beyond the last key", prefix: "a", after: "a\xff\xff\xff"},
		{name: "after beyond the last key reverse", prefix: "a", after: "a\xff\xff\xff", reverse: true, want: rev(prefixA...)},
		{name: "after in an 0xff prefix reverse", prefix: "\xff\xff", after: "\xff\xff\xff", reverse: true, want: []string{"\xff\xff\x00", "\xff\xff"}},
		{name: "after without prefix", after: "b", want: []string{"b\x00", "ba", "\xfe\xff", "\xff", "\xff\xff", "\xff\xff\x00", "\xff\xff\xff"}},
		{name: "after without prefix reverse", after: "b", reverse: true, want: rev(scanKeys[:7]...)},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			opts := store.ScanOptions{Reverse: test.reverse}
			if test.prefix != "" {
				opts.Prefix = []byte(test.prefix)
			}
			if test.after != "" {
				opts.After = []byte(test.after)
			}
			want := make([]kv, len(test.want))
			for i, k := range test.want {
				want[i] = kv{Key: k, Value: "v:" + k}
			}
			if diff := cmp.Diff(want, scan(t, s, opts), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Scan prefix %q after %q reverse %v (-want +got):\n%s", opts.Prefix, opts.After, opts.Reverse, diff)
			}
			opts.KeysOnly = true
			if diff := cmp.Diff(test.want, keys(scan(t, s, opts)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("KeysOnly Scan prefix %q after %q reverse %v (-want +got):\n%s", opts.Prefix, opts.After, opts.Reverse, diff)
			}
		})
	}

	// Keys written by many transactions have many versions in a versioned
	// store (Badger) until compaction drops them: a scan must give each
	// key once, with its newest value, and skip keys deleted since.
	t.Run("RewrittenKeys", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for i := range 5 {
			set(t, s, "k1", fmt.Sprint("k1:", i), "k1\x00", fmt.Sprint("k1\x00:", i), "k4", fmt.Sprint("k4:", i))
		}
		set(t, s, "k2", "k2:0", "k3", "k3:0")
		update(t, s, func(tx store.Txn) error {
			if err := tx.Delete([]byte("k2")); err != nil {
				return err
			}
			return tx.Delete([]byte("k3"))
		})
		set(t, s, "k3", "k3:1")
		want := []kv{{"k1", "k1:4"}, {"k1\x00", "k1\x00:4"}, {"k3", "k3:1"}, {"k4", "k4:4"}}
		for _, test := range []struct {
			name string
			opts store.ScanOptions
			want []kv
		}{
			{name: "forward", opts: store.ScanOptions{Prefix: []byte("k")}, want: want},
			{name: "reverse", opts: store.ScanOptions{Prefix: []byte("k"), Reverse: true}, want: []kv{want[3], want[2], want[1], want[0]}},
			{name: "after a rewritten key", opts: store.ScanOptions{Prefix: []byte("k"), After: []byte("k1")}, want: want[1:]},
			{name: "after a deleted key", opts: store.ScanOptions{Prefix: []byte("k"), After: []byte("k2")}, want: want[2:]},
			{name: "after a deleted key reverse", opts: store.ScanOptions{Prefix: []byte("k"), After: []byte("k2"), Reverse: true}, want: []kv{want[1], want[0]}},
		} {
			for _, rewritten := range []bool{false, true} {
				test.opts.Rewritten = rewritten
				if diff := cmp.Diff(test.want, scan(t, s, test.opts), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("Scan %s, Rewritten %v (-want +got):\n%s", test.name, rewritten, diff)
				}
			}
		}
		update(t, s, func(tx store.Txn) error {
			// k3 was the last key committed: its version and the
			// transaction's own write of it may carry the same version.
			for _, err := range []error{tx.Set([]byte("k1"), []byte("k1:5")), tx.Delete([]byte("k1\x00")), tx.Set([]byte("k2"), []byte("k2:1")), tx.Set([]byte("k3"), []byte("k3:2"))} {
				if err != nil {
					return err
				}
			}
			got, err := scanAll(tx, store.ScanOptions{Prefix: []byte("k"), Reverse: true})
			if err != nil {
				return err
			}
			if diff := cmp.Diff([]kv{{"k4", "k4:4"}, {"k3", "k3:2"}, {"k2", "k2:1"}, {"k1", "k1:5"}}, got); diff != "" {
				t.Errorf("reverse Scan inside a transaction rewriting keys (-want +got):\n%s", diff)
			}
			for _, rewritten := range []bool{false, true} {
				got, err := scanAll(tx, store.ScanOptions{Prefix: []byte("k"), Rewritten: rewritten})
				if err != nil {
					return err
				}
				wantTx := []kv{{"k1", "k1:5"}, {"k2", "k2:1"}, {"k3", "k3:2"}, {"k4", "k4:4"}}
				if diff := cmp.Diff(wantTx, got); diff != "" {
					t.Errorf("Scan inside a transaction rewriting keys, Rewritten %v (-want +got):\n%s", rewritten, diff)
				}
			}
			return nil
		})
	})

	t.Run("KeysOnlyPassesNilValues", func(t *testing.T) {
		t.Parallel()
		view(t, s, func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: []byte("a"), KeysOnly: true}, func(key, value []byte) error {
				if value != nil {
					t.Errorf("KeysOnly scan passed value %q for %q, want nil", value, key)
				}
				return nil
			})
		})
	})

	t.Run("ErrStopEndsEarly", func(t *testing.T) {
		t.Parallel()
		for _, reverse := range []bool{false, true} {
			var got []string
			view(t, s, func(r store.Reader) error {
				return r.Scan(store.ScanOptions{Prefix: []byte("a"), Reverse: reverse}, func(key, _ []byte) error {
					got = append(got, string(key))
					if len(got) == 2 {
						return store.ErrStop
					}
					return nil
				})
			})
			want := prefixA[:2]
			if reverse {
				want = rev(prefixA...)[:2]
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reverse %v: keys before ErrStop (-want +got):\n%s", reverse, diff)
			}
		}
	})

	t.Run("ErrorFromFn", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("storetest: boom")
		calls := 0
		err := s.View(t.Context(), func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: []byte("a")}, func(_, _ []byte) error {
				calls++
				return errors.Wrap(boom, "wrapped")
			})
		})
		if !errors.Is(err, boom) || calls != 1 {
			t.Errorf("Scan with fn failing: err %v after %d calls, want the error of fn after 1 call", err, calls)
		}
	})

	t.Run("GetInsideScan", func(t *testing.T) {
		t.Parallel()
		var got []kv
		view(t, s, func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: []byte("b"), Reverse: true, KeysOnly: true}, func(key, _ []byte) error {
				v, err := r.Get(key)
				if err != nil {
					return err
				}
				got = append(got, kv{string(key), string(v)})
				return nil
			})
		})
		want := []kv{{"ba", "v:ba"}, {"b\x00", "v:b\x00"}, {"b", "v:b"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Get inside a scan (-want +got):\n%s", diff)
		}
	})

	t.Run("NestedScans", func(t *testing.T) {
		t.Parallel()
		var got []string
		view(t, s, func(r store.Reader) error {
			return r.Scan(store.ScanOptions{Prefix: []byte("b")}, func(outer, _ []byte) error {
				return r.Scan(store.ScanOptions{Prefix: []byte("\xff\xff"), Reverse: true}, func(inner, _ []byte) error {
					got = append(got, string(outer)+"|"+string(inner))
					return nil
				})
			})
		})
		var want []string
		for _, o := range []string{"b", "b\x00", "ba"} {
			for _, i := range rev(prefixFF...) {
				want = append(want, o+"|"+i)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("nested scans (-want +got):\n%s", diff)
		}
	})
}
