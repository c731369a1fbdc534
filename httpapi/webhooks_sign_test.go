package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// signFor is the Bas-Signature a receiver expects for body sent at ts.
func signFor(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}
