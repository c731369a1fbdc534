package process

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/internal/refs"
	"github.com/cockroachdb/errors"
)

// asRat returns v as an exact rational when it is a finite number of any Go
// type (json.Number, float64, int ...). Strings are not numbers.
func asRat(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case json.Number:
		s := string(n)
		if !json.Valid([]byte(s)) || strings.Trim(s, "0123456789+-.eE") != "" {
			return nil, false
		}
		r, ok := new(big.Rat).SetString(s)
		return r, ok
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, false
		}
		return ratFromFloat(n), true
	case float32:
		f := float64(n)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return ratFromFloat(f), true
	case int:
		return new(big.Rat).SetInt64(int64(n)), true
	case int8:
		return new(big.Rat).SetInt64(int64(n)), true
	case int16:
		return new(big.Rat).SetInt64(int64(n)), true
	case int32:
		return new(big.Rat).SetInt64(int64(n)), true
	case int64:
		return new(big.Rat).SetInt64(n), true
	case uint:
		return new(big.Rat).SetUint64(uint64(n)), true
	case uint8:
		return new(big.Rat).SetUint64(uint64(n)), true
	case uint16:
		return new(big.Rat).SetUint64(uint64(n)), true
	case uint32:
		return new(big.Rat).SetUint64(uint64(n)), true
	case uint64:
		return new(big.Rat).SetUint64(n), true
	}
	return nil, false
}

// ratFromFloat converts f through its shortest decimal text, so 0.1 is
// exactly 1/10 (what the person who wrote 0.1 meant), not the binary
// approximation.
func ratFromFloat(f float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return new(big.Rat).SetFloat64(f)
	}
	return r
}

// asFloat returns v as a float64 when it is a finite number.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil && !math.IsInf(f, 0) && json.Valid([]byte(n))
	}
	r, ok := asRat(v)
	if !ok {
		return 0, false
	}
	f, _ := r.Float64()
	return f, true
}

// isNumber reports whether v is a finite number.
func isNumber(v any) bool {
	_, ok := asRat(v)
	return ok
}

// ratValue renders r as a JSON value: an integer when it is one (int64 when
// it fits), otherwise a float64.
func ratValue(r *big.Rat) any {
	if r.IsInt() && r.Num().IsInt64() {
		return r.Num().Int64()
	}
	f, _ := r.Float64()
	return f
}

// valuesEqual compares two decoded JSON values: numbers numerically, strings
// exactly, objects and lists deeply, no conversion between types.
func valuesEqual(a, b any) bool {
	ar, aok := asRat(a)
	br, bok := asRat(b)
	if aok || bok {
		return aok && bok && ar.Cmp(br) == 0
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
	if am, ok := asObject(a); ok {
		bm, ok := asObject(b)
		if !ok || len(am) != len(bm) {
			return false
		}
		for k, av := range am {
			bv, ok := bm[k]
			if !ok || !valuesEqual(av, bv) {
				return false
			}
		}
		return true
	}
	if al, ok := asList(a); ok {
		bl, ok := asList(b)
		if !ok || len(al) != len(bl) {
			return false
		}
		for i := range al {
			if !valuesEqual(al[i], bl[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// asObject returns v as a map when it is a JSON object (any map with string
// keys).
func asObject(v any) (map[string]any, bool) {
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

// asList returns v as a list when it is a JSON list (any slice or array but
// []byte).
func asList(v any) ([]any, bool) {
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

// lookup returns the value at path in v (an object), or v itself for an
// empty path.
func lookup(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	m, ok := asObject(v)
	if !ok {
		return nil, false
	}
	return refs.Lookup(m, path)
}

// text renders a value for messages and key comparison.
func text(v any) string {
	s, err := refs.Text(v)
	if err != nil {
		return "?"
	}
	return s
}

// decodeJSON decodes raw into v keeping numbers exact (json.Number in any
// field) and rejecting trailing data.
func decodeJSON(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return errors.Wrap(err, "decode config")
	}
	if d.More() {
		return errors.New("decode config: unexpected data after the value")
	}
	return nil
}

// decodeInto converts a decoded JSON value (a resolved config) into the
// config struct v.
func decodeInto(config any, v any) error {
	raw, err := json.Marshal(config)
	if err != nil {
		return errors.Wrap(err, "encode config")
	}
	return decodeJSON(raw, v)
}

// isReference reports whether s holds a ${...} reference, whose value is
// known only when the step runs.
func isReference(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, "$${", ""), "${")
}
