package testwait_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/internal/testwait"
)

// A test waits for a goroutine's answer, for a group of goroutines and for
// a condition, each bounded and each saying what it waited for.
func Example() {
	_ = func(t *testing.T) {
		answer := make(chan error, 1)
		go func() { answer <- nil }()
		if err := testwait.Recv(t, answer, "the goroutine answered"); err != nil {
			t.Fatal(err)
		}
		var (
			wg   sync.WaitGroup
			done atomic.Int32
		)
		for range 4 {
			wg.Go(func() { done.Add(1) })
		}
		testwait.Wait(t, &wg, "the four workers returned")
		testwait.Until(t, "four workers counted", func() bool { return done.Load() == 4 })
	}
}
