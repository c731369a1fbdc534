package plugins

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// lineLogger logs each line written to it: go-plugin copies what a plugin
// writes to its os.Stdout and os.Stderr after Serve here, so nothing a
// plugin prints is lost.
type lineLogger struct {
	log    *slog.Logger
	stream string

	mu  sync.Mutex
	buf []byte
}

func newLineLogger(l *slog.Logger, stream string) *lineLogger {
	return &lineLogger{log: l, stream: stream}
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
