package badgerstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// logger adapts a *slog.Logger to badger.Logger, so Badger writes to the
// host's log instead of its own INFO-level stderr logger.
type logger struct {
	l *slog.Logger
}

var _ badger.Logger = logger{}

func newLogger(l *slog.Logger) logger {
	return logger{l: l.With(slog.String("component", "badger"))}
}

func (a logger) log(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	a.l.Log(ctx, level, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Errorf logs at slog.LevelError.
func (a logger) Errorf(format string, args ...any) { a.log(slog.LevelError, format, args) }

// Warningf logs at slog.LevelWarn.
func (a logger) Warningf(format string, args ...any) { a.log(slog.LevelWarn, format, args) }

// Infof logs at slog.LevelInfo.
func (a logger) Infof(format string, args ...any) { a.log(slog.LevelInfo, format, args) }

// Debugf logs at slog.LevelDebug.
func (a logger) Debugf(format string, args ...any) { a.log(slog.LevelDebug, format, args) }
