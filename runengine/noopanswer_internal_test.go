package runengine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// heldCommits is a store whose commits, once armed, wait until release is
// closed (held counts those waiting): a commit in flight for as long as a
// test needs.
type heldCommits struct {
	store.Store
	armed   atomic.Bool
	held    atomic.Int32
	release chan struct{}
	once    sync.Once
}

func (s *heldCommits) Update(ctx context.Context, fn func(store.Txn) error) error {
	if s.armed.Load() {
		s.held.Add(1)
		<-s.release
	}
	return s.Store.Update(ctx, fn)
}

func (s *heldCommits) let() { s.once.Do(func() { close(s.release) }) }

// TestNoChangeAnswerWaitsForChangesInFlight: a command that changes
// nothing because a change of the run still being committed did it
// already (a second claim of a task whose claim is in flight) is answered
// once that change is durable, not at once: its answer tells of that
// change (the task assigned), and a read after the answer must see it.
// Before, the second claim was answered while the first was in flight,
// and a read right after it found the task unassigned.
func TestNoChangeAnswerWaitsForChangesInFlight(t *testing.T) {
	t.Parallel()
	st := &heldCommits{Store: memStore(t), release: make(chan struct{})}
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	eng, procs := schedEngine(t, st, clk, Config{})
	defer st.let()
	_, r := startNew(t, eng, procs, "ten_a", `{"name":"Look","trigger":{"type":"manual"},
		"steps":[{"key":"look","type":"human_task","config":{"title":"Look"}}]}`)
	ctx := context.Background()
	taskID := *r.Steps[0].TaskID
	claim := func(check func(*Task) error) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := eng.AssignTask(ctx, AssignTaskParams{Tenant: "ten_a", TaskID: taskID, Assignee: "usr_a", Via: AssignViaClaim, Actor: "usr_a",
				Check: check})
			done <- err
		}()
		return done
	}
	// handledBy says a claim's command is being handled by the run's
	// worker (which calls Check then); the worker handles the run's
	// commands one after the other.
	handled := make(chan struct{}, 2)
	handledBy := func(*Task) error { handled <- struct{}{}; return nil }
	st.armed.Store(true)
	first := claim(nil)
	testwait.Until(t, "the first claim's commit is in flight", func() bool { return st.held.Load() == 1 })
	second := claim(handledBy)
	testwait.Recv(t, handled, "the second claim handled by the worker")
	third := claim(handledBy)
	testwait.Recv(t, handled, "a third claim handled, once the worker is done with the second")
	select {
	case err := <-second:
		t.Fatalf("the second claim was answered (%v) while the claim it repeats was not yet durable", err)
	default:
	}
	st.armed.Store(false)
	st.let()
	for _, done := range []<-chan error{first, second, third} {
		if err := testwait.Recv(t, done, "a claim's answer"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := eng.GetTask(ctx, "ten_a", taskID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Assignee == nil || *got.Assignee != "usr_a" {
		t.Fatalf("assignee after both claims = %v, want usr_a", got.Assignee)
	}
}
