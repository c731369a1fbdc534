// Package aitest is a protocol-faithful OpenAI-compatible chat-completions
// server for tests: it checks the shape of every request (method, path,
// headers, body, response_format), answers from a script of cues (an
// answer, a rate limit with Retry-After, a server error, a hang until the
// client gives up, a malformed body) or from a responder function,
// streams the answer as server-sent chunks when a request asks for a
// stream, and keeps every request it was sent.
package aitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Request is a chat-completions request as the server received it.
type Request struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens     int      `json:"max_tokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	Stream        bool     `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	User           string `json:"user,omitempty"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format,omitempty"`
	// Authorization is the request's Authorization header.
	Authorization string `json:"-"`
}

// Text returns every message's content, joined by newlines.
func (r Request) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// SchemaName is response_format.json_schema.name, or "".
func (r Request) SchemaName() string {
	if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil {
		return ""
	}
	return r.ResponseFormat.JSONSchema.Name
}

// Cue is one scripted answer.
type Cue struct {
	// Status is the HTTP status; 0 is 200.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Content is the assistant message's content of a 200 answer.
	Content string
	// Body, when set, is sent as is instead of a chat completion.
	Body string
	// Hang makes the server answer only when the client gives up.
	Hang bool
	// Usage is the usage reported; zero reports 10 prompt and 5
	// completion tokens.
	PromptTokens, CompletionTokens int64
	// FinishReason defaults to "stop".
	FinishReason string
}

// Server is the fake chat-completions server.
type Server struct {
	*httptest.Server
	// Key is the API key requests must bear; "" accepts none.
	Key string
	// Respond answers a request when no cue is queued; nil answers
	// "ok".
	Respond func(r Request) Cue

	mu       sync.Mutex
	cues     []Cue
	requests []Request
	problems []string
	hang     chan struct{}
}

// New starts a server expecting key; Close it when done.
func New(key string) *Server {
	s := &Server{Key: key, hang: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops the server, releasing hanging requests first.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.hang:
	default:
		close(s.hang)
	}
	s.mu.Unlock()
	s.Server.Close()
}

// BaseURL is the server's base URL, with /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Push queues cues, answered in order before Respond is asked.
func (s *Server) Push(c ...Cue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cues = append(s.cues, c...)
}

// Requests returns the chat requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Problems returns what was wrong with the requests received (a test
// fails when it is not empty).
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (s *Server) fail(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
	writeError(w, code, msg)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"test-model","object":"model"}]}`))
		return
	case r.URL.Path != "/v1/chat/completions":
		s.fail(w, http.StatusNotFound, "unknown path %s %s", r.Method, r.URL.Path)
		return
	case r.Method != http.MethodPost:
		s.fail(w, http.StatusMethodNotAllowed, "method %s", r.Method)
		return
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		s.fail(w, http.StatusBadRequest, "content type %q", r.Header.Get("Content-Type"))
		return
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	req.Authorization = r.Header.Get("Authorization")
	if p := check(req); p != "" {
		s.fail(w, http.StatusBadRequest, "%s", p)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var c Cue
	if len(s.cues) > 0 {
		c = s.cues[0]
		s.cues = s.cues[1:]
		s.mu.Unlock()
	} else {
		s.mu.Unlock()
		if s.Respond != nil {
			c = s.Respond(req)
		} else {
			c = Cue{Content: "ok"}
		}
	}
	s.answer(w, r, req, c)
}

// check returns what is wrong with a request's shape, or "".
func check(req Request) string {
	switch {
	case req.Model == "":
		return "model is required"
	case len(req.Messages) == 0:
		return "messages must not be empty"
	}
	for i, m := range req.Messages {
		if !slices.Contains([]string{"system", "user", "assistant"}, m.Role) {
			return fmt.Sprintf("messages[%d].role %q", i, m.Role)
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		if rf.Type != "json_schema" || rf.JSONSchema == nil {
			return "response_format must be {type: json_schema, json_schema: {...}}"
		}
		if !schemaName.MatchString(rf.JSONSchema.Name) {
			return fmt.Sprintf("response_format.json_schema.name %q", rf.JSONSchema.Name)
		}
		var sch map[string]any
		if err := json.Unmarshal(rf.JSONSchema.Schema, &sch); err != nil || sch["type"] != "object" {
			return "response_format.json_schema.schema must be an object schema"
		}
		if rf.JSONSchema.Strict && sch["additionalProperties"] != false {
			return "a strict schema needs additionalProperties false"
		}
	}
	return ""
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request, c Cue) {
	if c.Hang {
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		return
	}
	if c.RetryAfter != "" {
		w.Header().Set("Retry-After", c.RetryAfter)
	}
	code := c.Status
	if code == 0 {
		code = http.StatusOK
	}
	if c.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(c.Body))
		return
	}
	if code != http.StatusOK {
		writeError(w, code, http.StatusText(code))
		return
	}
	pt, ct := c.PromptTokens, c.CompletionTokens
	if pt == 0 && ct == 0 {
		pt, ct = 10, 5
	}
	fr := c.FinishReason
	if fr == "" {
		fr = "stop"
	}
	if req.Stream {
		stream(w, req, c.Content, fr, pt, ct)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1764000000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": c.Content},
			"finish_reason": fr}},
		"usage": map[string]any{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
	})
}

// stream answers a streaming request as the protocol does: server-sent
// events of chat.completion.chunk objects (the role, then the content in
// pieces of up to 8 bytes, then the finish reason), a last chunk with the
// usage and no choices, and "data: [DONE]".
func stream(w http.ResponseWriter, req Request, content, finish string, pt, ct int64) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1764000000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for rest := content; rest != ""; {
		n := min(8, len(rest))
		for n < len(rest) && !utf8.RuneStart(rest[n]) {
			n++
		}
		send(chunk(map[string]any{"content": rest[:n]}, nil))
		rest = rest[n:]
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1764000000, "model": req.Model,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
}
