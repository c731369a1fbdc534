package jsonvalue

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAppendMatchesMarshal checks Append against json.Marshal, the
// definition of its output, byte for byte.
func TestAppendMatchesMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 9, 0, 0, 123456000, time.UTC)
	for _, v := range []any{
		nil, true, false, "", "plain text", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnew\nline\r\x00\x1f\b\f",
		"héllo wörld ✓", "\u2028\u2029", "bad utf-8 \xff\xfe end", "emoji 😀",
		json.Number("12"), json.Number("-0.5e-7"), json.Number(""), 0, -42, int64(1) << 62, int32(-7), uint64(1<<64 - 1),
		1.5, 1e21, 1e-7, float32(0.1),
		map[string]any{}, map[string]any(nil), []any{}, []any(nil), []string{"a", "<"}, []string(nil),
		map[string]any{"z": 1, "a": []any{"x", nil, map[string]any{"é": true, "A": json.Number("3")}}, "m": "<&>"},
		at, at.In(time.FixedZone("X", 5*3600+30*60)), time.Time{},
		struct {
			A string `json:"a"`
		}{"fallback"},
		map[string]int{"b": 2, "a": 1},
		json.RawMessage(` { "raw" : 1 } `),
	} {
		want, werr := json.Marshal(v)
		got, gerr := Append([]byte("prefix:"), v)
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%#v: error %v, json.Marshal's %v", v, gerr, werr)
			continue
		}
		if werr == nil && string(got) != "prefix:"+string(want) {
			t.Errorf("%#v:\n got %s\nwant prefix:%s", v, got, want)
		}
	}
}

func TestAppendErrors(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		json.Number("0x10"),
		map[string]any{"f": func() {}},
		[]any{1, make(chan int)},
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if _, err := Append(nil, v); err == nil {
			t.Errorf("Append(%#v) succeeded", v)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	v := map[string]any{"run_id": "run_01KJPWD6M000023KW770N8S7MX", "process_id": "prc_01KJPWD6M00004707EZHGBK2XT",
		"subject": map[string]any{"type": "invoice", "label": "INV-1"}, "amount": json.Number("1234.56"), "lines": []any{1, 2, 3}}
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = Append(buf[:0], v)
		}
	})
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(v)
		}
	})
}
