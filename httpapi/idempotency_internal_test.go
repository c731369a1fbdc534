package httpapi

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSealedResponseForms: a kept response opens to what was sealed, in
// the binary form, and a record kept in the earlier JSON form still opens;
// a record sealed under another key or cut short does not.
func TestSealedResponseForms(t *testing.T) {
	key := sealingKey("", "k1", "POST", "/v1/x", []byte(`{"a":1}`))
	tests := []struct {
		name string
		resp storedResponse
	}{
		{"run start", storedResponse{Status: http.StatusCreated, Header: http.Header{
			"Content-Type": {"application/json"}, "Location": {"/api/v1/process-runs/run_1"}},
			Body: []byte("{\"id\":\"run_1\"}\n")}},
		{"several values, empty body", storedResponse{Status: http.StatusNoContent, Header: http.Header{
			"Vary": {"A", "B", ""}, "X-Empty": {}}, Body: []byte{}}},
		{"no header", storedResponse{Status: http.StatusOK, Header: http.Header{}, Body: []byte("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, err := seal(key, tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := open(key, sealed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.resp, got); diff != "" {
				t.Errorf("opened (-want +got):\n%s", diff)
			}
			if _, err := open(sealingKey("", "k2", "POST", "/v1/x", nil), sealed); err == nil {
				t.Error("another key opened the response")
			}

			// The earlier form: the response's JSON, sealed.
			plain, err := json.Marshal(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			aead, err := newAEAD(key)
			if err != nil {
				t.Fatal(err)
			}
			nonce := make([]byte, aead.NonceSize())
			_, _ = rand.Read(nonce)
			got, err = open(key, aead.Seal(nonce, nonce, plain, nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.resp, got); diff != "" {
				t.Errorf("opened the JSON form (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeResponseMalformed: a cut or garbled binary form is an error,
// never a panic.
func TestDecodeResponseMalformed(t *testing.T) {
	full := appendResponse(nil, storedResponse{Status: 201, Header: http.Header{"Location": {"/a"}}, Body: []byte("b")})
	for n := range len(full) - 1 { // without the body's one byte it still decodes
		if _, err := decodeResponse(full[:n]); err == nil {
			t.Errorf("decoded %d of %d bytes", n, len(full))
		}
	}
	if _, err := decodeResponse([]byte{responseV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); err == nil {
		t.Error("decoded an overlong status")
	}
	if _, err := decodeResponse([]byte{9, 200, 1}); err == nil {
		t.Error("decoded an unknown version")
	}
}
