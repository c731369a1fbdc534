package badgerstore

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// records is a slog.Handler that keeps what it is given.
type records struct {
	mu    sync.Mutex
	level slog.Level
	attrs []slog.Attr
	recs  *[]record
}

type record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func newRecords(level slog.Level) *records { return &records{level: level, recs: new([]record)} }

func (h *records) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *records) Handle(_ context.Context, r slog.Record) error {
	rec := record{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.recs = append(*h.recs, rec)
	return nil
}

func (h *records) WithAttrs(as []slog.Attr) slog.Handler {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &records{level: h.level, attrs: append(slices.Clone(h.attrs), as...), recs: h.recs}
}

func (h *records) WithGroup(string) slog.Handler { return h }

func (h *records) all() []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.recs)
}

func TestLoggerMapsLevels(t *testing.T) {
	t.Parallel()
	h := newRecords(slog.LevelDebug)
	l := newLogger(slog.New(h))
	l.Debugf("debug %d", 1)
	l.Infof("info %s\n", "two")
	l.Warningf("warning")
	l.Errorf("error: %v", "boom")
	badger := map[string]string{"component": "badger"}
	want := []record{
		{slog.LevelDebug, "debug 1", badger},
		{slog.LevelInfo, "info two", badger},
		{slog.LevelWarn, "warning", badger},
		{slog.LevelError, "error: boom", badger},
	}
	if diff := cmp.Diff(want, h.all()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Below the handler's level nothing is formatted or logged.
	h = newRecords(slog.LevelWarn)
	l = newLogger(slog.New(h))
	l.Debugf("debug")
	l.Infof("info")
	l.Warningf("warning")
	if got := len(h.all()); got != 1 {
		t.Errorf("a Warn handler got %d records, want 1", got)
	}
}

func TestBadgerLogsThroughLogger(t *testing.T) {
	t.Parallel()
	h := newRecords(slog.LevelDebug)
	s, err := Open(Options{Dir: t.TempDir(), Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	recs := h.all()
	if len(recs) == 0 {
		t.Fatal("opening and closing a store logged nothing")
	}
	for _, r := range recs {
		if r.Attrs["component"] != "badger" {
			t.Errorf("record %+v lacks component=badger", r)
		}
	}
}

func TestCloseWaitsForTransactionsInFlight(t *testing.T) {
	t.Parallel()
	s, err := Open(Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(t.Context(), func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	inView := make(chan struct{})
	release := make(chan struct{})
	viewErr := make(chan error, 1)
	go func() {
		viewErr <- s.View(t.Context(), func(r store.Reader) error {
			close(inView)
			<-release
			// The database must still be open: Close is waiting for us.
			_, err := r.Get([]byte("k"))
			if err != nil {
				return err
			}
			return r.Scan(store.ScanOptions{}, func(_, _ []byte) error { return nil })
		})
	}()
	testwait.Recv(t, inView, "the View began")
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Wait until Close has begun (it refuses new work from then on).
	testwait.Until(t, "Close began", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closed
	})
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a View was in flight", err)
	default:
	}
	if err := s.View(t.Context(), func(store.Reader) error { return nil }); err == nil {
		t.Error("a View begun after Close began succeeded")
	}
	close(release)
	if err := testwait.Recv(t, viewErr, "the View in flight during Close returned"); err != nil {
		t.Errorf("the View in flight during Close: %v", err)
	}
	if err := testwait.Recv(t, closed, "Close returned once the View did"); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestGCSchedule(t *testing.T) {
	t.Parallel()
	h := newRecords(slog.LevelDebug)
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(Options{Dir: t.TempDir(), Logger: slog.New(h), Clock: fake, GCInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	waitTimer := func() {
		t.Helper()
		testwait.Until(t, "the GC loop armed its timer", func() bool { return fake.Timers() > 0 })
	}
	gcRounds := func() int {
		n := 0
		for _, r := range h.all() {
			if r.Msg == "badgerstore: value log GC" {
				n++
			}
		}
		return n
	}
	for round := 1; round <= 2; round++ {
		waitTimer()
		if got := gcRounds(); got != round-1 {
			t.Fatalf("before round %d: %d GC rounds ran, want %d", round, got, round-1)
		}
		fake.Advance(59 * time.Second)
		if got := fake.Timers(); got != 1 {
			t.Fatalf("the GC timer fired before its interval")
		}
		fake.Advance(time.Second)
		waitTimer() // the loop has run GC and armed the next timer
		if got := gcRounds(); got != round {
			t.Fatalf("after round %d: %d GC rounds ran, want %d", round, got, round)
		}
	}
	// Close stops the loop (or it would wait forever for it).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fake.Timers(); got != 0 {
		t.Errorf("%d timers left after Close, want 0", got)
	}
}

func TestGCScheduleOff(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, opts := range []Options{
		{Dir: t.TempDir(), GCInterval: -1, Clock: fake},
		{InMemory: true, Clock: fake},
	} {
		opts.Logger = slog.New(slog.DiscardHandler)
		s, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := fake.Timers(); got != 0 {
			t.Errorf("Open(%+v) armed %d timers, want none", opts, got)
		}
		if n, err := s.RunGC(t.Context()); n != 0 || err != nil {
			t.Errorf("RunGC = %d, %v; want 0, nil", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunGC(t *testing.T) {
	t.Parallel()
	s, err := Open(Options{Dir: t.TempDir(), GCInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.RunGC(t.Context()); n != 0 || err != nil {
		t.Errorf("RunGC of an empty store = %d, %v; want 0, nil", n, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.RunGC(ctx); err == nil {
		t.Error("RunGC with a cancelled context succeeded")
	}
}

// TestSetKeptHoldsTheValue checks that SetKept copies the key but hands the
// value to Badger as it is (nothing of it in the transaction's slab), and
// that the value is what the store then holds.
func TestSetKeptHoldsTheValue(t *testing.T) {
	t.Parallel()
	s, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	val := slices.Repeat([]byte("v"), 2000)
	err = s.Update(t.Context(), func(tx store.Txn) error {
		w := tx.(*writer)
		key := []byte("k1")
		if err := store.SetKept(tx, key, val); err != nil {
			return err
		}
		if got := len(w.slab); got != len(key) {
			t.Errorf("the slab holds %d bytes after SetKept, want %d (the key alone)", got, len(key))
		}
		copy(key, "k2") // the key was copied
		if err := w.SetKept(nil, val); err == nil {
			t.Error("SetKept of an empty key: no error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(t.Context(), func(r store.Reader) error {
		got, err := r.Get([]byte("k1"))
		if err == nil && string(got) != string(val) {
			t.Errorf("k1 holds %d bytes, want the %d set", len(got), len(val))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTablesOfOneSize checks that Open asks Badger for tables of 2 MiB at
// every level (on disk and in memory), so that a compaction deep in a large
// tree builds its tables in buffers of 4 MiB, not 16 (see the package doc,
// Memory on a small machine).
func TestTablesOfOneSize(t *testing.T) {
	type sizes struct{ BaseTableSize, TableSizeMultiplier int64 }
	for _, o := range []Options{{Dir: t.TempDir()}, {InMemory: true}} {
		bo := o.withDefaults().badgerOptions()
		got := sizes{bo.BaseTableSize, int64(bo.TableSizeMultiplier)}
		if diff := cmp.Diff(sizes{2 << 20, 1}, got); diff != "" {
			t.Errorf("InMemory %v: table sizes (-want +got):\n%s", o.InMemory, diff)
		}
	}
}
