package wire

import (
	"context"
	"math"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// Error is an error crossing the process boundary.
type Error struct {
	// Encoded is the protobuf encoding of cockroachdb/errors' EncodedError:
	// it keeps the chain's messages, types and marks, so errors.Is(err,
	// errs.NotFound) holds on the other side.
	Encoded []byte `json:"encoded,omitempty"`
	// Message is err.Error(), used when Encoded cannot be decoded.
	Message string `json:"message"`
	// Public is errs.PublicMessage(err): the message an API may show.
	Public string `json:"public,omitempty"`
	// Violations are errs.Violations(err).
	Violations []Violation `json:"violations,omitempty"`
	// RetryAfter is the delay of an errs.RateLimit in the chain, in
	// nanoseconds.
	RetryAfter int64 `json:"retry_after_ns,omitempty"`
}

// EncodeError encodes err for the wire; nil stays nil.
func EncodeError(ctx context.Context, err error) *Error {
	if err == nil {
		return nil
	}
	out := &Error{
		Message:    err.Error(),
		Public:     errs.PublicMessage(err),
		Violations: violationsFrom(errs.Violations(err)),
	}
	enc := errors.EncodeError(ctx, err)
	if b, merr := enc.Marshal(); merr == nil {
		out.Encoded = b
	}
	var rl *errs.RateLimit
	if errors.As(err, &rl) {
		out.RetryAfter = int64(rl.RetryAfter)
	}
	return out
}

// DecodeError turns a wire error back into an error whose marks, public
// message, violations and retry delay read as they did in the other process;
// nil stays nil.
func DecodeError(ctx context.Context, e *Error) error {
	if e == nil {
		return nil
	}
	var cause error
	var enc errors.EncodedError
	if len(e.Encoded) > 0 && enc.Unmarshal(e.Encoded) == nil {
		cause = errors.DecodeError(ctx, enc)
	}
	if cause == nil {
		cause = errors.Newf("%s", e.Message)
	}
	r := &remoteError{cause: cause}
	if e.Public != "" {
		r.public = &errs.Public{Msg: e.Public}
	}
	if len(e.Violations) > 0 {
		vs := make([]errs.Violation, len(e.Violations))
		for i, v := range e.Violations {
			vs[i] = errs.Violation{Loc: integralLoc(v.Loc), Msg: v.Msg, Type: v.Type}
		}
		r.validation = &errs.ValidationError{Violations: vs}
	}
	if e.RetryAfter > 0 {
		r.rateLimit = &errs.RateLimit{RetryAfter: time.Duration(e.RetryAfter)}
	}
	return r
}

// integralLoc turns the float64 list indexes JSON decoding made back into
// ints.
func integralLoc(loc []any) []any {
	out := make([]any, len(loc))
	for i, p := range loc {
		if f, ok := p.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			p = int(f)
		}
		out[i] = p
	}
	return out
}

// remoteError is a decoded error. Its cause keeps the marks; the typed
// details errs reads with errors.As (whose types cockroachdb/errors cannot
// rebuild without a registered decoder) are answered by As.
type remoteError struct {
	cause      error
	public     *errs.Public
	validation *errs.ValidationError
	rateLimit  *errs.RateLimit
}

func (r *remoteError) Error() string { return r.cause.Error() }

func (r *remoteError) Unwrap() error { return r.cause }

// As answers errors.As for the details errs reads.
func (r *remoteError) As(target any) bool {
	switch t := target.(type) {
	case **errs.Public:
		if r.public != nil {
			*t = r.public
			return true
		}
	case **errs.ValidationError:
		if r.validation != nil {
			*t = r.validation
			return true
		}
	case **errs.RateLimit:
		if r.rateLimit != nil {
			*t = r.rateLimit
			return true
		}
	}
	return false
}
