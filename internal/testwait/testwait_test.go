package testwait

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeT records a Fatalf and ends the calling goroutine, as testing.T's
// does with runtime.Goexit.
type fakeT struct{ failed chan string }

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed <- fmt.Sprintf(format, args...)
	select {}
}

// TestWaitsReturn: a value, a finished group or a condition that holds is
// returned at once.
func TestWaitsReturn(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, ch, "a seven"); got != 7 {
		t.Fatalf("Recv = %d, want 7", got)
	}
	var wg sync.WaitGroup
	wg.Go(func() {})
	Wait(t, &wg, "the goroutine")
	n := 0
	Until(t, "three polls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// TestLimitIsGenerous: the bound leaves a loaded machine its time.
func TestLimitIsGenerous(t *testing.T) {
	if Limit < 10*time.Second {
		t.Fatalf("Limit = %v: too tight for -race on a loaded machine", Limit)
	}
}

// TestFailsSayingWhat: a wait that never ends fails with what it awaited.
func TestFailsSayingWhat(t *testing.T) {
	for name, wait := range map[string]func(*fakeT){
		"recv":  func(f *fakeT) { recv(f, make(chan int), "nothing", 10*time.Millisecond) },
		"until": func(f *fakeT) { until(f, "nothing", func() bool { return false }, 10*time.Millisecond) },
	} {
		f := &fakeT{failed: make(chan string, 1)}
		go wait(f)
		select {
		case msg := <-f.failed:
			if want := "never: nothing (waited 10ms)"; msg != want {
				t.Errorf("%s failed with %q, want %q", name, msg, want)
			}
		case <-time.After(Limit):
			t.Fatalf("%s never failed", name)
		}
	}
}
