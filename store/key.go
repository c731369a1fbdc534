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
	var parts []any
	for len(k) > 0 {
		switch k[0] {
		case tagString:
			var sb bytes.Buffer
			i := 1
			for ; i < len(k); i++ {
				if k[i] == 0 {
					if i+1 < len(k) && k[i+1] == 0xff {
						sb.WriteByte(0)
						i++
						continue
					}
					break
				}
				sb.WriteByte(k[i])
			}
			if i+1 >= len(k) || k[i+1] != 0x01 {
				return nil, errors.New("store: unterminated string part")
			}
			parts = append(parts, sb.String())
			k = k[i+2:]
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
