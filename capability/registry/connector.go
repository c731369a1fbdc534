package registry

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// connectorPrefix starts the id of every connector bas declares.
const connectorPrefix = "connector."

// comingConnector is a declared connector that is not built yet.
type comingConnector struct {
	sys system
}

// DeclaredConnectors returns a provider for every connector the
// integrations catalog says is coming ("connector.xero" ...). They list the
// capabilities they will fill, so GET /v1/capabilities and the gaps can name
// them, but they never fill one by default, cannot be bound, report
// "coming" in GET /v1/connections, and every call fails with
// errs.Unavailable "connector X is coming".
func DeclaredConnectors() []capability.Provider {
	var out []capability.Provider
	for _, s := range integrationIndex().systems {
		if s.How == HowComing && len(s.Provides) > 0 {
			out = append(out, &comingConnector{sys: s})
		}
	}
	return out
}

// Info describes the connector: kind connector, coming.
func (c *comingConnector) Info() capability.Info {
	return capability.Info{ID: connectorPrefix + c.sys.ID, Name: c.sys.Name, Kind: capability.KindConnector,
		Capabilities: slices.Clone(c.sys.Provides), Coming: true}
}

// Call fails: the connector is not built.
func (c *comingConnector) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return nil, errs.Unavailablef("connector %s is coming", c.sys.Name)
}

// Health reports "coming".
func (c *comingConnector) Health(context.Context) capability.Health {
	return capability.Health{Status: "coming", Detail: "the " + c.sys.Name + " connector is not built yet"}
}

// failedProvider stands for a provider that could not be registered or
// loaded.
type failedProvider struct {
	info   capability.Info
	detail string
}

// Failed returns a provider that stands in for one that could not be loaded
// or registered (a plugin with a bad description, say): it fills nothing,
// GET /v1/connections lists it as "failed" with detail, and calls fail with
// errs.Unavailable.
func Failed(id, name string, kind capability.Kind, detail string) capability.Provider {
	if name == "" {
		name = id
	}
	return &failedProvider{info: capability.Info{ID: id, Name: name, Kind: kind, Capabilities: []string{}}, detail: detail}
}

// Info describes the failed provider; it fills nothing.
func (f *failedProvider) Info() capability.Info { return cloneInfo(f.info) }

// Call fails with errs.Unavailable.
func (f *failedProvider) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return nil, errs.Unavailablef("provider %s failed: %s", f.info.ID, f.detail)
}

// Health reports "failed" with the reason.
func (f *failedProvider) Health(context.Context) capability.Health {
	return capability.Health{Status: "failed", Detail: f.detail}
}

// WebhookConfig configures NewWebhook.
type WebhookConfig struct {
	// ID is the provider id. Defaults to "connector.webhook".
	ID string
	// Name is the provider's title. Defaults to "Webhook".
	Name string
	// URL receives every call as a POST. Required; http or https.
	URL string
	// Capabilities are the capabilities the webhook fills. Required.
	Capabilities []string
	// Secret, when set, signs every request: the header X-Bas-Signature is
	// "sha256=" and the hex HMAC-SHA256, keyed by Secret, of
	// "<X-Bas-Timestamp>.<body>".
	Secret string
	// Header is added to every request (an Authorization header, say).
	Header http.Header
	// HealthURL, when set, is asked with a GET by GET /v1/connections: a
	// 2xx answer is connected, anything else failed.
	HealthURL string
	// Client sends the requests. Defaults to a client without a timeout of
	// its own: the call's deadline bounds each request.
	Client *http.Client
	// Clock stamps X-Bas-Timestamp. Defaults to the wall clock.
	Clock clock.Clock
	// MaxResponseBytes bounds a response body. Defaults to 4 MiB.
	MaxResponseBytes int64
}

// Webhook is a connector to the customer's own app (or an automation tool
// such as Zapier, Make, n8n or Power Automate): each call is POSTed to a URL
// as the JSON of Call ({tenant, capability, args, idempotency_key}) with an
// Idempotency-Key header, and the answer's body is the result.
//
// Statuses map to error kinds: 400 and 422 are errs.Invalid (the body's
// "detail", or its text, says why), 401 and 403 errs.Forbidden, 404
// errs.NotFound, 409 errs.Conflict, 429 errs.RateLimited (honouring
// Retry-After), and 5xx, network errors and timeouts errs.Unavailable.
type Webhook struct {
	cfg WebhookConfig
}

var (
	_ capability.Provider      = (*Webhook)(nil)
	_ capability.HealthChecker = (*Webhook)(nil)
)

