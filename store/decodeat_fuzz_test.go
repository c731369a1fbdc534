package store

import (
	"bytes"
	"testing"
)

// FuzzDecodeAt reads any bytes after a collection's record prefix as the
// key of a record, as List and Scan do: decodeAt gives DecodeWithID an id
// exactly when the key is the record key of that id (DecodeKey reads it
// as the prefix's parts and one string more), and fails otherwise.
func FuzzDecodeAt(f *testing.F) {
	prefix := Key("ten_a", spaceRecord, "things")
	for _, id := range []string{"", "thg_1", "a\x00b", "\xff"} {
		f.Add(Key("ten_a", spaceRecord, "things", id)[len(prefix):])
	}
	f.Add([]byte{})
	f.Add([]byte{tagString})
	f.Add(append(Key("ten_a", spaceRecord, "things", "x")[len(prefix):], 0))
	f.Fuzz(func(t *testing.T, suffix []byte) {
		var seen []string
		c := &Collection[string]{Name: "things", DecodeWithID: func(id string, raw []byte) (*string, error) {
			seen = append(seen, id)
			s := string(raw)
			return &s, nil
		}}
		key := append(bytes.Clone(prefix), suffix...)
		_, err := c.decodeAt(prefix, key, []byte("v"))
		parts, derr := DecodeKey(key)
		var want string
		isRecord := derr == nil && len(parts) == 4
		if isRecord {
			want, isRecord = parts[3].(string)
		}
		switch {
		case err != nil && isRecord:
			t.Fatalf("decodeAt(%q): %v, but it is the key of record %q", key, err, want)
		case err == nil && !isRecord:
			t.Fatalf("decodeAt(%q) took it (id %q), but it is no record's key (DecodeKey: %v, %v)", key, seen, parts, derr)
		case err == nil && (len(seen) != 1 || seen[0] != want || !bytes.Equal(c.recordKey("ten_a", want), key)):
			t.Fatalf("decodeAt(%q) gave ids %q, want [%q]", key, seen, want)
		}
	})
}
