package plugins

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/store/clock"
)

// lineLogger logs each line written to it: go-plugin copies what a plugin
// writes to its os.Stdout and os.Stderr after Serve here. Its lines are
// limited by a budget, so a plugin that floods its output cannot flood the
// host's log.
type lineLogger struct {
	log    *slog.Logger
	stream string
	budget *budget

	mu  sync.Mutex
	buf []byte
}

func newLineLogger(l *slog.Logger, stream string, clk clock.Clock) *lineLogger {
	return &lineLogger{log: l, stream: stream, budget: newBudget(clk)}
}

// maxLine bounds a buffered line; longer lines are logged in pieces.
const maxLine = 64 << 10

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	if w.budget.spend(func(msg string, args ...any) { w.log.Warn(msg, append(args, "stream", w.stream)...) }) {
		w.log.Info("plugin output", "stream", w.stream, "line", string(line))
	}
}

// The rate at which a plugin's output is logged: each stream (stdout,
// stderr after Serve, and the log lines go-plugin relays from the
// process's own stderr) after a burst of maxLineBurst lines.
const (
	maxLineBurst   = 1000
	linesPerSecond = 100
)

// budget is a token bucket of log lines: maxLineBurst lines, refilled at
// linesPerSecond on its clock. The first line it drops is told by a
// "plugin output dropped" record, and how many it dropped by a "plugin
// output resumed" record before the next line it lets through.
type budget struct {
	clock clock.Clock

	mu      sync.Mutex
	tokens  float64
	filled  time.Time
	dropped int
}

func newBudget(clk clock.Clock) *budget {
	return &budget{clock: clk, tokens: maxLineBurst, filled: clk.Now()}
}

// spend reports whether a line may be logged, telling warn (a logger's
// Warn) when lines start being dropped and when they resume.
func (b *budget) spend(warn func(msg string, args ...any)) bool {
	b.mu.Lock()
	now := b.clock.Now()
	if d := now.Sub(b.filled); d > 0 {
		b.tokens = min(maxLineBurst, b.tokens+d.Seconds()*linesPerSecond)
		b.filled = now
	}
	if b.tokens < 1 {
		b.dropped++
		first := b.dropped == 1
		b.mu.Unlock()
		if first {
			warn("plugin output dropped", "reason", "the plugin writes more than 100 lines a second")
		}
		return false
	}
	b.tokens--
	dropped := b.dropped
	b.dropped = 0
	b.mu.Unlock()
	if dropped > 0 {
		warn("plugin output resumed", "lines_dropped", dropped)
	}
	return true
}

// budgetHandler passes the records of a budget to Handler: go-plugin logs
// the lines of a plugin's own stderr through it. Trace records pass
// without spending it.
type budgetHandler struct {
	slog.Handler
	budget *budget
}

func (h budgetHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelDebug {
		// go-plugin's own trace (one record per chunk of stdout it
		// relays) would spend the budget of the plugin's log lines.
		return h.Handler.Handle(ctx, r)
	}
	if !h.budget.spend(func(msg string, args ...any) {
		w := slog.NewRecord(r.Time, slog.LevelWarn, msg, 0)
		w.Add(args...)
		_ = h.Handler.Handle(ctx, w)
	}) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h budgetHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return budgetHandler{Handler: h.Handler.WithAttrs(as), budget: h.budget}
}

func (h budgetHandler) WithGroup(name string) slog.Handler {
	return budgetHandler{Handler: h.Handler.WithGroup(name), budget: h.budget}
}

// tailWriter keeps the last bytes written to it (at most its size): what a
// plugin wrote to its stderr before a failed handshake says why it failed.
type tailWriter struct {
	mu   sync.Mutex
	size int
	buf  []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.size; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes, lines joined by " / ".
func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(w.buf)), "\n", " / ")), " ")
}
