package jsonvalue

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Append appends the JSON encoding of v to b, byte for byte what
// json.Marshal writes, without reflection for the values of decoded JSON
// (map[string]any, []any, string, json.Number, bool, nil) and the common
// Go scalars; any other value is encoded by json.Marshal. Hot paths that
// write records of such values (a run's step outputs, an event's data) use
// it to spare reflection.
func Append(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case json.Number:
		if v == "" {
			return append(b, '0'), nil // what json.Marshal writes for ""
		}
		if !validNumber(string(v)) {
			return marshalAppend(b, v)
		}
		return append(b, v...), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = Append(b, v[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		return appendList(b, v, Append)
	case []string:
		return appendList(b, v, func(b []byte, s string) ([]byte, error) { return AppendString(b, s), nil })
	case time.Time:
		return AppendTime(b, v)
	}
	return marshalAppend(b, v)
}

// appendList appends list as a JSON array (null when nil), each element
// by each.
func appendList[T any](b []byte, list []T, each func([]byte, T) ([]byte, error)) ([]byte, error) {
	if list == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = each(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

func marshalAppend(b []byte, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, raw...), nil
}

// AppendString appends s as a JSON string exactly as json.Marshal writes
// it (with <, > and & escaped).
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendTime appends t as json.Marshal writes a time.Time (RFC 3339 with
// nanoseconds, quoted). A year outside 0..9999 is an error, as there.
func AppendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return marshalAppend(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}
