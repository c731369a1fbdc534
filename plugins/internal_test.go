package plugins

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	lo, hi := 250*time.Millisecond, 3*time.Second
	var got []time.Duration
	for streak := range 7 {
		got = append(got, backoff(lo, hi, streak))
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	if got := backoff(time.Second, time.Hour, 1000); got != time.Hour {
		t.Errorf("a long streak: %s, want the cap", got)
	}
}

func TestNormalizeInfo(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name string
		in   capability.Info
		file string
		want capability.Info
	}{
		{"prefixed", capability.Info{ID: "acme-erp", Name: "ACME"}, "x", capability.Info{ID: "plugin.acme-erp", Name: "ACME", Kind: capability.KindPlugin}},
		{"already prefixed", capability.Info{ID: "plugin.acme"}, "x", capability.Info{ID: "plugin.acme", Name: "acme", Kind: capability.KindPlugin}},
		{"named after the file", capability.Info{}, "erp.exe", capability.Info{ID: "plugin.erp", Name: "erp", Kind: capability.KindPlugin}},
		{"kind forced", capability.Info{ID: "b", Kind: capability.KindBuiltin}, "x", capability.Info{ID: "plugin.b", Name: "b", Kind: capability.KindPlugin}},
	} {
		t.Run(test.name, func(t *testing.T) {
			if diff := cmp.Diff(test.want, normalizeInfo(test.in, test.file)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	long := capability.Info{ID: "plugin." + string(make([]byte, 80))}
	if validateInfo(long) == nil {
		t.Error("an id over 80 characters passed")
	}
	if validateInfo(capability.Info{ID: "plugin.a", Capabilities: []string{" "}}) == nil {
		t.Error("an empty capability id passed")
	}
}

// TestValidateInfoAppEmits: a plugin's app may declare only events of its
// own. emit refuses a name in a namespace the workspace owns, yet an app
// that declared one loaded, and GET /v1/apps listed an event it could
// never emit.
func TestValidateInfoAppEmits(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, event, err string
	}{
		{"its own", "weather.changed", ""},
		{"no namespace", "changed", ""},
		{"a run's end", "process.run.completed", "app weather declares the event process.run.completed, but events named process.* are emitted only by the workspace itself; use your app's own namespace"},
		{"a built-in app's", "docs.document.validated", "app weather declares the event docs.document.validated, but events named docs.* are emitted only by the workspace itself; use your app's own namespace"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			info := capability.Info{ID: "plugin.weather", App: &capability.App{ID: "weather",
				Events: capability.Events{Emits: []string{"weather.checked", test.event}}}}
			got := ""
			if err := validateInfo(info); err != nil {
				got = err.Error()
			}
			if got != test.err {
				t.Errorf("validateInfo: %q, want %q", got, test.err)
			}
		})
	}
}

// lines collects the records a lineLogger writes.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lines) WithGroup(string) slog.Handler            { return l }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			l.mu.Lock()
			l.got = append(l.got, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func TestLineLogger(t *testing.T) {
	t.Parallel()
	h := &lines{}
	w := newLineLogger(slog.New(h), "stdout", clock.Real{})
	for _, chunk := range []string{"one\ntw", "o\r\n", "\n", "three", "\nfour"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, h.got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	big := make([]byte, maxLine+10)
	for i := range big {
		big[i] = 'x'
	}
	_, _ = w.Write(big)
	if n := len(h.got); n != 4 || len(h.got[3]) < maxLine {
		t.Errorf("a line over the limit was not logged in pieces: %d lines", n)
	}
}

// TestLineLoggerLimitsAFlood: past its burst a stream is logged at 100
// lines a second, and the lines dropped are counted.
func TestLineLoggerLimitsAFlood(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var dropped []int64
	h := &lines{}
	rec := slog.New(recordHook{Handler: h, fn: func(r slog.Record) {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "lines_dropped" {
				mu.Lock()
				dropped = append(dropped, a.Value.Int64())
				mu.Unlock()
			}
			return true
		})
	}})
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	w := newLineLogger(rec, "stdout", fc)
	flood := func(n int) {
		for range n {
			if _, err := w.Write([]byte("flood\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	flood(maxLineBurst + 500)
	if n := len(h.got); n != maxLineBurst {
		t.Errorf("%d lines logged of a burst of %d, want %d", n, maxLineBurst+500, maxLineBurst)
	}
	fc.Advance(time.Second)
	flood(linesPerSecond + 1)
	if n := len(h.got); n != maxLineBurst+linesPerSecond {
		t.Errorf("%d lines logged a second later, want %d", n, maxLineBurst+linesPerSecond)
	}
	fc.Advance(time.Hour) // the flood is over: the next line is logged, after the count
	flood(1)
	if n := len(h.got); n != maxLineBurst+linesPerSecond+1 {
		t.Errorf("%d lines logged after the flood, want %d", n, maxLineBurst+linesPerSecond+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]int64{500, 1}, dropped); diff != "" {
		t.Errorf("dropped counts logged (-want +got):\n%s", diff)
	}
}

// recordHook passes every record to fn, then to Handler.
type recordHook struct {
	slog.Handler
	fn func(slog.Record)
}

func (h recordHook) Handle(ctx context.Context, r slog.Record) error {
	h.fn(r)
	return h.Handler.Handle(ctx, r)
}
