package bas

import (
	"fmt"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// Violation is one reason a call's input is invalid: where (Loc, a path of
// field names and list indexes), what a person can do about it (Msg), and
// its type (missing, string_too_long, enum ...), as the HTTP API's 422
// detail items show it.
type Violation = capability.Violation

// Violations returns every violation an ErrInvalid error carries, nil for
// any other error.
func Violations(err error) []Violation { return errs.Violations(err) }

// PublicMessage returns the message of err meant for the person who made
// the call ("process is archived"), or "" when err has none; the HTTP API
// shows it as the error's detail. Other messages may hold internals: log
// them, don't show them.
func PublicMessage(err error) string { return errs.PublicMessage(err) }

// Kind returns the kind err is marked with (ErrNotFound, ErrConflict ...),
// or nil when it has none (an internal error).
func Kind(err error) error { return errs.Kind(err) }

// kinded lets the standard library's errors.Is see an error's kind, as
// cockroachdb/errors' Is does through its marks.
type kinded struct{ err, kind error }

func (k *kinded) Error() string                 { return k.err.Error() }
func (k *kinded) Unwrap() error                 { return k.err }
func (k *kinded) Is(target error) bool          { return target == k.kind }
func (k *kinded) Format(s fmt.State, verb rune) { errors.FormatError(k.err, s, verb) }

// withKind makes err's kind visible to the standard library's errors.Is.
func withKind(err error) error {
	if err == nil {
		return nil
	}
	if kind := errs.Kind(err); kind != nil {
		return &kinded{err: err, kind: kind}
	}
	return err
}

// kind hands back a call's value with its error seen through withKind.
func kind[T any](v T, err error) (T, error) { return v, withKind(err) }
