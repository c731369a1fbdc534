package store

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
)

// Part tags in an encoded key. Parts of one kind sort in their natural order.
const (
	tagString = 0x02
	tagInt    = 0x03
)

// Key encodes parts (a string or a named string type, []byte, int, int64
// or time.Time) into one key whose byte order is the order of the parts: a key of a prefix of
// the parts is a byte prefix of the key, strings sort as strings and
// integers and times as numbers. Any other part type panics: keys are
// built by code, never from input.
func Key(parts ...any) []byte {
	return AppendKey(make([]byte, 0, 64), parts...)
}

// AppendKey appends the encoding of parts to b.
func AppendKey(b []byte, parts ...any) []byte {
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b = appendString(b, v)
		case []byte:
			b = appendString(b, string(v))
		case int:
			b = appendInt(b, int64(v))
		case int64:
			b = appendInt(b, v)
		case time.Time:
			b = appendInt(b, v.UnixNano())
		default:
			// A named string type (a status, say) is its string. It is read
			// from the interface's data word rather than through
			// reflect.ValueOf, which would make every part escape: callers'
			// string parts then cost an allocation each to box.
			t := reflect.TypeOf(p)
			if t != nil && t.Kind() == reflect.String {
				b = appendString(b, *(*string)((*[2]unsafe.Pointer)(unsafe.Pointer(&p))[1]))
				continue
			}
			panic("store.Key: unsupported part type " + typeName(t))
		}
	}
	return b
}

// typeName names t for a panic message (fmt would make the part escape).
func typeName(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	return t.String()
}

func appendString(b []byte, s string) []byte {
	b = append(b, tagString)
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			b = append(b, 0, 0xff)
			continue
		}
		b = append(b, s[i])
	}
	// 0x00 0x01 ends a string: it sorts below an escaped NUL (0x00 0xff)
	// and below every other byte, so a shorter string sorts first, and a
	// string's key is never a prefix of a longer string's key.
	return append(b, 0, 0x01)
}

func appendInt(b []byte, v int64) []byte {
	b = append(b, tagInt)
	return binary.BigEndian.AppendUint64(b, uint64(v)^(1<<63))
}

// DecodeKey splits a key made by Key into its parts: strings come back as
// string and integers as int64.
func DecodeKey(k []byte) ([]any, error) {
	if len(k) == 0 {
		return nil, nil
	}
	parts := make([]any, 0, keyParts(k))
	for len(k) > 0 {
		switch k[0] {
		case tagString:
			s, rest, err := decodeString(k[1:])
			if err != nil {
				return nil, err
			}
			parts = append(parts, s)
			k = rest
		case tagInt:
			if len(k) < 9 {
				return nil, errors.New("store: short integer part")
			}
			parts = append(parts, int64(binary.BigEndian.Uint64(k[1:9])^(1<<63)))
			k = k[9:]
		default:
			return nil, errors.Newf("store: unknown key part tag %#x", k[0])
		}
	}
	return parts, nil
}

// KeyID returns the last part of k, a key made by Key, when it is a
// string (the record id an index entry or a record's key ends with), ""
// when it is an integer or k is empty. It fails where DecodeKey fails, and
// costs one string, not a value of each part.
func KeyID(k []byte) (string, error) {
	id := ""
	for len(k) > 0 {
		switch k[0] {
		case tagString:
			rest, err := skipString(k[1:])
			if err != nil {
				return "", err
			}
			if len(rest) == 0 {
				id, _, err = decodeString(k[1:])
				return id, err
			}
			k = rest
		case tagInt:
			if len(k) < 9 {
				return "", errors.New("store: short integer part")
			}
			k, id = k[9:], ""
		default:
			return "", errors.Newf("store: unknown key part tag %#x", k[0])
		}
	}
	return id, nil
}

// skipString returns what follows the string part (after its tag) k
// starts with, as decodeString does, without making the string.
func skipString(k []byte) ([]byte, error) {
	for {
		i := bytes.IndexByte(k, 0)
		if i < 0 || i+1 >= len(k) || (k[i+1] != 0x01 && k[i+1] != 0xff) {
			return nil, errors.New("store: unterminated string part")
		}
		if k[i+1] == 0x01 {
			return k[i+2:], nil
		}
		k = k[i+2:]
	}
}

// keyParts guesses the number of parts of the key k, for DecodeKey's one
// allocation: a terminator (0x00 0x01) ends each string part, and an
// integer part is counted when its bytes happen to hold one. It is at
// least the number of string parts.
func keyParts(k []byte) int {
	return bytes.Count(k, stringEnd) + bytes.Count(k, []byte{tagInt})
}

// stringEnd ends a string part of a key.
var stringEnd = []byte{0, 0x01}

// decodeString decodes a string part (after its tag) from k and returns
// it and the rest of k. A 0x00 byte of the string is stored as 0x00 0xff.
func decodeString(k []byte) (string, []byte, error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || i+1 >= len(k) {
		return "", nil, errors.New("store: unterminated string part")
	}
	if k[i+1] == 0x01 { // no 0x00 in the string: one copy
		return string(k[:i]), k[i+2:], nil
	}
	var sb []byte
	for {
		switch {
		case i < 0 || i+1 >= len(k):
			return "", nil, errors.New("store: unterminated string part")
		case k[i+1] == 0xff:
			sb = append(sb, k[:i+1]...)
			k = k[i+2:]
		case k[i+1] == 0x01:
			sb = append(sb, k[:i]...)
			return string(sb), k[i+2:], nil
		default:
			return "", nil, errors.New("store: unterminated string part")
		}
		i = bytes.IndexByte(k, 0)
	}
}

// SharedPrefix returns the longest prefix a and b share, as a slice of a
// whose capacity ends at its length (an append to it copies).
func SharedPrefix(a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n:n]
}

// PrefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p is all 0xff).
func PrefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
