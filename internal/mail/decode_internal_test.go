package mail

import (
	"encoding/json"
	"testing"
)

// TestDecodeStringAsJSON: decodeString answers what encoding/json does for
// every kind of string value (and refuses what is not a string).
func TestDecodeStringAsJSON(t *testing.T) {
	for _, raw := range []string{`""`, `"plain"`, `"Caf\u00e9"`, `"tab\there"`, `"quote \" inside"`, `"back\\slash"`,
		"\"bad \xff byte\"", `"日本"`, `12`, `null`, `["a"]`, `{"a": 1}`, `true`} {
		want, wantErr := "", error(nil)
		wantErr = json.Unmarshal([]byte(raw), &want)
		got, err := decodeString(json.RawMessage(raw))
		if got != want || (err == nil) != (wantErr == nil) {
			t.Errorf("decodeString(%s) = %q, %v; encoding/json: %q, %v", raw, got, err, want, wantErr)
		}
	}
}
