package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/pgtest"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store/pgstore"
)

// TestWake: a Wake on one store reaches a Listen on another store of the
// same schema, not one on another schema or another topic; Listen returns
// once the store closes.
func TestWake(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema, other := pgtest.Schema(t, dsn), pgtest.Schema(t, dsn)
	open := func(schema string) *pgstore.Store {
		s, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	listener, sender, stranger := open(schema), open(schema), open(other)
	listen := func(s *pgstore.Store, topic string) (<-chan struct{}, <-chan error) {
		got, ended := make(chan struct{}, 16), make(chan error, 1)
		go func() {
			ended <- s.Listen(context.Background(), topic, func() { got <- struct{}{} })
		}()
		testwait.Recv(t, got, "Listen's first call (listening)")
		return got, ended
	}
	got, ended := listen(listener, "due")
	otherTopic, _ := listen(listener, "jobs")
	strangerGot, _ := listen(stranger, "due")

	if err := sender.Wake(t.Context(), "due"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener on the same schema and topic was not woken")
	}
	// A wake of the stranger's schema then tells that the first one's
	// wake, sent before, did not reach it (notifications keep their order).
	if err := stranger.Wake(t.Context(), "due"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-strangerGot:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener of the other schema was not woken by its own schema's wake")
	}
	select {
	case <-strangerGot:
		t.Error("the listener of another schema heard this schema's wake")
	case <-otherTopic:
		t.Error("the listener of another topic heard the wake")
	default:
	}
	_ = listener.Close()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Listen returned %v after Close, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not return after Close")
	}
}
