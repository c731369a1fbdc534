package storetest

import (
	"fmt"
	"testing"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// exerciseGetSorted checks store.GetSorted, through the store's own
// SortedGetter when it has one: keys read one after another, with gaps
// wider than a store steps over, missing, deleted and rewritten keys, keys
// under different prefixes, and the errors.
func exerciseGetSorted(t *testing.T, open opener) {
	s := open(t)
	var kvs []string
	for i := range 40 {
		k := fmt.Sprintf("k%03d", i)
		kvs = append(kvs, k, "v1:"+k)
	}
	set(t, s, kvs...)
	set(t, s, "k010", "v2:k010", "other", "v:other") // a newer version
	set(t, s, "k010", "v3:k010")
	update(t, s, func(tx store.Txn) error { return tx.Delete([]byte("k020")) })

	// want is what GetSorted should report for a key: its value, or "-".
	want := func(k string) string {
		switch {
		case k == "k010":
			return "v3:k010"
		case k == "k020":
			return "-"
		case k == "other":
			return "v:other"
		case len(k) == 4 && k[0] == 'k' && k < "k040":
			return "v1:" + k
		}
		return "-"
	}
	every := func(step int, extra ...string) []string {
		var out []string
		for i := 0; i < 40; i += step {
			out = append(out, fmt.Sprintf("k%03d", i))
		}
		return append(out, extra...)
	}
	for _, by := range []struct {
		name string
		wrap func(store.Reader) store.Reader
	}{
		{name: "store's own", wrap: func(r store.Reader) store.Reader { return r }},
		{name: "a Get each", wrap: func(r store.Reader) store.Reader { return plainReader{r} }},
	} {
		for _, test := range []struct {
			name string
			keys []string
		}{
			{name: "none"},
			{name: "one", keys: []string{"k007"}},
			{name: "one missing", keys: []string{"k007x"}},
			{name: "every key", keys: every(1)},
			{name: "every third", keys: every(3)},
			{name: "every tenth", keys: every(10)},
			{name: "clusters far apart", keys: []string{"k001", "k002", "k003", "k030", "k031", "k032"}},
			// Two keys in a row each past more keys than a store may step
			// over (k020 is deleted): badgerstore reads the rest with a Get each.
			{name: "far apart twice in a row", keys: []string{"k001", "k019", "k038", "k039"}},
			{name: "missing between, before and after", keys: []string{"a", "k000", "k000x", "k001", "k005x", "k006", "k039", "k039x", "z"}},
			{name: "deleted and rewritten", keys: []string{"k009", "k010", "k011", "k019", "k020", "k021"}},
			{name: "across prefixes", keys: []string{"k001", "k038", "o", "other", "p"}},
			{name: "all missing", keys: []string{"a", "b", "c"}},
		} {
			t.Run(by.name+"/"+test.name, func(t *testing.T) {
				var wantGot, got []string
				keys := make([][]byte, len(test.keys))
				for i, k := range test.keys {
					keys[i] = []byte(k)
					wantGot = append(wantGot, fmt.Sprintf("%d %s=%s", i, k, want(k)))
				}
				var kept [][]byte
				view(t, s, func(r store.Reader) error {
					return store.GetSorted(by.wrap(r), keys, func(i int, v []byte, found bool) error {
						val := "-"
						if found {
							val = string(v)
							kept = append(kept, v)
						} else if v != nil {
							t.Errorf("key %s missing with value %q", keys[i], v)
						}
						got = append(got, fmt.Sprintf("%d %s=%s", i, keys[i], val))
						return nil
					})
				})
				if diff := cmp.Diff(wantGot, got); diff != "" {
					t.Errorf("GetSorted (-want +got):\n%s", diff)
				}
				// The values are fn's to keep: none shares memory with another
				// or with the store.
				for i := range kept {
					for j := range kept[i] {
						kept[i][j] = byte('a' + i%26)
					}
				}
				for i := range kept {
					for j := range kept[i] {
						if kept[i][j] != byte('a'+i%26) {
							t.Fatalf("value %d shares memory with a later one: %q", i, kept[i])
						}
					}
				}
				view(t, s, func(r store.Reader) error {
					for _, k := range test.keys {
						if w := want(k); w != "-" {
							if v, err := r.Get([]byte(k)); err != nil || string(v) != w {
								t.Errorf("after changing the values kept, %s reads %q, %v; want %q", k, v, err, w)
							}
						}
					}
					return nil
				})
			})
		}
	}

	t.Run("errors", func(t *testing.T) {
		for _, keys := range [][]string{{"k002", "k001"}, {"k001", "k001"}, {"k001", "k003", "k002"}} {
			bs := make([][]byte, len(keys))
			for i, k := range keys {
				bs[i] = []byte(k)
			}
			calls := 0
			err := s.View(t.Context(), func(r store.Reader) error {
				return store.GetSorted(r, bs, func(int, []byte, bool) error { calls++; return nil })
			})
			if !errors.Is(err, store.ErrUnsortedKeys) || calls != 0 {
				t.Errorf("GetSorted %q: %v after %d calls, want ErrUnsortedKeys before any", keys, err, calls)
			}
		}
		stop := errors.New("stop")
		calls := 0
		err := s.View(t.Context(), func(r store.Reader) error {
			return store.GetSorted(r, [][]byte{[]byte("k001"), []byte("k002"), []byte("k003")}, func(int, []byte, bool) error {
				calls++
				return stop
			})
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("GetSorted with fn failing: %v after %d calls, want fn's error after 1", err, calls)
		}
	})
}

// plainReader hides a Reader's optional abilities (SortedGetter).
type plainReader struct{ r store.Reader }

func (p plainReader) Get(key []byte) ([]byte, error) { return p.r.Get(key) }

func (p plainReader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	return p.r.Scan(opts, fn)
}
