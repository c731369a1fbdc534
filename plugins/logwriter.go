package plugins

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/store/clock"
)

// lineLogger logs each line written to it: go-plugin copies what a plugin
// writes to its os.Stdout and os.Stderr after Serve here. A plugin that
// floods its output cannot flood the host's log: past a burst of
// maxLineBurst lines, a stream is logged at linesPerSecond; the first line
// dropped is told by a "plugin output dropped" record, and how many were
// by the "plugin output resumed" record before the next line logged.
type lineLogger struct {
	log    *slog.Logger
	stream string
	clock  clock.Clock

	mu      sync.Mutex
	buf     []byte
	tokens  float64   // lines that may be logged now
	filled  time.Time // when tokens was last refilled
	dropped int       // lines dropped since the last one logged
}

// The rate at which a plugin's stream is logged.
const (
	maxLineBurst   = 1000
	linesPerSecond = 100
)

func newLineLogger(l *slog.Logger, stream string, clk clock.Clock) *lineLogger {
	return &lineLogger{log: l, stream: stream, clock: clk, tokens: maxLineBurst, filled: clk.Now()}
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
	now := w.clock.Now()
	if d := now.Sub(w.filled); d > 0 {
		w.tokens = min(maxLineBurst, w.tokens+d.Seconds()*linesPerSecond)
		w.filled = now
	}
	if w.tokens < 1 {
		if w.dropped == 0 {
			w.log.Warn("plugin output dropped", "stream", w.stream,
				"reason", "the plugin writes more than 100 lines a second")
		}
		w.dropped++
		return
	}
	w.tokens--
	if w.dropped > 0 {
		w.log.Warn("plugin output resumed", "stream", w.stream, "lines_dropped", w.dropped)
		w.dropped = 0
	}
	w.log.Info("plugin output", "stream", w.stream, "line", string(line))
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
