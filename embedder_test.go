package bas_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bas-platform/bas"
	"github.com/google/go-cmp/cmp"
)

// TestWaitRunUntilNilCond waits with no condition: ErrInvalid located at
// cond, not a panic in the caller's goroutine.
func TestWaitRunUntilNilCond(t *testing.T) {
	t.Parallel()
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, err = ws.WaitRunUntil(context.Background(), "acme", "r1", nil)
	if !errors.Is(err, bas.ErrInvalid) {
		t.Fatalf("WaitRunUntil with a nil cond: %v, want ErrInvalid", err)
	}
	want := []bas.Violation{{Loc: []any{"cond"}, Msg: "is required", Type: "missing"}}
	if diff := cmp.Diff(want, bas.Violations(err)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
