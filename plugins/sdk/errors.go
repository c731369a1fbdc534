package sdk

import (
	"time"

	"github.com/bas-platform/bas/internal/errs"
)

// The error kinds a provider marks its errors with; they are bas's own kinds,
// so errors.Is(err, bas.ErrNotFound) holds in the host for an error marked
// sdk.NotFound in the plugin. Mark an error with cockroachdb/errors'
// errors.Mark(err, sdk.Unavailable), or build one with the functions below.
var (
	// NotFound: the thing the call names does not exist.
	NotFound = errs.NotFound
	// Conflict: the call clashes with the current state.
	Conflict = errs.Conflict
	// Invalid: the arguments are wrong; the call must not be retried as is.
	Invalid = errs.Invalid
	// Forbidden: the provider's credentials may not do this.
	Forbidden = errs.Forbidden
	// RateLimited: the backing system asks to slow down.
	RateLimited = errs.RateLimited
	// Unavailable: the backing system is down; the engine retries the call.
	Unavailable = errs.Unavailable
)

// Violation is one reason arguments are invalid: where (Loc, e.g.
// []any{"args", "number"}), a sentence (Msg) and a type ("missing",
// "value_error" ...).
type Violation struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// NotFoundf returns a NotFound error whose message callers may see.
func NotFoundf(format string, args ...any) error { return errs.NotFoundf(format, args...) }

// Conflictf returns a Conflict error whose message callers may see.
func Conflictf(format string, args ...any) error { return errs.Conflictf(format, args...) }

// Forbiddenf returns a Forbidden error whose message callers may see.
func Forbiddenf(format string, args ...any) error { return errs.Forbiddenf(format, args...) }

// Unavailablef returns an Unavailable error whose message callers may see.
func Unavailablef(format string, args ...any) error { return errs.Unavailablef(format, args...) }

// Invalidf returns an Invalid error with one violation at loc of type typ.
func Invalidf(loc []any, typ, format string, args ...any) error {
	return errs.Invalidf(loc, typ, format, args...)
}

// Validation returns an Invalid error carrying every violation, or nil when
// there are none.
func Validation(vs ...Violation) error {
	out := make([]errs.Violation, len(vs))
	for i, v := range vs {
		out[i] = errs.Violation(v)
	}
	return errs.Validation(out...)
}

// RateLimitedAfter returns a RateLimited error that says when to retry.
func RateLimitedAfter(d time.Duration) error { return errs.RateLimitedAfter(d) }
