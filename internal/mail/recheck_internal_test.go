package mail

import (
	"strconv"
	"testing"
)

// TestKeysToCheckBound: keysToCheck holds at most maxKeysToCheck keys; a
// key marked past the bound is kept (another goes), a key is unmarked once
// asked for, and keys of two tenants are apart.
func TestKeysToCheckBound(t *testing.T) {
	t.Parallel()
	var k keysToCheck
	for i := range maxKeysToCheck {
		k.mark("t1", strconv.Itoa(i))
	}
	if len(k.m) != maxKeysToCheck {
		t.Fatalf("%d keys marked: %d kept, want all", maxKeysToCheck, len(k.m))
	}
	k.mark("t1", "last")
	if len(k.m) != maxKeysToCheck {
		t.Fatalf("a key past the bound: %d kept, want %d", len(k.m), maxKeysToCheck)
	}
	if k.has("t2", "last") {
		t.Error("another tenant's key reads as marked")
	}
	if !k.has("t1", "last") {
		t.Error("the key marked last was dropped")
	}
	if k.has("t1", "last") {
		t.Error("a key asked for stays marked")
	}
}
