package mail

import (
	"strconv"
	"strings"
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

// TestDecodedArgsBound: arguments of up to maxDecodedArgBytes are kept
// decoded, longer ones are decoded each time and not kept, and no more
// than maxDecodedArgs are kept.
func TestDecodedArgsBound(t *testing.T) {
	t.Parallel()
	args := func(bodyLen int, tag string) []byte {
		head := `{"to": ["ann@example.com"], "subject": "` + tag + `", "body": "`
		return []byte(head + strings.Repeat("b", bodyLen-len(head)-2) + `"}`)
	}
	var d decodedArgs
	for _, test := range []struct {
		size int
		kept bool
	}{{maxDecodedArgBytes, true}, {maxDecodedArgBytes + 1, false}} {
		raw := args(test.size, "s")
		if len(raw) != test.size {
			t.Fatalf("arguments of %d bytes, want %d", len(raw), test.size)
		}
		a, err := d.args(raw)
		if err != nil || a.Subject != "s" {
			t.Fatalf("%d bytes: %+v, %v", test.size, a, err)
		}
		if _, ok := d.m[string(raw)]; ok != test.kept {
			t.Errorf("arguments of %d bytes kept %v, want %v", test.size, ok, test.kept)
		}
	}
	for i := range maxDecodedArgs + 1 {
		if _, err := d.args(args(100, strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.m) != maxDecodedArgs {
		t.Errorf("%d arguments kept, want %d", len(d.m), maxDecodedArgs)
	}
}
