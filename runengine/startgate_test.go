package runengine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
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
		testwait.Until(t, fmt.Sprintf("%d callers waiting", n), func() bool {
			select {
			case who := <-entered:
				t.Fatalf("%s entered over the cap", who)
			default:
			}
			return waitUntil()
		})
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
	if err := testwait.Recv(t, errc, "the cancelled caller returned"); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled caller got %v, want context.Canceled", err)
	}
	var order []string
	for range 2 {
		g.leave("a")
		order = append(order, testwait.Recv(t, entered, "a waiting caller entered after a leave"))
	}
	if diff := cmp.Diff([]string{"first", "third"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	g.leave("a")
	g.leave("b")
	if g.busy != 0 || len(g.tenants) != 0 {
		t.Errorf("after all left: %d starts in progress, slots of %d tenants", g.busy, len(g.tenants))
	}
}

// TestStartGateLine: a start the engine makes (enterOr) takes a free slot
// at once, and over the cap waits in the same line as callers, in the
// order they came, without blocking: it is made once a slot is handed to
// it, and holds that slot until it leaves.
func TestStartGateLine(t *testing.T) {
	t.Parallel()
	g := newStartGate(1, 0, clock.Real{})
	ctx := context.Background()
	var made []string
	if !g.enterOr("a", func() { t.Error("a start with a free slot was queued") }) {
		t.Fatal("enterOr found no room in an empty gate")
	}
	entered := make(chan struct{})
	go func() {
		if g.enter(ctx, "a") == nil {
			close(entered)
		}
	}()
	testwait.Until(t, "a caller waits", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.tenants["a"].waiters) == 1
	})
	if g.enterOr("a", func() { made = append(made, "tick") }) {
		t.Fatal("enterOr went past the cap")
	}
	g.leave("a") // the caller first
	testwait.Recv(t, entered, "the caller that came first entered")
	if len(made) != 0 {
		t.Fatalf("made %v before the caller ahead of it left", made)
	}
	g.leave("a") // then the tick, made by this leave
	if diff := cmp.Diff([]string{"tick"}, made); diff != "" {
		t.Fatalf("made (-want +got):\n%s", diff)
	}
	g.leave("a")
	if g.busy != 0 || len(g.tenants) != 0 {
		t.Errorf("after all left: %d starts in progress, slots of %d tenants", g.busy, len(g.tenants))
	}
}

// TestStartGateForgetsIdleTenants: a thousand tenants passing the door once
// leave no slots behind, while one with a start in progress keeps its own.
func TestStartGateForgetsIdleTenants(t *testing.T) {
	t.Parallel()
	g := newStartGate(1, 2, clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	ctx := context.Background()
	if err := g.enter(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		tenant := fmt.Sprintf("ten_%d", i)
		if err := g.enter(ctx, tenant); err != nil {
			t.Fatalf("%s: %v", tenant, err)
		}
		g.leave(tenant)
	}
	if got := slices.Collect(maps.Keys(g.tenants)); !cmp.Equal(got, []string{"busy"}) {
		t.Errorf("slots kept for %v, want only the busy tenant's", got)
	}
	g.leave("busy")
	if len(g.tenants) != 0 || g.busy != 0 {
		t.Errorf("after all left: slots of %d tenants, %d starts in progress", len(g.tenants), g.busy)
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
		testwait.Until(t, fmt.Sprintf("%d of the flood's callers waiting", i+1), func() bool {
			select {
			case <-entered:
				t.Fatal("the flood entered over the fair cap beside the quiet tenant")
			default:
			}
			return waiters() == i+1
		})
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
	if i := testwait.Recv(t, entered, "the first waiting caller entered"); i != 0 {
		t.Fatalf("caller %d entered first", i)
	}
	if waiters() != 1 {
		t.Fatal("the second caller entered over the fair cap")
	}
	// Out of the window the flood is alone again: the next leave lets every
	// waiting caller in, and a new one goes in at once.
	clk.Advance(fairWindow)
	g.leave("flood")
	if i := testwait.Recv(t, entered, "the second waiting caller entered"); i != 1 {
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
	testwait.Until(t, "a caller of the flood waiting beside a tenant committing changes", func() bool {
		select {
		case <-entered:
			t.Fatal("the flood entered over the fair cap beside a tenant committing changes")
		default:
		}
		return waiters() == 1
	})
	clk.Advance(fairWindow)
	g.leave("flood")
	if i := testwait.Recv(t, entered, "the waiting caller entered once the window passed"); i != 2 {
		t.Fatalf("caller %d entered", i)
	}
}

// TestFairStartCapDefault holds a flooding tenant to GOMAXPROCS starts in
// progress beside another tenant by default (one per processor), and
// leaves a tenant alone uncapped.
func TestFairStartCapDefault(t *testing.T) {
	t.Parallel()
	cfg := Config{}.withDefaults()
	procs := runtime.GOMAXPROCS(0)
	if cfg.MaxStartingPerTenant != 0 {
		t.Fatalf("MaxStartingPerTenant defaults to %d, want 0 (no cap)", cfg.MaxStartingPerTenant)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := newStartGate(cfg.MaxStartingPerTenant, cfg.FairStartingPerTenant, clk)
	alone := 4 * procs
	for i := range alone {
		if !g.enterOr("flood", func() { t.Error("a start alone waited") }) {
			t.Fatalf("alone, start %d waited", i)
		}
	}
	for range alone {
		g.leave("flood")
	}
	clk.Advance(fairWindow) // the flood is alone again
	if !g.enterOr("quiet", func() { t.Error("the quiet tenant's start waited") }) {
		t.Fatal("the quiet tenant's start waited")
	}
	var admitted int
	for admitted < alone && g.enterOr("flood", func() {}) {
		admitted++
	}
	if admitted != procs {
		t.Errorf("beside another tenant the flood had %d starts in progress, want GOMAXPROCS (%d)", admitted, procs)
	}
}
