package capability

import "github.com/cockroachdb/errors"

// MaxProviderIDLen is the longest provider id (BindingIn.provider_id is 1 to
// 80 characters).
const MaxProviderIDLen = 80

// ErrMalformedOutput marks a call whose provider answered with a result that
// does not match the capability's result schema (or is not JSON).
var ErrMalformedOutput = errors.New("capability: malformed provider output")

// ErrTimeout marks a call whose provider did not answer before the deadline.
// Such an error is also errs.Unavailable and context.DeadlineExceeded.
var ErrTimeout = errors.New("capability: provider call timed out")
