package automation_test

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/apps/automation"
)

// TestBucketStable: an item's bucket is the first 8 bytes of
// sha256(salt NUL key) modulo 100, whatever the key's length, so that
// stored decisions and the percent in force keep meaning the same items.
func TestBucketStable(t *testing.T) {
	// Keys around Bucket's 128-byte buffer for either salt (salt, NUL and
	// key fill it at 121 bytes of key with "sample", 123 with "auto"), and
	// far past it.
	keys := []string{"", "run_1/notify", strings.Repeat("é", 300)}
	for n := 120; n <= 124; n++ {
		keys = append(keys, strings.Repeat("k", n))
	}
	for _, key := range keys {
		for _, salt := range []string{"auto", "sample"} {
			sum := sha256.Sum256([]byte(salt + "\x00" + key))
			want := int(binary.BigEndian.Uint64(sum[:8]) % 100)
			if got := automation.Bucket(salt, key); got != want {
				t.Errorf("Bucket(%q, %q) = %d, want %d", salt, key, got, want)
			}
		}
	}
}
