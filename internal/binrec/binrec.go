// Package binrec reads (and AppendString and AppendBytes write) the binary records the product stores (a run, an
// outbox message, a gate decision, a kept response): fields in order, each number
// a varint in its one shortest form (as encoding/binary's Append functions
// write it; a padded varint is refused, so that a record has one stored
// form), each string or byte field its length then its bytes, checked
// against what is left.
//
// A Reader's first malformed field makes it bad: every read after returns
// a zero value, and OK and Done report false, so a decoder reads every
// field and checks once at the end.
package binrec

import "encoding/binary"

// Reader reads the fields of one record in order.
type Reader struct {
	b   []byte
	bad bool
}

// New returns a Reader of b; the byte and string fields it returns alias
// b (Bytes, Rest) or copy it (String).
func New(b []byte) Reader { return Reader{b: b} }

// OK reports whether every field read so far was well formed.
func (r *Reader) OK() bool { return !r.bad }

// Done reports whether every field read was well formed and the record
// has no bytes left.
func (r *Reader) Done() bool { return !r.bad && len(r.b) == 0 }

// Len is the number of bytes left.
func (r *Reader) Len() int { return len(r.b) }

// Fail makes the Reader bad, for a field its caller finds out of range.
func (r *Reader) Fail() { r.bad, r.b = true, nil }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) < 1 {
		r.Fail()
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// Uint64 reads 8 bytes, big-endian.
func (r *Reader) Uint64() uint64 {
	if len(r.b) < 8 {
		r.Fail()
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// Uvarint reads an unsigned varint in its shortest form.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if !r.canonical(n) {
		return 0
	}
	return v
}

// Varint reads a signed (zigzag) varint in its shortest form.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.b)
	if !r.canonical(n) {
		return 0
	}
	return v
}

// canonical takes the n bytes of a varint just read when it is well formed
// and without padding (a last byte of 0 after the first), and reports
// whether it was.
func (r *Reader) canonical(n int) bool {
	if n == 1 || (n > 1 && r.b[n-1] != 0) {
		r.b = r.b[n:]
		return true
	}
	r.Fail()
	return false
}

// Count reads a number of items of at least minSize bytes each (minSize
// >= 1), refusing one more than the bytes left can hold, so that what a
// decoder allocates for them is bounded by the record's size.
func (r *Reader) Count(minSize int) int {
	n := r.Uvarint()
	if n > uint64(len(r.b)/minSize) {
		r.Fail()
		return 0
	}
	return int(n)
}

// Bytes reads a field of bytes: its length, then them (aliasing the
// record).
func (r *Reader) Bytes() []byte {
	l := r.Uvarint()
	if l > uint64(len(r.b)) {
		r.Fail()
		return nil
	}
	v := r.b[:l:l]
	r.b = r.b[l:]
	return v
}

// String reads a string field: its length, then its bytes (copied).
func (r *Reader) String() string { return string(r.Bytes()) }

// AppendString appends a string field as String reads it: its length (a
// uvarint), then its bytes.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// AppendBytes appends a field of bytes as Bytes reads it: its length (a
// uvarint), then them.
func AppendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// Rest returns the bytes left (aliasing the record) and leaves none.
func (r *Reader) Rest() []byte {
	v := r.b
	r.b = r.b[len(r.b):]
	return v
}
