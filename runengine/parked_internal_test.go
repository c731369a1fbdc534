package runengine

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// keyReads counts the reads of one key through its store.
type keyReads struct {
	store.Store
	key   []byte
	reads atomic.Int64
}

func (s *keyReads) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.Store.View(ctx, func(r store.Reader) error { return fn(&keyReader{r, s}) })
}

type keyReader struct {
	store.Reader
	s *keyReads
}

func (r *keyReader) Get(key []byte) ([]byte, error) {
	if bytes.Equal(key, r.s.key) {
		r.s.reads.Add(1)
	}
	return r.Reader.Get(key)
}

// logCount counts the records of a logger whose message has a part.
type logCount struct {
	part string
	mu   sync.Mutex
	n    int
}

func (h *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCount) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logCount) WithGroup(string) slog.Handler            { return h }
func (h *logCount) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.part) {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}

func (h *logCount) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// A timer whose run record cannot be decoded is logged once and retried
// with backoff on the engine's clock, its due key kept; once the record is
// repaired the timer fires. Before, every look from the first due key
// read the run again, about five times a second, and nothing was logged.
func TestCorruptRunTimerIsLoggedAndBacksOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, clk, r := closedWithWaitingRun(t)
	key := runs.RecordKey("ten_a", r.ID)
	var good []byte
	err := base.Update(ctx, func(tx store.Txn) error {
		var err error
		if good, err = tx.Get(key); err != nil {
			return err
		}
		return tx.Set(key, []byte(`{"id":`))
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)

	st := &keyReads{Store: base, key: key}
	logs := &logCount{part: "run record cannot be decoded"}
	eng, _ := schedEngine(t, st, clk, Config{Logger: slog.New(logs)})
	s := eng.sched
	// looks waits for n more looks from the first due key, the looks that
	// find a timer handed out before.
	looks := func(n int, what string) { t.Helper(); fullLooks(t, s, n, what) }
	testwait.Until(t, "the corrupt run's timer logged", func() bool { return logs.count() == 1 })
	read := st.reads.Load()
	looks(3, "three looks while the timer waits for its retry")
	if got := st.reads.Load(); got != read {
		t.Errorf("the corrupt run was read %d more times before its retry; want 0", got-read)
	}

	clk.Advance(parkFirst)
	looks(1, "a look past the first retry's time")
	// The retry reads the run twice (the look reads it ahead, and the
	// worker again when that copy cannot be decoded), then parks the key
	// again: the reads are counted once it is parked.
	testwait.Until(t, "the retry parked the key again", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.parked {
			if p.delay == 2*parkFirst {
				return true
			}
		}
		return false
	})
	if got := st.reads.Load(); got == read {
		t.Error("the retry did not read the run")
	}
	read = st.reads.Load()
	looks(1, "a look after the retry")
	clk.Advance(parkFirst) // the second retry waits twice as long
	looks(3, "three looks before the second retry's time")
	if got := st.reads.Load(); got != read {
		t.Errorf("the corrupt run was read %d more times before its second retry; want 0", got-read)
	}
	if got := logs.count(); got != 1 {
		t.Errorf("logged %d times; want once", got)
	}

	if err := base.Update(ctx, func(tx store.Txn) error { return tx.Set(key, good) }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(parkFirst)
	testwait.Until(t, "the repaired run's timer fires", func() bool {
		s.wake()
		got, err := eng.GetRun(ctx, "ten_a", r.ID)
		return err == nil && got.Status == RunCompleted
	})
	testwait.Until(t, "the parked key forgotten", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.parked) == 0
	})
}

// Each time a timer's key is parked again its wait doubles, from
// parkFirst up to parkMost and no further, and a look steps over the key
// until the wait ends on the engine's clock.
func TestParkedKeyWaitsDoubleUpToParkMost(t *testing.T) {
	t.Parallel()
	logs := &logCount{part: "run record cannot be decoded"}
	eng, _ := memEngine(t, Config{Logger: slog.New(logs)})
	s := eng.sched
	key := []byte("due-key-of-a-corrupt-run")
	var got []time.Duration
	for range 14 {
		s.park("ten_a", "run_x", key, errCorruptRun)
		s.mu.Lock()
		got = append(got, s.parked[string(key)].delay)
		s.mu.Unlock()
	}
	var want []time.Duration
	for d := parkFirst; d < parkMost; d *= 2 {
		want = append(want, d)
	}
	want = append(want, parkMost, parkMost)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the waits of a key parked again and again (-want +got):\n%s", diff)
	}
	now := eng.clock.Now()
	s.mu.Lock()
	steps := []bool{s.isParked(key, now.Add(parkMost-time.Nanosecond)), s.isParked(key, now.Add(parkMost))}
	s.mu.Unlock()
	if diff := cmp.Diff([]bool{true, false}, steps); diff != "" {
		t.Errorf("a look steps over the key just before its wait ends, and not at its end (-want +got):\n%s", diff)
	}
	if got := logs.count(); got != 1 {
		t.Errorf("logged %d times; want once", got)
	}
}

