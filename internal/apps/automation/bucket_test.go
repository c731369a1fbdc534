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
	for _, key := range []string{"", "run_1/notify", strings.Repeat("k", 126), strings.Repeat("k", 127), strings.Repeat("é", 300)} {
		for _, salt := range []string{"auto", "sample"} {
			sum := sha256.Sum256([]byte(salt + "\x00" + key))
			want := int(binary.BigEndian.Uint64(sum[:8]) % 100)
			if got := automation.Bucket(salt, key); got != want {
				t.Errorf("Bucket(%q, %q) = %d, want %d", salt, key, got, want)
			}
		}
	}
}
