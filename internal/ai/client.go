package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Message is one chat message of the chat-completions protocol.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ResponseFormat asks for structured output: {type: json_schema,
// json_schema: {name, strict, schema}}.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema names the schema an answer must satisfy.
type JSONSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// ChatRequest is the body of POST {base}/chat/completions.
type ChatRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	Stream         bool            `json:"stream"`
	// User is an opaque id of the workspace, for the vendor's abuse
	// monitoring.
	User string `json:"user,omitempty"`
}

// Usage is the token usage a chat-completions answer reports.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// ChatResponse is the part of a chat-completions answer bas reads.
type ChatResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
}

// endpoint is where and how one workspace's requests go.
type endpoint struct {
	baseURL    string
	apiKey     string
	timeout    time.Duration // per request
	maxRetries int
	maxWait    time.Duration // longest Retry-After waited in a call
}

// transport sends chat-completions requests.
type transport struct {
	client   *http.Client
	clock    clock.Clock
	maxBytes int64
}

// answer is one request's outcome: the response, the attempts it took, and
// the usage of every attempt that reported one.
type answer struct {
	resp     *ChatResponse
	attempts int
	usage    Usage
}

// chat POSTs req to {base}/chat/completions, retrying network errors,
// timeouts, 429 and 5xx up to ep.maxRetries times: a 429 or 503 waits its
// Retry-After (seconds or an HTTP date; 1s, 2s, 4s ... without one), others
// back off the same way. A wait longer than ep.maxWait, or past ctx's
// deadline, is not waited: the call ends errs.RateLimited (or Unavailable)
// so the run retries later. 400, 401, 403, 404 and 422 are not retried.
func (t *transport) chat(ctx context.Context, ep endpoint, req *ChatRequest) (answer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return answer{}, errors.Wrap(err, "encode the chat request")
	}
	var a answer
	for attempt := 0; ; attempt++ {
		a.attempts = attempt + 1
		resp, wait, err := t.once(ctx, ep, body)
		if err == nil {
			a.resp = resp
			if resp.Usage != nil {
				a.usage = addUsage(a.usage, *resp.Usage)
			}
			return a, nil
		}
		if wait < 0 || attempt >= ep.maxRetries {
			return a, err
		}
		if wait == 0 {
			wait = time.Second << min(attempt, 5)
		}
		if wait > ep.maxWait {
			if errors.Is(err, errs.RateLimited) {
				return a, err
			}
			return a, errors.Wrapf(err, "the next attempt would wait %s", wait)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait { // deadlines are wall-clock
			return a, err
		}
		tm := t.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			tm.Stop()
			return a, errors.Mark(errs.Unavailablef("the language model did not answer in time"), context.DeadlineExceeded)
		case <-tm.C():
		}
	}
}

// once sends one request. wait is how long to wait before trying again (0:
// back off; negative: do not retry).
func (t *transport) once(ctx context.Context, ep endpoint, body []byte) (*ChatResponse, time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, ep.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(rctx, http.MethodPost, strings.TrimRight(ep.baseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, -1, errors.Wrap(err, "build the chat request")
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if ep.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+ep.apiKey)
	}
	resp, err := t.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, errors.Mark(errs.Unavailablef("the language model did not answer before the call's deadline"), context.DeadlineExceeded)
		}
		if rctx.Err() != nil {
			return nil, 0, errs.Unavailablef("the language model did not answer within %s", ep.timeout)
		}
		return nil, 0, errs.Unavailablef("the language model cannot be reached: %s", scrub(err.Error(), ep.apiKey))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, t.maxBytes+1))
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, 0, errs.Unavailablef("the language model did not answer within %s", ep.timeout)
		}
		return nil, 0, errs.Unavailablef("read the language model's answer: %s", err.Error())
	}
	if int64(len(raw)) > t.maxBytes {
		return nil, -1, errs.Unavailablef("the language model answered with more than %d bytes", t.maxBytes)
	}
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		var cr ChatResponse
		if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
			// A body that is not a chat completion: a proxy's page, a
			// truncated answer. Another attempt may do better.
			return nil, 0, errors.Mark(errs.Unavailablef("the language model answered %d with a body that is not a chat completion", code), ErrInvalidAnswer)
		}
		return &cr, 0, nil
	}
	detail := scrub(apiDetail(raw), ep.apiKey)
	msg := fmt.Sprintf("the language model answered %d", code)
	if detail != "" {
		msg += ": " + detail
	}
	switch {
	case code == http.StatusTooManyRequests:
		wait := retryAfter(resp.Header.Get("Retry-After"), t.clock.Now())
		rl := wait
		if rl <= 0 {
			rl = time.Second
		}
		return nil, wait, errors.Wrap(errs.RateLimitedAfter(rl), msg)
	case code >= 500:
		return nil, retryAfter(resp.Header.Get("Retry-After"), t.clock.Now()), errs.Unavailablef("%s", msg)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return nil, -1, errs.Forbiddenf("%s (check the AI connection's API key)", msg)
	case code == http.StatusNotFound:
		return nil, -1, errs.Invalidf([]any{"model"}, "value_error", "%s (check the AI connection's base URL and model)", msg)
	case code == http.StatusRequestTimeout:
		return nil, 0, errs.Unavailablef("%s", msg)
	default:
		return nil, -1, errs.Invalidf([]any{"args"}, "value_error", "%s", msg)
	}
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date. 0
// when absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil {
		if s <= 0 {
			return time.Millisecond // "retry now": still not the back-off
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
		return time.Millisecond
	}
	return 0
}

// apiDetail takes error.message (the protocol's error shape) or a top-level
// message or detail from a JSON answer, else its trimmed text; at most 300
// characters.
func apiDetail(raw []byte) string {
	var obj struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	s := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &obj) == nil {
		var e struct {
			Message string `json:"message"`
		}
		var es string
		switch {
		case json.Unmarshal(obj.Error, &e) == nil && e.Message != "":
			s = e.Message
		case json.Unmarshal(obj.Error, &es) == nil && es != "":
			s = es
		case obj.Message != "":
			s = obj.Message
		case obj.Detail != "":
			s = obj.Detail
		}
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// scrub removes the API key from a text that may echo it.
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[api key]")
}

func addUsage(a, b Usage) Usage {
	return Usage{PromptTokens: a.PromptTokens + b.PromptTokens, CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		TotalTokens: a.TotalTokens + b.TotalTokens}
}
