package capability

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"
)

// MaxProviderIDLen is the longest provider id (BindingIn.provider_id is 1 to
// 80 characters).
const MaxProviderIDLen = 80

// ErrMalformedOutput marks a call whose provider answered with a result that
// does not match the capability's result schema (or is not JSON).
var ErrMalformedOutput = errors.New("capability: malformed provider output")

// ErrTimeout marks a call whose provider did not answer before the deadline.
// Such an error is also errs.Unavailable and context.DeadlineExceeded.
var ErrTimeout = errors.New("capability: provider call timed out")

// Violation is one reason a request is invalid, in the shape of api.md's 422
// detail items.
type Violation struct {
	// Loc is where: "body", "query", "path" or "header", then field names and
	// list indexes.
	Loc []any `json:"loc"`
	// Msg is a sentence a person can act on.
	Msg string `json:"msg"`
	// Type is one of api.md's validation types (missing, string_too_long ...).
	Type string `json:"type"`
}

// String renders the violation as "body.lines.0.quantity: must be at least 1".
func (v Violation) String() string {
	return v.Where() + ": " + v.Msg
}

// Where renders the violation's location as its parts joined by dots:
// "body.lines.0.quantity".
func (v Violation) Where() string {
	parts := make([]string, len(v.Loc))
	for i, p := range v.Loc {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}