// NewWebhook returns a webhook connector.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if cfg.ID == "" {
		cfg.ID = connectorPrefix + "webhook"
	}
	if cfg.Name == "" {
		cfg.Name = "Webhook"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 4 << 20
	}
	for _, u := range []struct{ name, v string }{{"URL", cfg.URL}, {"HealthURL", cfg.HealthURL}} {
		if u.v == "" && u.name == "HealthURL" {
			continue
		}
		pu, err := url.Parse(u.v)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, errors.Newf("capability: webhook %s: %s %q must be an http or https URL", cfg.ID, u.name, u.v)
		}
	}
	if len(cfg.Capabilities) == 0 {
		return nil, errors.Newf("capability: webhook %s fills no capabilities; list them in WebhookConfig.Capabilities", cfg.ID)
	}
	cfg.Capabilities = slices.Clone(cfg.Capabilities)
	return &Webhook{cfg: cfg}, nil
}

// Info describes the webhook: kind connector.
func (w *Webhook) Info() capability.Info {
	return capability.Info{ID: w.cfg.ID, Name: w.cfg.Name, Kind: capability.KindConnector, Capabilities: slices.Clone(w.cfg.Capabilities)}
}

// Call POSTs call to the URL and returns the answer's body.
func (w *Webhook) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	body, err := json.Marshal(call)
	if err != nil {
		return nil, errors.Wrap(err, "encode the call")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, errors.Wrap(err, "build the webhook request")
	}
	for k, vs := range w.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Bas-Capability", call.Capability)
	req.Header.Set("X-Bas-Tenant", call.Tenant)
	if call.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", call.IdempotencyKey)
	}
	if w.cfg.Secret != "" {
		ts := strconv.FormatInt(w.cfg.Clock.Now().Unix(), 10)
		req.Header.Set("X-Bas-Timestamp", ts)
		req.Header.Set("X-Bas-Signature", "sha256="+Sign(w.cfg.Secret, ts, body))
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.Wrapf(ctx.Err(), "webhook %s", w.cfg.ID)
		}
		return nil, errors.Mark(errors.Wrapf(err, "webhook %s", w.cfg.ID), errs.Unavailable)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, w.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, errors.Mark(errors.Wrapf(err, "webhook %s: read the answer", w.cfg.ID), errs.Unavailable)
	}
	if int64(len(raw)) > w.cfg.MaxResponseBytes {
		return nil, errors.Newf("webhook %s answered with more than %d bytes", w.cfg.ID, w.cfg.MaxResponseBytes)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if resp.StatusCode == http.StatusNoContent || len(bytes.TrimSpace(raw)) == 0 {
			return json.RawMessage("{}"), nil
		}
		if !json.Valid(raw) {
			return nil, errors.Newf("webhook %s answered %d with a body that is not JSON", w.cfg.ID, resp.StatusCode)
		}
		return raw, nil
	}
	return nil, w.statusError(resp, raw)
}

// statusError turns a non-2xx answer into an error of the matching kind.
func (w *Webhook) statusError(resp *http.Response, raw []byte) error {
	detail := answerDetail(raw)
	msg := fmt.Sprintf("webhook %s answered %d", w.cfg.ID, resp.StatusCode)
	if detail != "" {
		msg += ": " + detail
	}
	switch code := resp.StatusCode; {
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		return errs.Invalidf([]any{"args"}, "value_error", "%s", msg)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return errs.Forbiddenf("%s", msg)
	case code == http.StatusNotFound:
		return errs.NotFoundf("%s", msg)
	case code == http.StatusConflict:
		return errs.Conflictf("%s", msg)
	case code == http.StatusTooManyRequests:
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return errors.Wrap(errs.RateLimitedAfter(wait), msg)
	case code >= 500:
		return errs.Unavailablef("%s", msg)
	default:
		return errors.Newf("%s", msg)
	}
}

// answerDetail takes "detail" (or "error", "message") from a JSON answer,
// else its trimmed text, at most 500 characters.
func answerDetail(raw []byte) string {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		for _, k := range []string{"detail", "error", "message"} {
			if s, ok := obj[k].(string); ok && s != "" {
				return truncate(s, 500)
			}
		}
	}
	return truncate(strings.TrimSpace(string(raw)), 500)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Health asks HealthURL, when set; otherwise the webhook is connected.
func (w *Webhook) Health(ctx context.Context) capability.Health {
	if w.cfg.HealthURL == "" {
		return capability.Health{Status: "connected"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.cfg.HealthURL, nil)
	if err != nil {
		return capability.Health{Status: "failed", Detail: err.Error()}
	}
	for k, vs := range w.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return capability.Health{Status: "failed", Detail: "health check: " + err.Error()}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return capability.Health{Status: "failed", Detail: fmt.Sprintf("health check answered %d", resp.StatusCode)}
	}
	return capability.Health{Status: "connected"}
}

// Sign returns the hex HMAC-SHA256 of "<timestamp>.<body>" keyed by secret:
// what a webhook receiver compares (in constant time) with the
// X-Bas-Signature header after "sha256=".
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
