// Package logadapt lets go-plugin, which logs through hclog, log through a
// *slog.Logger on both sides of the plugin link.
package logadapt

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level hclog's Trace maps to.
const LevelTrace = slog.LevelDebug - 4

// Hclog returns an hclog.Logger that writes to l.
func Hclog(l *slog.Logger) hclog.Logger {
	return &logger{l: l}
}

type logger struct {
	l       *slog.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*logger)(nil)

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug, hclog.NoLevel:
		return slog.LevelDebug
	case hclog.Info:
		return slog.LevelInfo
	case hclog.Warn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (g *logger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	lvl := slogLevel(level)
	ctx := context.Background()
	if !g.l.Enabled(ctx, lvl) {
		return
	}
	if g.name != "" {
		args = append([]any{"logger", g.name}, args...)
	}
	g.l.Log(ctx, lvl, msg, args...)
}

func (g *logger) Trace(msg string, args ...any) { g.Log(hclog.Trace, msg, args...) }
func (g *logger) Debug(msg string, args ...any) { g.Log(hclog.Debug, msg, args...) }
func (g *logger) Info(msg string, args ...any)  { g.Log(hclog.Info, msg, args...) }
func (g *logger) Warn(msg string, args ...any)  { g.Log(hclog.Warn, msg, args...) }
func (g *logger) Error(msg string, args ...any) { g.Log(hclog.Error, msg, args...) }

func (g *logger) enabled(level hclog.Level) bool {
	return g.l.Enabled(context.Background(), slogLevel(level))
}

func (g *logger) IsTrace() bool { return g.enabled(hclog.Trace) }
func (g *logger) IsDebug() bool { return g.enabled(hclog.Debug) }
func (g *logger) IsInfo() bool  { return g.enabled(hclog.Info) }
func (g *logger) IsWarn() bool  { return g.enabled(hclog.Warn) }
func (g *logger) IsError() bool { return g.enabled(hclog.Error) }

func (g *logger) ImpliedArgs() []any { return g.implied }

func (g *logger) With(args ...any) hclog.Logger {
	return &logger{
		l:       g.l.With(args...),
		name:    g.name,
		implied: append(append([]any(nil), g.implied...), args...),
	}
}

func (g *logger) Name() string { return g.name }

func (g *logger) Named(name string) hclog.Logger {
	if g.name != "" {
		name = g.name + "." + name
	}
	return g.ResetNamed(name)
}

func (g *logger) ResetNamed(name string) hclog.Logger {
	return &logger{l: g.l, name: name, implied: g.implied}
}

// SetLevel does nothing: the slog handler decides what is logged.
func (g *logger) SetLevel(hclog.Level) {}

// GetLevel reports the lowest level the slog handler logs.
func (g *logger) GetLevel() hclog.Level {
	for _, level := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if g.enabled(level) {
			return level
		}
	}
	return hclog.Off
}

func (g *logger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(g.StandardWriter(opts), "", 0)
}

func (g *logger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return writerFunc(func(p []byte) (int, error) {
		g.Log(level, strings.TrimRight(string(p), "\n"))
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// HclogJSON returns slog handler options whose JSON output go-plugin's host
// reads as hclog lines: "@level", "@message" and "@timestamp" keys, with the
// timestamp in hclog's layout. A plugin logging this way to its stderr has
// its lines relayed into the host's log at their own levels.
func HclogJSON(level slog.Leveler) *slog.HandlerOptions {
	return &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
			case slog.LevelKey:
				lvl, _ := a.Value.Any().(slog.Level)
				return slog.String("@level", hclogLevelName(lvl))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	}
}

func hclogLevelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	default:
		return "error"
	}
}