// corruptRunEngine corrupts the record of a run waiting an hour, with
// clock at advance past its start, and opens an engine over it that counts
// the record's reads and the log lines of corrupt records.
func corruptRunEngine(t *testing.T, advance time.Duration) (*Engine, *keyReads, *logCount, *Run) {
	t.Helper()
	base, clk, r := closedWithWaitingRun(t)
	key := runs.RecordKey("ten_a", r.ID)
	if err := base.Update(context.Background(), func(tx store.Txn) error { return tx.Set(key, []byte(`{"id":`)) }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(advance)
	st := &keyReads{Store: base, key: key}
	logs := &logCount{part: "run record cannot be decoded"}
	eng, _ := schedEngine(t, st, clk, Config{Logger: slog.New(logs)})
	return eng, st, logs, r
}

// fullLooks waits for n more looks of s from the first due key.
func fullLooks(t *testing.T, s *scheduler, n int, what string) {
	t.Helper()
	for range n {
		s.mu.Lock()
		was := s.fullEnded
		s.mu.Unlock()
		s.wake()
		testwait.Until(t, what, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.fullEnded.After(was)
		})
	}
}

// parkedKeys are the keys s steps over.
func parkedKeys(s *scheduler) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.parked))
}

// A parked timer's key deleted by another path than its commit (here
// straight in the store, as a cancel or a removal of the run would) is
// forgotten at its retry: before, it stayed in memory for good.
func TestParkedKeyForgottenWhenDeletedElsewhere(t *testing.T) {
	t.Parallel()
	eng, _, logs, r := corruptRunEngine(t, 2*time.Hour)
	s := eng.sched
	testwait.Until(t, "the corrupt run's timer logged", func() bool { return logs.count() == 1 })
	keys, _ := runTimerKeys(t, eng.st, r.ID)
	if diff := cmp.Diff([]string{string(keys[0])}, parkedKeys(s)); diff != "" {
		t.Fatalf("parked (-want +got):\n%s", diff)
	}
	if err := eng.st.Update(context.Background(), func(tx store.Txn) error { return tx.Delete(keys[0]) }); err != nil {
		t.Fatal(err)
	}
	fullLooks(t, s, 2, "looks before the retry")
	if got := parkedKeys(s); len(got) != 1 {
		t.Errorf("a key was forgotten before its retry: %d parked", len(got))
	}
	eng.clock.(*clock.Fake).Advance(parkFirst)
	fullLooks(t, s, 1, "a look at the retry")
	if got := parkedKeys(s); len(got) != 0 {
		t.Errorf("the deleted key is still parked: %q", got)
	}
}

// A command forwarded by another cluster node (a due key of the inbox)
// for a run whose record cannot be decoded is parked as a timer is:
// logged once, stepped over until its retry, and forgotten with its key.
// Before, every look handed it out again, read the run, and said nothing.
func TestForwardedCommandOfCorruptRunIsParked(t *testing.T) {
	t.Parallel()
	eng, st, logs, r := corruptRunEngine(t, 0) // the run's own timer is an hour away
	s := eng.sched
	raw, err := json.Marshal(inboxCommand{Kind: cmdCancel, Tenant: "ten_a", RunID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	inbox := dueKey(eng.clock.Now(), "ten_a", r.ID, inboxPrefix+"inb_1")
	if err := st.Update(context.Background(), func(tx store.Txn) error { return tx.Set(inbox, raw) }); err != nil {
		t.Fatal(err)
	}
	s.wake()
	testwait.Until(t, "the forwarded command's corrupt run logged", func() bool { return logs.count() == 1 })
	if diff := cmp.Diff([]string{string(inbox)}, parkedKeys(s)); diff != "" {
		t.Fatalf("parked (-want +got):\n%s", diff)
	}
	read := st.reads.Load()
	fullLooks(t, s, 3, "three looks while the command waits for its retry")
	if got := st.reads.Load(); got != read {
		t.Errorf("the corrupt run was read %d more times before the retry; want 0", got-read)
	}
	if got := logs.count(); got != 1 {
		t.Errorf("logged %d times; want once", got)
	}

	if err := st.Update(context.Background(), func(tx store.Txn) error { return tx.Delete(inbox) }); err != nil {
		t.Fatal(err)
	}
	eng.clock.(*clock.Fake).Advance(parkFirst)
	fullLooks(t, s, 1, "a look at the retry")
	if got := parkedKeys(s); len(got) != 0 {
		t.Errorf("the deleted inbox key is still parked: %q", got)
	}
}
