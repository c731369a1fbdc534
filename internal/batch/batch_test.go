package batch

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLeaderRunsEveryValueOnce: many callers at once; every value is run in
// exactly one batch, one batch at a time, and each caller returns only
// after its value ran.
func TestLeaderRunsEveryValueOnce(t *testing.T) {
	var l Leader[*int]
	var (
		mu      sync.Mutex
		seen    = map[int]int{}
		running bool
		batches int
	)
	run := func(b []*int) {
		mu.Lock()
		if running {
			t.Error("two batches ran at once")
		}
		running = true
		batches++
		mu.Unlock()
		for _, v := range b {
			mu.Lock()
			seen[*v]++
			mu.Unlock()
			*v = -*v // the answer, read by its caller
		}
		mu.Lock()
		running = false
		mu.Unlock()
	}
	const n = 2000
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			v := i
			l.Do(&v, run)
			if v != -i {
				t.Errorf("caller %d returned before its value ran (%d)", i, v)
			}
		})
	}
	wg.Wait()
	want := map[int]int{}
	for i := 1; i <= n; i++ {
		want[i] = 1
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("runs per value (-want +got):\n%s", diff)
	}
	if batches < 1 || batches > n {
		t.Errorf("%d batches for %d values", batches, n)
	}
}

// TestLeaderLoneCallerRunsAtOnce: with nothing running, the caller's value
// is a batch of its own, run by the caller itself.
func TestLeaderLoneCallerRunsAtOnce(t *testing.T) {
	var l Leader[string]
	var got [][]string
	for _, v := range []string{"a", "b"} {
		l.Do(v, func(b []string) { got = append(got, b) })
	}
	if diff := cmp.Diff([][]string{{"a"}, {"b"}}, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}
