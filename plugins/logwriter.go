package plugins

import (
	"bytes"
	"log/slog"
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
