package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// statusOf maps error kinds to statuses, in order.
var statusOf = []struct {
	kind   error
	status int
	detail string // used when the error has no public message
}{
	{errs.Invalid, http.StatusUnprocessableEntity, "invalid request"},
	{errs.Unauthenticated, http.StatusUnauthorized, "not authenticated"},
	{errs.Forbidden, http.StatusForbidden, "forbidden"},
	{errs.NotFound, http.StatusNotFound, "not found"},
	{errs.Conflict, http.StatusConflict, "conflict"},
	{errs.TooLarge, http.StatusRequestEntityTooLarge, "request too large"},
	{errs.RateLimited, http.StatusTooManyRequests, "rate limited"},
	{errs.Unavailable, http.StatusServiceUnavailable, "service unavailable"},
	{errBadRequest, http.StatusBadRequest, "bad request"},
	{errUnsupportedMedia, http.StatusUnsupportedMediaType, "unsupported media type"},
}

// writeError writes err in api.md's error shape. Errors of no kind are 500
// "internal error" to the caller and logged in full.
func (h *Handler) writeError(c *request, err error) {
	w := c.W
	for _, m := range statusOf {
		if !errors.Is(err, m.kind) {
			continue
		}
		switch m.status {
		case http.StatusUnprocessableEntity:
			vs := errs.Violations(err)
			if len(vs) == 0 {
				vs = []errs.Violation{{Loc: []any{"body"}, Msg: publicOr(err, m.detail), Type: "value_error"}}
			}
			writeBody(w, m.status, map[string]any{"detail": vs})
			return
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", "Bearer")
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			var rl *errs.RateLimit
			secs := 1
			if errors.As(err, &rl) && rl.RetryAfter > 0 {
				secs = int((rl.RetryAfter + 999_999_999) / 1_000_000_000)
			}
			if m.status == http.StatusTooManyRequests || rl != nil {
				w.Header().Set("Retry-After", strconv.Itoa(secs))
			}
			if rl != nil && rl.Msg != "" {
				writeDetail(w, m.status, rl.Msg)
				return
			}
		}
		writeDetail(w, m.status, publicOr(err, m.detail))
		return
	}
	h.log.Error("internal error", "request_id", requestID(c.Context()), "method", c.R.Method,
		"path", logPath(c.R), "error", errors.FlattenDetails(err))
	writeDetail(w, http.StatusInternalServerError, "internal error")
}

func publicOr(err error, fallback string) string {
	if msg := errs.PublicMessage(err); msg != "" {
		return msg
	}
	return fallback
}

func writeDetail(w http.ResponseWriter, status int, detail string) {
	writeBody(w, status, map[string]any{"detail": detail})
}

func writeBody(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
