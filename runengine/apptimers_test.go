package runengine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// timerLog records the app timers a handler saw.
type timerLog struct {
	mu    sync.Mutex
	seen  []string
	fails int // fail this many calls first
}

func (l *timerLog) handler(st store.Store) runengine.AppTimerFunc {
	return func(ctx context.Context, t runengine.AppTimer) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.fails > 0 {
			l.fails--
			return errs.Unavailablef("not now")
		}
		l.seen = append(l.seen, t.Tenant+"/"+t.Kind+"/"+t.Token+"@"+t.At.UTC().Format(time.RFC3339))
		return st.Update(ctx, func(tx store.Txn) error {
			if err := t.Clear(tx); err != nil {
				return err
			}
			return tx.Set(store.Key(t.Tenant, "fired", t.Token), nil)
		})
	}
}

func (l *timerLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func TestAppTimers(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		fails  int
		cancel bool
		moves  []time.Duration // clock moves after setting the timer
		want   []string
	}{
		{name: "not before it is due", moves: []time.Duration{59 * time.Minute}, want: nil},
		{name: "once when due", moves: []time.Duration{time.Hour, time.Hour},
			want: []string{tenant + "/test.kind/tok_1@2026-03-02T10:00:00Z"}},
		{name: "cancelled in a transaction", cancel: true, moves: []time.Duration{2 * time.Hour}, want: nil},
		{name: "a failure is retried later", fails: 1,
			moves: []time.Duration{time.Hour, runengine.AppTimerRetry},
			want:  []string{tenant + "/test.kind/tok_1@2026-03-02T10:01:00Z"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			log := &timerLog{fails: test.fails}
			b.eng.HandleTimers("test.kind", log.handler(b.st))
			at := t0.Add(time.Hour)
			ctx := context.Background()
			if err := b.st.Update(ctx, func(tx store.Txn) error {
				return b.eng.SetTimer(tx, tenant, "test.kind", "tok_1", at)
			}); err != nil {
				t.Fatal(err)
			}
			if test.cancel {
				if err := b.st.Update(ctx, func(tx store.Txn) error {
					return b.eng.CancelTimer(tx, tenant, "test.kind", "tok_1", at)
				}); err != nil {
					t.Fatal(err)
				}
			}
			for i, d := range test.moves {
				b.advance(d)
				if i == 0 && test.fails > 0 {
					waitFor(t, "the failure to be put off", func() bool {
						log.mu.Lock()
						defer log.mu.Unlock()
						return log.fails == 0 && dueKeys(t, b.st) == 1 && !hasDue(t, b.st, at)
					})
				}
			}
			if test.want != nil {
				waitFor(t, "the timer to fire", func() bool { return len(log.got()) == len(test.want) })
			}
			// Wait until the due index is empty (or holds only a timer not yet
			// due), then compare.
			waitFor(t, "the due index to settle", func() bool { return test.want == nil || dueKeys(t, b.st) == 0 })
			if diff := cmp.Diff(test.want, log.got()); diff != "" {
				t.Errorf("fired (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppTimerSurvivesRestart sets a timer, closes the engine, and opens a
// new one on the same store after the timer's time: it fires then.
func TestAppTimerSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := t0.Add(time.Hour)
	if err := b.st.Update(context.Background(), func(tx store.Txn) error {
		return b.eng.SetTimer(tx, tenant, "test.kind", "tok_r", at)
	}); err != nil {
		t.Fatal(err)
	}
	b.eng.Close()
	b.advance(2 * time.Hour)
	log := &timerLog{}
	eng, err := runengine.New(runengine.Config{Store: b.st, Clock: b.clk, Capabilities: b.reg, Processes: b.procs})
	if err != nil {
		t.Fatal(err)
	}
	eng.HandleTimers("test.kind", log.handler(b.st))
	if err := eng.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	waitFor(t, "the timer after the restart", func() bool { return len(log.got()) == 1 })
}

func dueKeys(t *testing.T, st store.Store) int {
	t.Helper()
	n := 0
	if err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "due"), KeysOnly: true},
			func(_, _ []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func hasDue(t *testing.T, st store.Store, at time.Time) bool {
	t.Helper()
	found := false
	if err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: store.Key(store.System, "due", at.UnixNano()), KeysOnly: true},
			func(_, _ []byte) error { found = true; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestAppTimerEnds: a timer whose handler does not clear it, and one of a
// kind nothing handles, leave the due index once due.
func TestAppTimerEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	calls := 0
	b.eng.HandleTimers("test.lazy", func(context.Context, runengine.AppTimer) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil
	})
	at := t0.Add(time.Minute)
	if err := b.st.Update(context.Background(), func(tx store.Txn) error {
		if err := b.eng.SetTimer(tx, tenant, "test.lazy", "tok", at); err != nil {
			return err
		}
		return b.eng.SetTimer(tx, tenant, "test.nobody", "tok", at)
	}); err != nil {
		t.Fatal(err)
	}
	if n := dueKeys(t, b.st); n != 2 {
		t.Fatalf("%d due keys", n)
	}
	b.advance(time.Minute)
	waitFor(t, "both timers to end", func() bool { return dueKeys(t, b.st) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("the handler ran %d times", calls)
	}
}
