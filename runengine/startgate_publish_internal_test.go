package runengine

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
)

// TestPublishPassesTheDoor: a tenant's Publish waits for a slot of the
// start gate as its Start does, so a tenant cannot flood the engine with
// events past MaxStartingPerTenant; another tenant's events go at once.
func TestPublishPassesTheDoor(t *testing.T) {
	eng, _ := memEngine(t, Config{MaxStartingPerTenant: 1})
	ctx := context.Background()
	if err := eng.Open(ctx); err != nil {
		t.Fatal(err)
	}
	g := eng.starting
	// A start of ten_a in progress holds its one slot.
	if err := g.enter(ctx, "ten_a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Publish(ctx, PublishParams{Tenant: "ten_a", Name: "invoice.received"})
		done <- err
	}()
	waiting := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		if s := g.tenants["ten_a"]; s != nil {
			return len(s.waiters)
		}
		return 0
	}
	testwait.Until(t, "ten_a's Publish waits at the door", func() bool {
		select {
		case err := <-done:
			t.Fatalf("ten_a published past its taken slot: %v", err)
		default:
		}
		return waiting() > 0
	})
	if _, err := eng.Publish(ctx, PublishParams{Tenant: "ten_b", Name: "invoice.received"}); err != nil {
		t.Fatalf("another tenant's event: %v", err)
	}
	g.leave("ten_a")
	if err := testwait.Recv(t, done, "ten_a's Publish returns once its slot is free"); err != nil {
		t.Fatalf("ten_a's Publish once its slot was free: %v", err)
	}
	if n := waiting(); n != 0 {
		t.Errorf("%d waiting at the door after all", n)
	}
}
