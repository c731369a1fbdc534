package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestSharedStoreOneNodeSends: two nodes share the store; a delivery
// written by the node that does not own it is found by the one that does
// (its poll), and sent once, by that one only.
func TestSharedStoreOneNodeSends(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer recv.Close()
	a := setup(t, Config{Allow: loopback(), Owns: func(string) bool { return false }})
	owner := make(chan string, 10)
	b, err := New(Config{Store: a.st, Clock: a.clock, Resolver: fakeResolver{}, Allow: loopback(),
		Owns:      func(string) bool { return true },
		OnAttempt: func(_ string, _ *Delivery, outcome string) { owner <- outcome }})
	if err != nil {
		t.Fatal(err)
	}
	b.Open()
	defer b.Close()
	if _, err := a.svc.Create(context.Background(), "ten_a", "usr_1", In{URL: recv.URL + "/hook", Events: []string{"invoicing.*"}}); err != nil {
		t.Fatal(err)
	}
	a.emit(t, "ten_a", "invoicing.invoice.paid")
	select {
	case outcome := <-owner:
		if outcome != OutcomeSucceeded {
			t.Fatalf("the owner's attempt: %s, want %s", outcome, OutcomeSucceeded)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the owning node never sent the delivery")
	}
	select {
	case outcome := <-a.attempts:
		t.Fatalf("the node that does not own the delivery attempted it: %s", outcome)
	default:
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("the receiver got %d requests, want 1", got)
	}
}
