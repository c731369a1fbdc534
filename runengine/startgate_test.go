package runengine

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStartGate caps a tenant at one start in progress: the next callers
// wait in the order they came, one whose context ends leaves the line, and
// another tenant's start goes in at once.
func TestStartGate(t *testing.T) {
	t.Parallel()
	if newStartGate(0) != nil {
		t.Error("a cap of 0 made a gate")
	}
	g := newStartGate(1)
	ctx := context.Background()
	if err := g.enter(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := g.enter(ctx, "b"); err != nil {
		t.Fatalf("another tenant waited: %v", err)
	}
	entered := make(chan string, 3)
	waiting := func(n int) {
		t.Helper()
		waitUntil := func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.tenants["a"].waiters) == n
		}
		for !waitUntil() {
			select {
			case who := <-entered:
				t.Fatalf("%s entered over the cap", who)
			default:
				runtime.Gosched()
			}
		}
	}
	go func() {
		if g.enter(ctx, "a") == nil {
			entered <- "first"
		}
	}()
	waiting(1)
	gone, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- g.enter(gone, "a") }()
	waiting(2)
	go func() {
		if g.enter(ctx, "a") == nil {
			entered <- "third"
		}
	}()
	waiting(3)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled caller got %v, want context.Canceled", err)
	}
	var order []string
	for range 2 {
		g.leave("a")
		order = append(order, <-entered)
	}
	if diff := cmp.Diff([]string{"first", "third"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	g.leave("a")
	g.leave("b")
	if len(g.tenants) != 0 {
		t.Errorf("tenants kept after their starts: %d", len(g.tenants))
	}
}
