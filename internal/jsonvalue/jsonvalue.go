// Package jsonvalue compares and converts decoded JSON values of any Go
// representation: what encoding/json produces (map[string]any, []any,
// json.Number or float64, string, bool, nil) and what Go code builds by hand
// (other maps with string keys, typed slices and arrays, every integer and
// float type). Trigger filters and process checks share its rules, so a value
// means the same thing wherever bas looks at it.
//
// # Rules
//
//   - A number is a finite number of any Go numeric type, or a json.Number
//     holding JSON number text. NaN, the infinities and a json.Number such as
//     "1/2" or "0x10" are not numbers.
//   - Numbers compare numerically and exactly, whatever their Go type: 5,
//     5.0, 5e0 and int8(5) are equal, and 2^64-1 as a uint64 is greater than
//     2^63-1. A float64 or float32 stands for its shortest decimal text, so
//     the float64 0.1 is exactly 1/10, what the person who wrote 0.1 meant,
//     not its binary approximation.
//   - Equality never converts types: the number 5 does not equal the string
//     "5", and null equals only null. Objects and lists compare deeply under
//     the same rules.
//   - An object is any map with string keys; a list is any slice or array but
//     []byte, which encoding/json writes as a string.
package jsonvalue

import (
	"cmp"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// IsNumber reports whether v is a number: a finite number of any Go numeric
// type, or a json.Number holding JSON number text.
func IsNumber(v any) bool {
	switch n := v.(type) {
	case json.Number:
		return validNumber(string(n))
	case float64:
		return finite(n)
	case float32:
		return finite(float64(n))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// numeric reports whether v is of a Go numeric type (or json.Number), number
// or not; equality with such a value is decided numerically.
func numeric(v any) bool {
	switch v.(type) {
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// AsRat returns v as an exact rational when it is a number (see IsNumber).
// A float stands for its shortest decimal text (see RatFromFloat).
func AsRat(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case json.Number:
		if !validNumber(string(n)) {
			return nil, false
		}
		return new(big.Rat).SetString(string(n))
	case float64:
		if !finite(n) {
			return nil, false
		}
		return RatFromFloat(n), true
	case float32:
		f := float64(n)
		if !finite(f) {
			return nil, false
		}
		return RatFromFloat(f), true
	case uint:
		return new(big.Rat).SetUint64(uint64(n)), true
	case uint64:
		return new(big.Rat).SetUint64(n), true
	}
	if i, ok := asInt(v); ok {
		return new(big.Rat).SetInt64(i), true
	}
	return nil, false
}

// Float returns v as the nearest float64 when it is a number (see IsNumber).
func Float(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, finite(n)
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil && finite(f) && validNumber(string(n))
	}
	r, ok := AsRat(v)
	if !ok {
		return 0, false
	}
	f, _ := r.Float64()
	return f, true
}

// RatFromFloat converts f through its shortest decimal text, so 0.1 is
// exactly 1/10 (what the person who wrote 0.1 meant), not the binary
// approximation. f must be finite.
func RatFromFloat(f float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return new(big.Rat).SetFloat64(f)
	}
	return r
}

// CompareNumbers compares two numbers exactly, returning -1, 0 or +1. It
// reports false when either is not a number.
func CompareNumbers(a, b any) (int, bool) {
	// Fast paths without big.Rat: two integers that fit an int64, or two
	// floats (whose order is that of their shortest decimal texts).
	if ai, ok := asInt(a); ok {
		if bi, ok := asInt(b); ok {
			return cmp.Compare(ai, bi), true
		}
	}
	if af, ok := a.(float64); ok {
		if bf, ok := b.(float64); ok && finite(af) && finite(bf) {
			return cmp.Compare(af, bf), true
		}
	}
	ar, ok := AsRat(a)
	if !ok {
		return 0, false
	}
	br, ok := AsRat(b)
	if !ok {
		return 0, false
	}
	return ar.Cmp(br), true
}

// Compare orders two numbers numerically or two strings by their bytes (so
// RFC 3339 dates and times in the same format order correctly), returning
// -1, 0 or +1. Any other pair, such as a number and a string, is not ordered
// and Compare reports false.
func Compare(a, b any) (int, bool) {
	if as, ok := a.(string); ok {
		bs, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(as, bs), true
	}
	return CompareNumbers(a, b)
}

// Equal reports deep equality of two decoded JSON values: numbers
// numerically, strings and booleans exactly, null only with null, objects and
// lists element by element, never converting between types. A value that is
// of a numeric Go type but not a number (NaN, a bad json.Number) equals
// nothing, not even itself.
func Equal(a, b any) bool {
	if numeric(a) || numeric(b) {
		c, ok := CompareNumbers(a, b)
		return ok && c == 0
	}
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	}
	if am, ok := AsObject(a); ok {
		bm, ok := AsObject(b)
		if !ok || len(am) != len(bm) {
			return false
		}
		for k, av := range am {
			bv, ok := bm[k]
			if !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	}
	if al, ok := AsList(a); ok {
		bl, ok := AsList(b)
		if !ok || len(al) != len(bl) {
			return false
		}
		for i := range al {
			if !Equal(al[i], bl[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// AsObject returns v as a map when it is a JSON object: map[string]any as it
// is, or a copy of any other map with string keys.
func AsObject(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	m := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		m[it.Key().String()] = it.Value().Interface()
	}
	return m, true
}

// AsList returns v as a list when it is a JSON list: []any as it is, or a
// copy of any other slice or array except []byte (which encoding/json writes
// as a string).
func AsList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return nil, false
		}
	case reflect.Array:
	default:
		return nil, false
	}
	l := make([]any, rv.Len())
	for i := range l {
		l[i] = rv.Index(i).Interface()
	}
	return l, true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// asInt returns v as an int64 when it is an integer number that fits, the
// fast path of CompareNumbers.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if !jsonInteger(string(n)) {
			return 0, false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
		return 0, false
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint:
		return int64(n), n <= math.MaxInt64
	case uint64:
		return int64(n), n <= math.MaxInt64
	}
	return 0, false
}

// jsonInteger reports whether s is JSON integer text: an optional minus, then
// 0 or digits without a leading zero.
func jsonInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validNumber reports whether s is JSON number text; big.Rat also accepts
// fractions ("1/2") and hexadecimal, which a json.Number never holds when it
// came from a decoder but may when built by hand.
func validNumber(s string) bool {
	return strings.Trim(s, "0123456789+-.eE") == "" && json.Valid([]byte(s))
}
