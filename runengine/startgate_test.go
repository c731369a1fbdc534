package runengine

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/bas-platform/bas/store/clock"

	"github.com/google/go-cmp/cmp"
)

// TestStartGate caps a tenant at one start in progress: the next callers
// wait in the order they came, one whose context ends leaves the line, and
// another tenant's start goes in at once.
func TestStartGate(t *testing.T) {
	t.Parallel()
	if newStartGate(0, 0, clock.Real{}) != nil {
		t.Error("caps of 0 made a gate")
	}
	g := newStartGate(1, 0, clock.Real{})
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
	if g.busy != 0 || g.tenants["a"].n != 0 || g.tenants["b"].n != 0 {
		t.Errorf("starts in progress after all left: %d", g.busy)
	}
}

// TestFairStartGate caps a tenant's starts in progress at the fair cap only
// while another tenant is active (has a start in progress, or came within
// fairWindow), and lets the waiting callers in, in order, as soon as the
// tenant is alone again.
func TestFairStartGate(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := newStartGate(0, 2, clk)
	ctx := context.Background()
	for i := range 5 {
		if err := g.enter(ctx, "flood"); err != nil {
			t.Fatalf("alone, start %d: %v", i, err)
		}
	}
	if err := g.enter(ctx, "quiet"); err != nil {
		t.Fatalf("the quiet tenant waited: %v", err)
	}
	entered := make(chan int, 3)
	waiters := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.tenants["flood"].waiters)
	}
	for i := range 2 {
		go func() {
			if g.enter(ctx, "flood") == nil {
				entered <- i
			}
		}()
		for waiters() != i+1 {
			select {
			case <-entered:
				t.Fatal("the flood entered over the fair cap beside the quiet tenant")
			default:
				runtime.Gosched()
			}
		}
	}
	// The quiet tenant's start ended, but it came within the window: the
	// flood stays at the fair cap (2 in progress).
	g.leave("quiet")
	clk.Advance(fairWindow / 2)
	for range 3 {
		g.leave("flood")
	}
	select {
	case i := <-entered:
		t.Fatalf("caller %d entered with 2 of the flood's starts in progress", i)
	default:
	}
	g.leave("flood") // 1 in progress: the first caller's turn
	if i := <-entered; i != 0 {
		t.Fatalf("caller %d entered first", i)
	}
	if waiters() != 1 {
		t.Fatal("the second caller entered over the fair cap")
	}
	// Out of the window the flood is alone again: the next leave lets every
	// waiting caller in, and a new one goes in at once.
	clk.Advance(fairWindow)
	g.leave("flood")
	if i := <-entered; i != 1 {
		t.Fatalf("caller %d entered second", i)
	}
	for i := range 4 {
		if err := g.enter(ctx, "flood"); err != nil {
			t.Fatalf("alone again, start %d: %v", i, err)
		}
	}
	if g.busy != 6 {
		t.Errorf("%d starts in progress, want 6", g.busy)
	}
	// A tenant committing changes beside the flood (completing tasks, say)
	// holds it to the fair cap as one starting runs does.
	g.active("quiet")
	go func() {
		if g.enter(ctx, "flood") == nil {
			entered <- 2
		}
	}()
	for waiters() != 1 {
		select {
		case <-entered:
			t.Fatal("the flood entered over the fair cap beside a tenant committing changes")
		default:
			runtime.Gosched()
		}
	}
	clk.Advance(fairWindow)
	g.leave("flood")
	if i := <-entered; i != 2 {
		t.Fatalf("caller %d entered", i)
	}
}

