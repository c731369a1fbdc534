package mail

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recordCases are messages of every shape a record holds.
func recordCases() map[string]*Message {
	reply := "ops <ops@example.com> & co"
	at := time.Date(2025, 3, 1, 9, 0, 0, 123456789, time.UTC)
	return map[string]*Message{
		"plain": {ID: "msg_01M8BC2B1QXS0HPHA1MK3Z6MWG", To: []string{"supplier@example.com"}, Cc: []string{},
			Subject: "Delivery received", Body: "We received your delivery.", CreatedAt: at,
			IdempotencyKey: "run_01M8BC2B1PJY6SG31WR4B5AYYP/notify/1"},
		"escapes": {ID: "msg_2", To: []string{"a@example.com", "b\"q@example.com"}, Cc: []string{"c@example.com"},
			Subject: "Ünïcode <b> & \u2028", Body: "line\nnext\t\"quoted\" \\ \x01", ReplyTo: &reply, CreatedAt: at},
		"nil":      {ID: "msg_3", CreatedAt: time.Unix(0, 0).UTC()},
		"empty":    {ID: "msg_4", To: []string{}, Cc: []string{""}, ReplyTo: new(string), CreatedAt: at},
		"long":     {ID: "msg_5", Body: string(bytes.Repeat([]byte("x"), 300)), CreatedAt: at},
		"invalid":  {ID: "msg_6", To: []string{"\xff"}, Body: string([]byte{0xe2, 0x28, 0xa1}), CreatedAt: at},
		"pre-1970": {ID: "msg_7", CreatedAt: time.Date(1960, 1, 1, 0, 0, 0, 1, time.UTC)},
	}
}

// TestMessageRecordRoundTrips: a message's record decodes to the message,
// null lists null and empty ones empty, within recordSize.
func TestMessageRecordRoundTrips(t *testing.T) {
	t.Parallel()
	for name, m := range recordCases() {
		raw := m.appendRecord(nil)
		if len(raw) > m.recordSize() {
			t.Errorf("%s: record of %d bytes, size %d", name, len(raw), m.recordSize())
		}
		got, err := decodeMessage(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	plain := recordCases()["plain"]
	js, _ := json.Marshal(plain)
	if n := len(plain.appendRecord(nil)); n > 150 || n >= len(js) {
		t.Errorf("the example server's message takes %d bytes (JSON %d), want at most 150", n, len(js))
	}
}

// TestMessageRecordReadsJSON: a message stored as JSON (before the record
// form) is read as it was written.
func TestMessageRecordReadsJSON(t *testing.T) {
	t.Parallel()
	for name, m := range recordCases() {
		js, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMessage(js)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := *m
		want.To, want.Body, want.Subject = got.To, got.Body, got.Subject // encoding/json replaces invalid UTF-8
		if diff := cmp.Diff(&want, got); diff != "" || (name != "invalid" && !cmp.Equal(m, got)) {
			t.Errorf("%s (-want +got):\n%s", name, cmp.Diff(m, got))
		}
	}
}

// TestMessageRecordMalformed: a record cut short anywhere, with a byte
// more, an unknown version or flag, a padded length, or a null list with
// addresses is refused.
func TestMessageRecordMalformed(t *testing.T) {
	t.Parallel()
	raw := recordCases()["escapes"].appendRecord(nil)
	for i := range raw {
		if _, err := decodeMessage(raw[:i]); err == nil {
			t.Errorf("a record cut to %d of %d bytes decoded", i, len(raw))
		}
	}
	bad := map[string][]byte{
		"a byte more":      append(append([]byte{}, raw...), 0),
		"version":          append([]byte{messageV1 + 1}, raw[1:]...),
		"flag":             append([]byte{messageV1, raw[1] | 8}, raw[2:]...),
		"padded length":    append(append([]byte{messageV1, 0}, raw[2:10]...), 0x80|5, 0, 'm', 's', 'g', '_', '1', 0, 0, 0, 0, 0),
		"nil with an item": append(append([]byte{messageV1, messageNilTo | messageNilCc}, raw[2:10]...), 1, 'a', 0, 0, 0, 1, 1, 'x', 0),
	}
	for name, b := range bad {
		if _, err := decodeMessage(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	ok := append(append([]byte{messageV1, messageNilTo | messageNilCc}, raw[2:10]...), 1, 'a', 0, 0, 0, 0, 0)
	if _, err := decodeMessage(ok); err != nil {
		t.Errorf("the well-formed neighbour of the bad records: %v", err)
	}
}

// FuzzDecodeMessage: decoding any bytes never panics, and a record that
// decodes is the one form of its message.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range recordCases() {
		f.Add(m.appendRecord(nil))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := decodeMessage(raw)
		if err != nil || (len(raw) > 0 && raw[0] == '{') {
			return
		}
		if again := m.appendRecord(nil); !bytes.Equal(again, raw) {
			t.Errorf("record %x decodes to a message whose record is %x", raw, again)
		}
	})
}

// BenchmarkDecodeMessage decodes the record of an email.send message.
func BenchmarkDecodeMessage(b *testing.B) {
	raw := recordCases()["plain"].appendRecord(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeMessage(raw); err != nil {
			b.Fatal(err)
		}
	}
}
