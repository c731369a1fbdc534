package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// DefaultProviderID is the connector's provider id.
const DefaultProviderID = "connector.openai"

// ErrInvalidAnswer marks a call whose model answer was not what was asked
// (not JSON, not the schema, a quote that is not in the text, a label that
// was not offered). It is errs.Unavailable too, so the run retries the
// step; it never passes as a result.
var ErrInvalidAnswer = errors.New("ai: the language model's answer is invalid")

// Provider returns the chat-completions connector: it fills ai.complete,
// ai.extract, ai.classify and ai.draft for every workspace that has
// configured its AI connection (PUT /v1/ai/connection) and bound them.
func (s *Service) Provider() capability.Provider { return (*provider)(s) }

type provider Service

var (
	_ capability.Provider      = (*provider)(nil)
	_ capability.HealthChecker = (*provider)(nil)
)

// Info describes the connector.
func (p *provider) Info() capability.Info {
	return capability.Info{ID: p.cfg.ProviderID, Name: "OpenAI-compatible language model", Kind: capability.KindConnector,
		Capabilities: []string{capability.AIClassify, capability.AIComplete, capability.AIDraft, capability.AIExtract}}
}

// Health reports the asking workspace's connection (capability.TenantFrom):
// not_configured without one; otherwise GET {base_url}/models answers 2xx
// (connected) or not (failed, with the status). Without a tenant it is
// connected: the connector itself is always there.
func (p *provider) Health(ctx context.Context) capability.Health {
	s := (*Service)(p)
	tenant, ok := capability.TenantFrom(ctx)
	if !ok {
		return capability.Health{Status: "connected"}
	}
	c, err := s.load(ctx, tenant)
	if errors.Is(err, errs.NotFound) {
		return capability.Health{Status: "not_configured", Detail: "no AI connection is configured: PUT /v1/ai/connection"}
	}
	if err != nil {
		return capability.Health{Status: "failed", Detail: err.Error()}
	}
	key, err := s.open(tenant, c.APIKeySealed)
	if err != nil {
		return capability.Health{Status: "failed", Detail: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/models", nil)
	if err != nil {
		return capability.Health{Status: "failed", Detail: err.Error()}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return capability.Health{Status: "failed", Detail: "health check: " + scrub(err.Error(), key)}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return capability.Health{Status: "failed", Detail: fmt.Sprintf("GET %s/models answered %d", c.BaseURL, resp.StatusCode)}
	}
	return capability.Health{Status: "connected"}
}

// Call asks the workspace's language model. Arguments were validated by
// the registry against the capability's schema.
func (p *provider) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	s := (*Service)(p)
	c, err := s.load(ctx, call.Tenant)
	if errors.Is(err, errs.NotFound) {
		return nil, errs.Unavailablef("%s needs the workspace's AI connection: configure it with PUT /v1/ai/connection", call.Capability)
	}
	if err != nil {
		return nil, err
	}
	key, err := s.open(call.Tenant, c.APIKeySealed)
	if err != nil {
		return nil, errs.Unavailablef("%s", err.Error())
	}
	rec := Call{Capability: call.Capability, Model: c.Model, IdempotencyKey: call.IdempotencyKey}
	if s.cfg.RunOf != nil {
		if run, step, ok := s.cfg.RunOf(ctx); ok {
			rec.RunID, rec.StepKey = &run, &step
		}
	}
	if err := s.checkBudget(ctx, call.Tenant, c, rec); err != nil {
		return nil, err
	}
	task, err := buildTask(call, newRedactor(c))
	if err != nil {
		return nil, err
	}
	req := &ChatRequest{Model: c.Model, Messages: task.messages, MaxTokens: task.maxTokens, Temperature: task.temperature,
		User: call.Tenant}
	if task.schema != nil {
		req.ResponseFormat = &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: task.name, Strict: true, Schema: task.schema}}
	}
	ep := endpoint{baseURL: c.BaseURL, apiKey: key, timeout: time.Duration(c.TimeoutSeconds) * time.Second,
		maxRetries: c.MaxRetries, maxWait: s.cfg.MaxRetryWait}
	a, err := s.tr.chat(ctx, ep, req)
	rec.Attempts, rec.Usage = a.attempts, a.usage
	if err != nil {
		msg := errs.PublicMessage(err)
		if msg == "" {
			msg = err.Error()
		}
		rec.Status, rec.Error = CallFailed, &msg
		if a.usage.TotalTokens > 0 {
			s.record(context.WithoutCancel(ctx), call.Tenant, c, rec)
		}
		return nil, err
	}
	ch := a.resp.Choices[0]
	meta := capability.AIMeta{Provider: s.cfg.ProviderID, Model: c.Model, Attempts: a.attempts,
		Usage: capability.AIUsage{PromptTokens: a.usage.PromptTokens, CompletionTokens: a.usage.CompletionTokens, TotalTokens: a.usage.TotalTokens}}
	if a.resp.Model != "" {
		meta.Model = a.resp.Model
		rec.Model = a.resp.Model
	}
	var out any
	switch {
	case ch.Message.Refusal != nil && *ch.Message.Refusal != "":
		err = invalid("the model refused: %s", truncate(*ch.Message.Refusal, 300))
	case ch.Message.Content == nil:
		err = invalid("the answer has no content")
	default:
		out, err = task.parse(*ch.Message.Content, ch.FinishReason, meta)
	}
	if err != nil {
		msg := err.Error()
		rec.Status, rec.Error = CallInvalidAnswer, &msg
		s.record(context.WithoutCancel(ctx), call.Tenant, c, rec)
		return nil, errors.Wrapf(err, "%s via %s", call.Capability, c.Model)
	}
	rec.Status = CallSucceeded
	s.record(context.WithoutCancel(ctx), call.Tenant, c, rec)
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, errors.Wrap(err, "encode the result")
	}
	return raw, nil
}

// invalid is an ErrInvalidAnswer error: errs.Unavailable, so it is retried.
func invalid(format string, args ...any) error {
	return errors.Mark(errs.Unavailablef("the language model's answer is invalid: "+format, args...), ErrInvalidAnswer)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// decodeAnswer decodes a JSON answer strictly into v: one value, no unknown
// fields. Models sometimes wrap JSON in a ```json fence; that is taken off.
func decodeAnswer(content string, v any) error {
	t := strings.TrimSpace(content)
	if strings.HasPrefix(t, "```") {
		t = strings.TrimPrefix(t, "```json")
		t = strings.TrimPrefix(t, "```")
		t = strings.TrimSuffix(strings.TrimSpace(t), "```")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(t)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return invalid("not the JSON asked for: %s", truncate(err.Error(), 200))
	}
	if dec.More() {
		return invalid("more than one JSON value")
	}
	return nil
}
