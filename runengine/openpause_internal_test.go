package runengine

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// lateToPauses is a store whose read of the paused processes, once armed,
// comes after the scheduler's first look at the due index and what that
// look started has landed, if the scheduler looks before it (as it may
// when Open starts the scheduler first): the order a loaded machine may
// give.
type lateToPauses struct {
	store.Store
	mu     sync.Mutex
	armed  bool
	once   sync.Once
	looked chan struct{} // closed at the first look at the due index, once armed
	landed func() bool   // whether what the look started has landed
	// committed is signalled after each commit: landed is asked again.
	committed chan struct{}
}

func (s *lateToPauses) Update(ctx context.Context, fn func(store.Txn) error) error {
	err := s.Store.Update(ctx, fn)
	select {
	case s.committed <- struct{}{}:
	default:
	}
	return err
}

func (s *lateToPauses) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(&lateReader{Reader: r, s: s}) })
}

type lateReader struct {
	store.Reader
	s *lateToPauses
}

var (
	duePrefix    = store.Key(store.System, "due")
	pausedPrefix = store.Key(store.System, "proc-paused")
)

func (r *lateReader) Scan(opts store.ScanOptions, fn func(key, value []byte) error) error {
	s := r.s
	s.mu.Lock()
	armed, looked, landed := s.armed, s.looked, s.landed
	s.mu.Unlock()
	if armed {
		switch {
		case bytes.Equal(opts.Prefix, duePrefix):
			s.once.Do(func() { close(looked) })
		case bytes.Equal(opts.Prefix, pausedPrefix):
			t := time.NewTimer(2 * time.Second)
			defer t.Stop()
			select {
			case <-looked: // the scheduler looked first: let what it started land
				for !landed() {
					select {
					case <-t.C:
						return r.Reader.Scan(opts, fn)
					case <-s.committed:
					}
				}
			case <-t.C: // the scheduler did not look before the pauses were read
			}
		}
	}
	return r.Reader.Scan(opts, fn)
}

// TestOpenKnowsPausesBeforeTimers: a run of a paused process whose timer
// came due while the server was down pauses when the engine opens, keeping
// the timer for its resume, instead of taking its next step: the paused
// processes are read before the scheduler and the workers start. Before,
// Open read them after starting both, and the first look could fire the
// timer into a run not known to be paused.
func TestOpenKnowsPausesBeforeTimers(t *testing.T) {
	t.Parallel()
	st := &lateToPauses{Store: memStore(t), committed: make(chan struct{}, 1)}
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, st, clk, Config{})
	def, r := startNew(t, eng, procs, "ten_a", `{"name":"Two waits","trigger":{"type":"manual"},
		"steps":[{"key":"first","type":"wait","config":{"duration":"1h"}},{"key":"second","type":"wait","config":{"duration":"24h"}}]}`)
	ctx := context.Background()
	if _, err := eng.PauseProcess(ctx, "ten_a", def.ID); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour) // the first wait's timer is due while the server is down

	eng, _ = engineOn(t, st, clk, Config{})
	get := func() *Run {
		got, err := eng.GetRun(ctx, "ten_a", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	st.mu.Lock()
	st.armed, st.looked = true, make(chan struct{})
	st.landed = func() bool { g := get(); return g.Status == RunPaused || g.Steps[1].Status != StepPending }
	st.mu.Unlock()
	if err := eng.Open(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the run pauses holding its timer", func() bool {
		g := get()
		return g.Status == RunPaused || g.Steps[1].Status != StepPending
	})
	got := get()
	if got.Status != RunPaused || got.Steps[1].Status != StepPending || got.Paused == nil || len(got.Paused.Timers) != 1 {
		t.Fatalf("run of a paused process after the reopen: status %s, step second %s, pause %+v; want paused, pending, one timer held",
			got.Status, got.Steps[1].Status, got.Paused)
	}
	if _, err := eng.ResumeProcess(ctx, "ten_a", def.ID, "usr"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the resume applies the held timer", func() bool { return get().Steps[1].Status == StepWaiting })
}
