package store_test

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

func TestKeyRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC)
	for _, test := range []struct {
		name  string
		parts []any
		want  []any
	}{
		{"empty", nil, nil},
		{"strings", []any{"tenant", "r", "run", "run_01"}, []any{"tenant", "r", "run", "run_01"}},
		{"empty string", []any{"", "x", ""}, []any{"", "x", ""}},
		{"zero and 0xff bytes", []any{"a\x00b", "\x00", "\xff\x00\xff", "\x00\xff"}, []any{"a\x00b", "\x00", "\xff\x00\xff", "\x00\xff"}},
		{"bytes come back as strings", []any{[]byte("raw\x00")}, []any{"raw\x00"}},
		{"ints", []any{0, -1, 1, math.MinInt64, math.MaxInt64}, []any{int64(0), int64(-1), int64(1), int64(math.MinInt64), int64(math.MaxInt64)}},
		{"int64", []any{int64(-42)}, []any{int64(-42)}},
		{"time as unix nanoseconds", []any{at}, []any{at.UnixNano()}},
		{"mixed", []any{"t", 7, "id\x00", at}, []any{"t", int64(7), "id\x00", at.UnixNano()}},
		{"named string types are their strings", []any{keyStatus("done\x00"), keyStatus("")}, []any{"done\x00", ""}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got, err := store.DecodeKey(store.Key(test.parts...))
			if err != nil {
				t.Fatalf("DecodeKey: %v", err)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("DecodeKey(Key(%q)) (-want +got):\n%s", test.parts, diff)
			}
		})
	}
}

// keyStatus is a named string type, as a record's status is.
type keyStatus string

// TestKeyBoxesNoParts checks that a key of strings built at run time costs
// only its buffer: the parts do not escape, so boxing them allocates nothing.
func TestKeyBoxesNoParts(t *testing.T) {
	tenant, id, status := string([]byte("tenant")), string([]byte("run_01")), keyStatus([]byte("done"))
	var key []byte
	if got := testing.AllocsPerRun(100, func() { key = store.Key(tenant, "r", "run", id, status) }); got != 1 {
		t.Errorf("Key allocates %v times, want 1 (its buffer)", got)
	}
	if want := store.Key("tenant", "r", "run", "run_01", "done"); !bytes.Equal(key, want) {
		t.Errorf("Key = %q, want %q", key, want)
	}
}

func TestKeyOrder(t *testing.T) {
	t.Parallel()
	// Each list is in ascending order; so must their keys be, bytewise,
	// alone and followed by further parts.
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, test := range []struct {
		name   string
		values []any
	}{
		{"strings", []any{"", "\x00", "\x00\x00", "\x00\x01", "\x01", "a", "a\x00", "a\x00b", "a\x01", "ab", "abc", "b", "\xfe", "\xff", "\xff\xff"}},
		{"ints", []any{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 255, 256, 1 << 40, math.MaxInt64}},
		{"times", []any{at.Add(-time.Hour), at.Add(-time.Nanosecond), at, at.Add(time.Nanosecond), at.Add(time.Hour)}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			for _, suffix := range [][]any{nil, {"z"}, {""}, {int64(math.MinInt64)}} {
				keys := make([][]byte, len(test.values))
				for i, v := range test.values {
					keys[i] = store.Key(append([]any{"p", v}, suffix...)...)
				}
				if !slices.IsSortedFunc(keys, bytes.Compare) {
					t.Errorf("keys of ascending %s followed by %q are not ascending: %q", test.name, suffix, keys)
				}
			}
		})
	}
}

func TestKeyPrefixes(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		prefix, key []any
		want        bool
	}{
		{[]any{"acme"}, []any{"acme", "r", "run", "1"}, true},
		{[]any{"acme", "r"}, []any{"acme", "r"}, true},
		{[]any{"acme", 5}, []any{"acme", 5, "x"}, true},
		// A tenant's prefix does not cover tenants whose names extend it.
		{[]any{"acme"}, []any{"acme2", "r"}, false},
		{[]any{"acm"}, []any{"acme", "r"}, false},
		{[]any{"a"}, []any{"a\x01"}, false},
		{[]any{"a"}, []any{"a\xff"}, false},
		{[]any{""}, []any{"a"}, false},
		{[]any{"acme", "r", "run"}, []any{"acme", "r", "runs", "1"}, false},
		{[]any{"acme", 5}, []any{"acme", 6}, false},
	} {
		got := bytes.HasPrefix(store.Key(test.key...), store.Key(test.prefix...))
		if got != test.want {
			t.Errorf("Key(%q) has prefix Key(%q) = %v, want %v", test.key, test.prefix, got, test.want)
		}
	}
}

func TestAppendKey(t *testing.T) {
	t.Parallel()
	base := store.Key("t", "i", "run")
	got := store.AppendKey(slices.Clone(base), "status", 3)
	if want := store.Key("t", "i", "run", "status", 3); !bytes.Equal(got, want) {
		t.Errorf("AppendKey = %q, want %q", got, want)
	}
}

func TestDecodeKeyRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, key := range []string{
		"\x02abc",         // unterminated string
		"\x02ab\x00\xff",  // unterminated after an escaped zero
		"\x03\x00\x01",    // short integer
		"\x07",            // unknown tag
		"\x02ok\x00\x09x", // a good part, then an unknown tag
	} {
		if parts, err := store.DecodeKey([]byte(key)); err == nil {
			t.Errorf("DecodeKey(%q) = %q, want an error", key, parts)
		}
	}
}

func TestKeyPanicsOnUnsupportedParts(t *testing.T) {
	t.Parallel()
	for _, part := range []any{1.5, true, nil, struct{}{}, int32(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Key(%T) did not panic", part)
				}
			}()
			store.Key(part)
		}()
	}
}

func TestSharedPrefix(t *testing.T) {
	t.Parallel()
	for _, test := range []struct{ a, b, want string }{
		{"abc", "abd", "ab"},
		{"abc", "abc", "abc"},
		{"abc", "ab", "ab"},
		{"ab", "abc", "ab"},
		{"x", "y", ""},
		{"", "a", ""},
		{"a\x00b", "a\x00c", "a\x00"},
	} {
		got := store.SharedPrefix([]byte(test.a), []byte(test.b))
		if string(got) != test.want || cap(got) != len(got) {
			t.Errorf("SharedPrefix(%q, %q) = %q (cap %d), want %q with no room to append", test.a, test.b, got, cap(got), test.want)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		prefix string
		want   []byte
	}{
		{"a", []byte("b")},
		{"abc", []byte("abd")},
		{"a\xff", []byte("b")},
		{"a\xfe\xff", []byte("a\xff")},
		{"\x00", []byte("\x01")},
		{"\xff", nil},
		{"\xff\xff\xff", nil},
		{"", nil},
	} {
		p := []byte(test.prefix)
		got := store.PrefixEnd(p)
		if !bytes.Equal(got, test.want) || (got == nil) != (test.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", test.prefix, got, test.want)
		}
		if string(p) != test.prefix {
			t.Errorf("PrefixEnd changed its argument to %q", p)
		}
		if got != nil && (bytes.Compare(got, p) <= 0 || bytes.HasPrefix(got, p)) {
			t.Errorf("PrefixEnd(%q) = %q is not above every key with the prefix", test.prefix, got)
		}
	}
}

// FuzzDecodeKey checks DecodeKey on any bytes: it never panics, and what it
// decodes is what Key encodes back to the same bytes (a key has one
// encoding).
func FuzzDecodeKey(f *testing.F) {
	f.Add([]byte{})
	f.Add(store.Key("t", int64(-7), "id\x00\xff", "", time.Unix(1, 2)))
	f.Add([]byte{0x02, 'a', 0x00})       // an unterminated string
	f.Add([]byte{0x02, 'a', 0x00, 0x07}) // a 0x00 neither escaped nor ending
	f.Add([]byte{0x03, 1, 2})            // a short integer
	f.Add([]byte{0x09})                  // an unknown tag
	f.Fuzz(func(t *testing.T, k []byte) {
		parts, err := store.DecodeKey(k)
		if err != nil {
			return
		}
		if got := store.Key(parts...); !bytes.Equal(got, k) {
			t.Errorf("Key(DecodeKey(%q)...) = %q", k, got)
		}
	})
}

// FuzzKeyID checks KeyID against DecodeKey on any bytes: it fails where
// DecodeKey fails, and otherwise returns the last part when a string, ""
// when an integer or none.
func FuzzKeyID(f *testing.F) {
	f.Add([]byte{})
	f.Add(store.Key("t", "i", "run", "status", "waiting", "run_01"))
	f.Add(store.Key("t", int64(-7), "id\x00\xff", "", time.Unix(1, 2)))
	f.Add(store.Key("t", "id\x00\xff\x00"))
	f.Add(store.Key("t", "id", int64(3)))
	f.Add([]byte{0x02, 'a', 0x00})             // an unterminated string
	f.Add([]byte{0x02, 'a', 0x00, 0x07})       // a 0x00 neither escaped nor ending
	f.Add([]byte{0x02, 'a', 0x00, 0xff})       // unterminated after an escaped zero
	f.Add([]byte{0x02, 'a', 0x00, 0x01, 0x03}) // a string, then a short integer
	f.Add([]byte{0x09})                        // an unknown tag
	f.Fuzz(func(t *testing.T, k []byte) {
		id, err := store.KeyID(k)
		parts, derr := store.DecodeKey(k)
		if (err == nil) != (derr == nil) {
			t.Fatalf("KeyID(%q): %v; DecodeKey: %v", k, err, derr)
		}
		want := ""
		if len(parts) > 0 {
			want, _ = parts[len(parts)-1].(string)
		}
		if err == nil && id != want {
			t.Errorf("KeyID(%q) = %q, want %q", k, id, want)
		}
	})
}
