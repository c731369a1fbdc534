package binrec_test

import (
	"encoding/binary"
	"testing"

	"github.com/bas-platform/bas/internal/binrec"
	"github.com/google/go-cmp/cmp"
)

// read is what a test record decodes to: a byte, a number, a string and a
// list of strings, then the rest.
type read struct {
	Flag  byte
	N     int64
	S     string
	List  []string
	Rest  string
	OK    bool
	Done  bool
	Bytes int // left before Rest
}

func decode(b []byte) read {
	r := binrec.New(b)
	var got read
	got.Flag = r.Byte()
	got.N = r.Varint()
	got.S = r.String()
	for range r.Count(1) {
		got.List = append(got.List, r.String())
	}
	got.OK, got.Done, got.Bytes = r.OK(), r.Done(), r.Len()
	got.Rest = string(r.Rest())
	return got
}

// TestReader: a well-formed record reads back; a padded or cut varint, a
// length past the end and a count the bytes left cannot hold make the
// reader bad from there on (zero values, OK false); bytes left over make
// Done false.
func TestReader(t *testing.T) {
	t.Parallel()
	good := []byte{7}
	good = binary.AppendVarint(good, -300)
	good = append(binary.AppendUvarint(good, 2), "hi"...)
	good = append(binary.AppendUvarint(good, 1), 1, 'x')
	for _, test := range []struct {
		name string
		in   []byte
		want read
	}{
		{"good", good, read{Flag: 7, N: -300, S: "hi", List: []string{"x"}, OK: true, Done: true}},
		{"left over", append(good[:len(good):len(good)], 'z'), read{Flag: 7, N: -300, S: "hi", List: []string{"x"}, OK: true, Bytes: 1, Rest: "z"}},
		{"padded varint", []byte{7, 0x80 | 2, 0, 0, 0}, read{Flag: 7}},
		{"padded length", []byte{7, 2, 0x80 | 1, 0, 'a', 0}, read{Flag: 7, N: 1}},
		{"cut varint", []byte{7, 0x80}, read{Flag: 7}},
		{"overlong varint", []byte{7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, read{Flag: 7}},
		{"string past the end", []byte{7, 2, 3, 'a', 'b'}, read{Flag: 7, N: 1}},
		{"count past the end", []byte{7, 2, 0, 3, 0, 0}, read{Flag: 7, N: 1}},
		{"empty", nil, read{}},
	} {
		if diff := cmp.Diff(test.want, decode(test.in)); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", test.name, diff)
		}
	}
}

// TestUint64: 8 bytes big-endian; fewer make the reader bad.
func TestUint64(t *testing.T) {
	t.Parallel()
	r := binrec.New([]byte{0, 0, 0, 0, 0, 0, 1, 2})
	if v := r.Uint64(); v != 258 || !r.Done() {
		t.Errorf("Uint64 = %d, Done %v; want 258, true", v, r.Done())
	}
	r = binrec.New([]byte{1, 2, 3})
	if v := r.Uint64(); v != 0 || r.OK() {
		t.Errorf("Uint64 of 3 bytes = %d, OK %v; want 0, false", v, r.OK())
	}
}

// TestAppendBytes: a field of bytes is written as AppendString writes
// the same string, and Bytes reads it back.
func TestAppendBytes(t *testing.T) {
	t.Parallel()
	for _, v := range [][]byte{nil, {}, []byte("hi"), make([]byte, 300)} {
		b := binrec.AppendBytes([]byte{7}, v)
		if want := binrec.AppendString([]byte{7}, string(v)); string(b) != string(want) {
			t.Errorf("AppendBytes(%q) = %x, want %x", v, b, want)
		}
		r := binrec.New(b[1:])
		if got := r.Bytes(); string(got) != string(v) || !r.Done() {
			t.Errorf("Bytes of AppendBytes(%q) = %q, Done %v", v, got, r.Done())
		}
	}
}

// FuzzReader: any bytes read without a panic, and a record read to its
// end writes back the same bytes with encoding/binary and AppendString
// (one stored form).
func FuzzReader(f *testing.F) {
	f.Add([]byte{7, 3, 2, 'h', 'i', 1, 1, 'x'})
	f.Add([]byte{7, 0x80 | 2, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := decode(b)
		if !got.Done {
			return
		}
		again := []byte{got.Flag}
		again = binary.AppendVarint(again, got.N)
		again = binrec.AppendString(again, got.S)
		again = binary.AppendUvarint(again, uint64(len(got.List)))
		for _, s := range got.List {
			again = binrec.AppendString(again, s)
		}
		if string(again) != string(b) {
			t.Fatalf("read %x, written back %x", b, again)
		}
	})
}
