// Package testwait bounds the waits of tests: a receive from a channel, a
// sync.WaitGroup, a condition polled until it holds. Each fails the test
// with a message saying what did not happen once Limit passed, instead of
// hanging the test binary until go test's own timeout (ten minutes, with
// every goroutine's stack and no word of what was awaited).
//
// Limit is a wait, not a timing assertion: it is generous so that a test
// under the race detector on a loaded two-core machine never hits it
// unless what it waits for is never going to happen.
package testwait

import (
	"sync"
	"testing"
	"time"
)

// Limit is how long a wait lasts before it fails the test.
const Limit = 30 * time.Second

// Recv returns the next value received from ch, or fails t with "never:
// what" when none came within Limit (a closed channel gives its zero
// value, as a receive does).
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return recv(t, ch, what, Limit)
}

// fataler is the part of testing.TB the waits use.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func recv[T any](t fataler, ch <-chan T, what string, limit time.Duration) T {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("never: %s (waited %v)", what, limit)
		panic("unreachable: Fatalf returned")
	}
}

// Wait returns once wg's counter is zero, or fails t with "never: what"
// when it was not within Limit.
func Wait(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Recv(t, done, what)
}

// Until polls cond until it holds, or fails t with "never: what" when it
// did not within Limit. It sleeps a little between polls; cond should be
// cheap and safe to call from the test's goroutine.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	until(t, what, cond, Limit)
}

func until(t fataler, what string, cond func() bool, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s (waited %v)", what, limit)
			return
		}
		time.Sleep(time.Millisecond)
	}
}
