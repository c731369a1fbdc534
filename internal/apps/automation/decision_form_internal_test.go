package automation

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDecisionForms: a gate decision's record is stored in the binary form
// and read back as it was, without its process and item (its key's); a
// record stored before in JSON (as encoding/json wrote it) is read as
// before; a cut, garbled or unknown form is an error.
func TestDecisionForms(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 9, 0, 0, 120000001, time.UTC)
	for name, d := range map[string]*decisionRecord{
		"auto": {ItemKey: "run_1/pay", ProcessID: "prc_1", RunID: "run_1", StepKey: "pay", Capability: "email.send", Auto: true,
			Reason: "automatic: the item is inside the 100% that run without a person", Percent: 100, At: at},
		"supervised": {ItemKey: "k<1>&\"2\"", ProcessID: "prc_ü", Reason: "supervised: automation is paused: \"quiet\"\n<now>",
			Sample: true, Percent: -3, At: at.Add(time.Hour)},
		"empty":   {At: time.Unix(0, 0).UTC()},
		"invalid": {ItemKey: "\xff", RunID: "\xff", Reason: "exception: " + string([]byte{0xe2, 0x28, 0xa1}) + " \u2028\u2029", At: at},
		"long":    {Reason: string(make([]byte, 300)), Percent: 1 << 40, At: at},
	} {
		raw := d.encode()
		got, err := decodeDecision(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := *d
		want.ItemKey, want.ProcessID = "", ""
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("%s: binary form read back (-want +got):\n%s", name, diff)
		}
		for n := range len(raw) {
			if _, err := decodeDecision(raw[:n]); err == nil {
				t.Errorf("%s: read a record cut to %d of %d bytes", name, n, len(raw))
			}
		}
		if _, err := decodeDecision(append(slices.Clone(raw), 0)); err == nil {
			t.Errorf("%s: read a record with a byte more", name)
		}
		for i, b := range map[int]byte{0: 9, 1: 4} {
			bad := slices.Clone(raw)
			bad[i] = b
			if _, err := decodeDecision(bad); err == nil {
				t.Errorf("%s: read a record with byte %d set to %d", name, i, b)
			}
		}

		if name == "invalid" {
			continue // JSON does not keep invalid UTF-8
		}
		js, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err = decodeDecision(js)
		if err != nil {
			t.Fatalf("%s: the JSON form: %v", name, err)
		}
		if diff := cmp.Diff(d, got); diff != "" {
			t.Errorf("%s: JSON form read back (-want +got):\n%s", name, diff)
		}
	}
	at0 := make([]byte, 8) // the time's 8 bytes
	for name, tc := range map[string]struct {
		raw []byte
		ok  bool
	}{
		"plain":          {slices.Concat([]byte{decisionV2, 0, 0}, at0, []byte{0, 0, 0, 0}), true},
		"padded percent": {slices.Concat([]byte{decisionV2, 0, 0x80, 0}, at0, []byte{0, 0, 0, 0}), false},
		"padded length":  {slices.Concat([]byte{decisionV2, 0, 0}, at0, []byte{0x80, 0, 0, 0, 0}), false},
	} {
		if _, err := decodeDecision(tc.raw); (err == nil) != tc.ok {
			t.Errorf("%s varints: read %v, want %v", name, err == nil, tc.ok)
		}
	}
	if _, err := decodeDecision([]byte(`{"auto":`)); err == nil {
		t.Error("read a JSON record cut short")
	}
}

// FuzzDecodeDecision: any stored bytes decode to a decision or an error,
// never a panic; a decision decoded from the binary form encodes back to
// the same bytes.
func FuzzDecodeDecision(f *testing.F) {
	f.Add((&decisionRecord{RunID: "run_1", StepKey: "s", Capability: "email.send", Auto: true, Reason: "r", Percent: 5,
		At: time.Unix(1, 2)}).encode())
	f.Add([]byte(`{"auto":true,"reason":"r","at":"2025-03-01T09:00:00Z"}`))
	f.Add([]byte{decisionV2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDecision(b)
		if err != nil || b[0] == '{' {
			return
		}
		if again := d.encode(); string(again) != string(b) {
			t.Fatalf("decoded %x, encoded back %x", b, again)
		}
	})
}

// BenchmarkDecodeDecision decodes the record of an email.send decision.
func BenchmarkDecodeDecision(b *testing.B) {
	raw := (&decisionRecord{RunID: "run_01M8BC2B1PJY6SG31WR4B5AYYP", StepKey: "notify", Capability: "email.send", Auto: true,
		Reason: "automatic at level auto", Percent: 100, At: time.Unix(1, 2)}).encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeDecision(raw); err != nil {
			b.Fatal(err)
		}
	}
}