// TestFairCapAdapts: the fair cap drops by one when a quiet tenant's
// start, made beside another tenant's, takes over fairTarget times the
// baseline (the 95th percentile of the starts made with no other tenant's
// in progress), at most once per fairCalm such starts and never below 1;
// fairRaise quiet starts within the target in a row raise it by one, up to
// FairStartingPerTenant; it is back at that ceiling once no quiet start
// came for fairWindow; and with no recent start alone, the baseline is
// three times the shortest start lately.
func TestFairCapAdapts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var a fairAdapt
	const ceiling = 8
	step := func(d time.Duration, beside bool) int {
		now = now.Add(d)
		a.sample(d, beside, now, ceiling)
		return a.limit(now, ceiling)
	}
	us := time.Microsecond
	if got := step(100*us, false); got != ceiling { // the baseline: 100 µs
		t.Fatalf("a start alone moved the cap to %d", got)
	}
	target := fairTarget * 100 * us
	var caps, want []int
	for i := range ceiling * fairCalm {
		caps = append(caps, step(target+us, true))
		want = append(want, max(1, ceiling-1-i/fairCalm))
	}
	if diff := cmp.Diff(want, caps); diff != "" {
		t.Errorf("the cap as quiet starts stay slow (-want +got):\n%s", diff)
	}
	caps, want = caps[:0], want[:0]
	for i := range 2 * fairRaise {
		caps = append(caps, step(100*us, true))
		want = append(want, 1+(i+1)/fairRaise)
	}
	if diff := cmp.Diff(want, caps); diff != "" {
		t.Errorf("the cap as quiet starts are fast again (-want +got):\n%s", diff)
	}
	if got := step(target, true); got != 3 {
		t.Errorf("a start at the target moved the cap to %d", got)
	}
	// The baseline follows the tail of the starts alone: up an eighth for
	// one over it, down a 152nd for one under it (so it settles where one
	// in 19 is over it), whatever their size.
	if step(time.Second, false); a.alone != 112500*time.Nanosecond {
		t.Errorf("the baseline after a slow start alone is %v, want 112.5µs", a.alone)
	}
	if step(50*us, false); a.alone != 112500*time.Nanosecond-112500*time.Nanosecond/152 {
		t.Errorf("the baseline after a fast start alone is %v", a.alone)
	}
	// No quiet start for fairWindow: the ceiling again.
	now = now.Add(fairWindow)
	if got := a.limit(now, ceiling); got != ceiling {
		t.Errorf("the cap after a quiet window is %d, want %d", got, ceiling)
	}
	// No start alone for fairBaseWindow: the baseline is three times the
	// shortest start of this window and the last (50 µs).
	now = now.Add(fairBaseWindow)
	if got := step(fairTarget*150*us, true); got != ceiling {
		t.Errorf("a start at the target with no start alone lately moved the cap to %d", got)
	}
	if got := step(fairTarget*150*us+us, true); got != ceiling-1 {
		t.Errorf("a start over the target with no start alone lately: cap %d, want %d", got, ceiling-1)
	}
}

// TestFairStartGateAdapts: a quiet tenant's slow start beside a flooding
// tenant lowers the flood's fair cap at the gate.
func TestFairStartGateAdapts(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := newStartGate(0, 4, clk)
	ctx := context.Background()
	enter := func(tenant string) {
		t.Helper()
		if err := g.enter(ctx, tenant); err != nil {
			t.Fatal(err)
		}
	}
	enter("quiet") // alone: the baseline
	clk.Advance(100 * time.Microsecond)
	g.leave("quiet")
	for range 4 {
		enter("flood")
	}
	enter("quiet")
	clk.Advance(fairTarget*100*time.Microsecond + time.Microsecond)
	g.leave("quiet")
	g.mu.Lock()
	limit := g.limit("flood", g.tenants["flood"], clk.Now())
	g.mu.Unlock()
	if limit != 3 {
		t.Errorf("the flood's cap after a slow quiet start is %d, want 3", limit)
	}
	entered := make(chan struct{})
	go func() {
		if g.enter(ctx, "flood") == nil {
			close(entered)
		}
	}()
	for {
		g.mu.Lock()
		n := len(g.tenants["flood"].waiters)
		g.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	g.leave("flood")
	select {
	case <-entered:
		t.Fatal("the flood entered with 3 starts in progress")
	default:
	}
	g.leave("flood")
	<-entered
}
