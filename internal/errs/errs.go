// Package errs holds the error kinds every layer of bas marks its errors with,
// and the validation violation record reported to API callers.
//
// An error is of a kind when errors.Is(err, errs.NotFound) (cockroachdb/errors'
// Is, which sees marks across wrapping and process boundaries). httpapi maps
// kinds to HTTP statuses in one table.
package errs

import (
	"fmt"
	"github.com/bas-platform/bas/capability"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
)

// The kinds. Messages are namespaced so they never equal another package's.
var (
	NotFound        = errors.New("bas: not found")
	Conflict        = errors.New("bas: conflict")
	Invalid         = errors.New("bas: invalid")
	Forbidden       = errors.New("bas: forbidden")
	Unauthenticated = errors.New("bas: unauthenticated")
	TooLarge        = errors.New("bas: too large")
	RateLimited     = errors.New("bas: rate limited")
	Unavailable     = errors.New("bas: unavailable")
)

// Kinds lists every kind in the order a mapper should test them.
var Kinds = []error{Invalid, NotFound, Conflict, Forbidden, Unauthenticated, TooLarge, RateLimited, Unavailable}

// markedKinds holds each kind marked with itself: errors.Mark copies the
// mark of a marked reference, where for a plain one it works the mark out
// again (the kind's message and types) on every call.
var markedKinds = func() map[error]error {
	m := make(map[error]error, len(Kinds))
	for _, k := range Kinds {
		m[k] = errors.Mark(k, k)
	}
	return m
}()

// mark marks err with kind (as errors.Mark(err, kind) does).
func mark(err, kind error) error {
	if ref, ok := markedKinds[kind]; ok {
		return errors.Mark(err, ref)
	}
	return errors.Mark(err, kind)
}

// Violation is one reason an input is invalid (api.md's validation item).
// It lives in the capability contract, where vendors and embedders can
// name it too.
type Violation = capability.Violation

// ValidationError carries every violation of one request.
type ValidationError struct {
	Violations []Violation
}

// Error joins the violations.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return "invalid: " + strings.Join(parts, "; ")
}

// Validation returns an Invalid error carrying vs, or nil when vs is empty.
func Validation(vs ...Violation) error {
	if len(vs) == 0 {
		return nil
	}
	return mark(&ValidationError{Violations: vs}, Invalid)
}

// Violations returns the violations carried by err, if any.
func Violations(err error) []Violation {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Violations
	}
	return nil
}

// Text is the message a run shows for err: its violations when it carries
// some (every one, whatever wraps them), else its message.
func Text(err error) string {
	if vs := Violations(err); len(vs) > 0 {
		return (&ValidationError{Violations: vs}).Error()
	}
	return err.Error()
}

// Kind returns the first kind err is marked with, or nil.
func Kind(err error) error {
	for _, k := range Kinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// Public is an error whose message is safe to show to an API caller.
type Public struct {
	Msg string
	// kind is the kind the error was made with (by NotFoundf and the
	// like), nil for one made directly.
	kind error
}

// Error returns the public message.
func (p *Public) Error() string { return p.Msg }

// Is reports whether target is the kind p was made with: errors.Is finds it
// at once, without comparing marks (which it still does for any other
// target, and across process boundaries).
func (p *Public) Is(target error) bool { return p.kind != nil && target == p.kind }

func public(kind error, format string, args ...any) error {
	return mark(&Public{Msg: fmt.Sprintf(format, args...), kind: kind}, kind)
}

// NotFoundf returns a NotFound error whose message ("invoice not found") the
// API shows.
func NotFoundf(format string, args ...any) error { return public(NotFound, format, args...) }

// Conflictf returns a Conflict error with a public message.
func Conflictf(format string, args ...any) error { return public(Conflict, format, args...) }

// Forbiddenf returns a Forbidden error with a public message.
func Forbiddenf(format string, args ...any) error { return public(Forbidden, format, args...) }

// Unauthenticatedf returns an Unauthenticated error with a public message.
func Unauthenticatedf(format string, args ...any) error {
	return public(Unauthenticated, format, args...)
}

// TooLargef returns a TooLarge error with a public message.
func TooLargef(format string, args ...any) error { return public(TooLarge, format, args...) }

// Unavailablef returns an Unavailable error with a public message.
func Unavailablef(format string, args ...any) error { return public(Unavailable, format, args...) }

// Invalidf returns an Invalid error with one violation at loc.
func Invalidf(loc []any, typ, format string, args ...any) error {
	return Validation(Violation{Loc: loc, Msg: fmt.Sprintf(format, args...), Type: typ})
}

// RateLimit is a RateLimited error that says when to retry.
type RateLimit struct {
	RetryAfter time.Duration
	// Msg, when set, says which limit was hit, for the caller.
	Msg string
}

// Error returns Msg or "rate limited"; the delay travels in RetryAfter.
func (r *RateLimit) Error() string {
	if r.Msg != "" {
		return r.Msg
	}
	return "rate limited"
}

// RateLimitedAfter returns a RateLimited error carrying the retry delay.
func RateLimitedAfter(d time.Duration) error {
	return mark(&RateLimit{RetryAfter: d}, RateLimited)
}

// PublicMessage returns the message of the first Public error in err's chain,
// or "" when none is public.
func PublicMessage(err error) string {
	var p *Public
	if errors.As(err, &p) {
		return p.Msg
	}
	return ""
}
