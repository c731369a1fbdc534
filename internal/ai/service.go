package ai

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Events the AI connector emits (the ai.* namespace is reserved for it).
const (
	// EventBudgetWarning is emitted once a month, in the transaction that
	// records the call crossing warn_percent of the monthly token budget.
	EventBudgetWarning = "ai.budget.warning"
	// EventBudgetExhausted is emitted once a month, when a call is refused
	// because the budget is used up.
	EventBudgetExhausted = "ai.budget.exhausted"
)

// Events lists the events the connector emits.
func Events() []string { return []string{EventBudgetWarning, EventBudgetExhausted} }

// Bounds of a connection.
const (
	DefaultTimeoutSeconds = 60
	MaxTimeoutSeconds     = 600
	DefaultMaxRetries     = 2
	MaxRetries            = 10
	DefaultWarnPercent    = 80
	MaxRedactFields       = 50
	MaxBudget             = 1_000_000_000_000
)

// EventSink receives the connector's events inside the transaction that
// records the usage (the run engine's outbox implements it).
type EventSink interface {
	Emit(tx store.Txn, tenant, name string, data any) error
	Kick()
}

// Config configures New.
type Config struct {
	// Store keeps connections, usage and call records. Required.
	Store store.Store
	// Key encrypts API keys at rest (AES-256-GCM). Required: 32 bytes.
	Key []byte
	// Clock tells the time and times retry waits. Defaults to the wall
	// clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Events receives ai.budget.* events. Defaults to dropping them.
	Events EventSink
	// Client sends the requests. Defaults to a client without a timeout of
	// its own (each request is bounded by the connection's timeout).
	Client *http.Client
	// MaxRetryWait is the longest Retry-After waited inside one call; a
	// longer one ends the call rate-limited so the run retries later.
	// Defaults to 30s.
	MaxRetryWait time.Duration
	// MaxResponseBytes bounds one answer. Defaults to 8 MiB.
	MaxResponseBytes int64
	// RunOf names the run and step a call is made for (the run engine's
	// RunFromContext), so call records name them. Nil names none.
	RunOf func(ctx context.Context) (runID, stepKey string, ok bool)
	// ProviderID is the connector's provider id. Defaults to
	// "connector.openai".
	ProviderID string
}

// Service keeps each workspace's AI connection, its token usage and call
// records, and is the chat-completions connector (Provider). It is safe for
// concurrent use.
type Service struct {
	cfg    Config
	st     store.Store
	clock  clock.Clock
	log    *slog.Logger
	events EventSink
	aead   cipher.AEAD
	tr     transport
	ids    ids.Generator
}

type noEvents struct{}

func (noEvents) Emit(store.Txn, string, string, any) error { return nil }
func (noEvents) Kick()                                     {}

// New returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("ai: Config.Store is required")
	}
	if len(cfg.Key) != 32 {
		return nil, errors.Newf("ai: Config.Key must be 32 bytes, not %d", len(cfg.Key))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Events == nil {
		cfg.Events = noEvents{}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = 30 * time.Second
	}
	if cfg.ProviderID == "" {
		cfg.ProviderID = DefaultProviderID
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 8 << 20
	}
	block, err := aes.NewCipher(cfg.Key)
	if err != nil {
		return nil, errors.Wrap(err, "ai: key")
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, errors.Wrap(err, "ai: key")
	}
	return &Service{cfg: cfg, st: cfg.Store, clock: cfg.Clock, log: cfg.Logger.With("component", "ai"), events: cfg.Events,
		aead: aead, tr: transport{client: cfg.Client, clock: cfg.Clock, maxBytes: cfg.MaxResponseBytes}}, nil
}

// connection is the stored record: one per workspace.
type connection struct {
	ID                 string    `json:"id"`
	BaseURL            string    `json:"base_url"`
	Model              string    `json:"model"`
	APIKeySealed       string    `json:"api_key_sealed,omitempty"` // base64(nonce|ciphertext)
	APIKeyLast4        string    `json:"api_key_last4,omitempty"`
	TimeoutSeconds     int       `json:"timeout_seconds"`
	MaxRetries         int       `json:"max_retries"`
	MonthlyTokenBudget int64     `json:"monthly_token_budget"`
	WarnPercent        int       `json:"warn_percent"`
	RedactFields       []string  `json:"redact_fields"`
	RedactPatterns     []string  `json:"redact_patterns"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	UpdatedBy          string    `json:"updated_by"`
}

const connectionID = "default"

var connections = &store.Collection[connection]{
	Name: "aiconn", ID: func(c *connection) string { return c.ID }, NotFound: "no AI connection is configured",
}

// Connection is a workspace's AI connection as the API shows it: the API
// key is never returned, only whether one is set and its last four
// characters.
type Connection struct {
	BaseURL            string    `json:"base_url"`
	Model              string    `json:"model"`
	APIKeySet          bool      `json:"api_key_set"`
	APIKeyLast4        *string   `json:"api_key_last4"`
	TimeoutSeconds     int       `json:"timeout_seconds"`
	MaxRetries         int       `json:"max_retries"`
	MonthlyTokenBudget int64     `json:"monthly_token_budget"`
	WarnPercent        int       `json:"warn_percent"`
	RedactFields       []string  `json:"redact_fields"`
	RedactPatterns     []string  `json:"redact_patterns"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// ConnectionIn is the body of PUT /v1/ai/connection. Omitted optional
// fields take their defaults (redact_fields and redact_patterns given as
// null too: none); api_key omitted keeps the stored key, "" removes it
// (local servers need none).
type ConnectionIn struct {
	BaseURL            string   `json:"base_url" jsonschema:"required,minLength=1,maxLength=500"`
	Model              string   `json:"model" jsonschema:"required,minLength=1,maxLength=200"`
	APIKey             *string  `json:"api_key,omitempty" jsonschema:"maxLength=500"`
	TimeoutSeconds     *int     `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=600"`
	MaxRetries         *int     `json:"max_retries,omitempty" jsonschema:"minimum=0,maximum=10"`
	MonthlyTokenBudget *int64   `json:"monthly_token_budget,omitempty" jsonschema:"minimum=0,maximum=1000000000000"`
	WarnPercent        *int     `json:"warn_percent,omitempty" jsonschema:"minimum=1,maximum=100"`
	RedactFields       []string `json:"redact_fields,omitempty" jsonschema:"nullable,maxItems=50,minLength=1,maxLength=100"`
	RedactPatterns     []string `json:"redact_patterns,omitempty" jsonschema:"nullable,maxItems=4,enum=email,enum=phone,enum=iban,enum=card"`
}

// NoExtraProperties makes an unknown field of ConnectionIn a 422
// (extra_forbidden).
func (ConnectionIn) NoExtraProperties() {}

// Validate checks what the schema cannot: base_url is an http(s) URL
// without credentials, query or fragment.
func (in *ConnectionIn) Validate() []errs.Violation {
	var vs []errs.Violation
	u, err := url.Parse(in.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		vs = append(vs, errs.Violation{Loc: []any{"body", "base_url"}, Type: "value_error",
			Msg: "must be an http or https URL without credentials, query or fragment (https://api.openai.com/v1, http://localhost:11434/v1)"})
	}
	if strings.TrimSpace(in.Model) != in.Model {
		vs = append(vs, errs.Violation{Loc: []any{"body", "model"}, Type: "value_error", Msg: "must not start or end with spaces"})
	}
	if in.APIKey != nil && strings.TrimSpace(*in.APIKey) != *in.APIKey {
		vs = append(vs, errs.Violation{Loc: []any{"body", "api_key"}, Type: "value_error", Msg: "must not start or end with spaces"})
	}
	return vs
}

func (c *connection) out() Connection {
	o := Connection{BaseURL: c.BaseURL, Model: c.Model, APIKeySet: c.APIKeySealed != "", TimeoutSeconds: c.TimeoutSeconds,
		MaxRetries: c.MaxRetries, MonthlyTokenBudget: c.MonthlyTokenBudget, WarnPercent: c.WarnPercent,
		RedactFields: nonNil(slices.Clone(c.RedactFields)), RedactPatterns: nonNil(slices.Clone(c.RedactPatterns)),
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if c.APIKeyLast4 != "" {
		s := c.APIKeyLast4
		o.APIKeyLast4 = &s
	}
	return o
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Connection returns tenant's AI connection; errs.NotFound when none is
// configured.
func (s *Service) Connection(ctx context.Context, tenant string) (Connection, error) {
	c, err := s.load(ctx, tenant)
	if err != nil {
		return Connection{}, err
	}
	return c.out(), nil
}

func (s *Service) load(ctx context.Context, tenant string) (*connection, error) {
	var c *connection
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		c, err = connections.Get(r, tenant, connectionID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SetConnection creates or replaces tenant's AI connection (audited as
// actor). The API key is sealed before it is stored. created reports
// whether there was none before.
func (s *Service) SetConnection(ctx context.Context, tenant, actor string, in ConnectionIn) (out Connection, created bool, err error) {
	if vs := in.Validate(); len(vs) > 0 {
		return Connection{}, false, errs.Validation(vs...)
	}
	now := s.clock.Now().UTC()
	err = s.st.Update(ctx, func(tx store.Txn) error {
		prev, err := connections.Get(tx, tenant, connectionID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			prev, err = nil, nil
		case err != nil:
			return err
		}
		c := connection{ID: connectionID, BaseURL: strings.TrimRight(in.BaseURL, "/"), Model: in.Model,
			TimeoutSeconds: DefaultTimeoutSeconds, MaxRetries: DefaultMaxRetries, WarnPercent: DefaultWarnPercent,
			RedactFields: nonNil(slices.Clone(in.RedactFields)), RedactPatterns: nonNil(slices.Clone(in.RedactPatterns)),
			CreatedAt: now, UpdatedAt: now, UpdatedBy: actor}
		if prev != nil {
			c.CreatedAt = prev.CreatedAt
			c.APIKeySealed, c.APIKeyLast4 = prev.APIKeySealed, prev.APIKeyLast4
		}
		if in.APIKey != nil {
			c.APIKeySealed, c.APIKeyLast4 = "", ""
			if *in.APIKey != "" {
				if c.APIKeySealed, err = s.seal(tenant, *in.APIKey); err != nil {
					return err
				}
				c.APIKeyLast4 = last4(*in.APIKey)
			}
		}
		if in.TimeoutSeconds != nil {
			c.TimeoutSeconds = *in.TimeoutSeconds
		}
		if in.MaxRetries != nil {
			c.MaxRetries = *in.MaxRetries
		}
		if in.MonthlyTokenBudget != nil {
			c.MonthlyTokenBudget = *in.MonthlyTokenBudget
		}
		if in.WarnPercent != nil {
			c.WarnPercent = *in.WarnPercent
		}
		if err := connections.Put(tx, tenant, &c); err != nil {
			return err
		}
		created = prev == nil
		out = c.out()
		var before any
		if prev != nil {
			before = prev.out()
		}
		return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "ai.connection.set",
			Entity: "ai_connection", EntityID: connectionID, Before: audit.Marshal(before), After: audit.Marshal(out)})
	})
	if err != nil {
		return Connection{}, false, errors.Wrap(err, "set the AI connection")
	}
	return out, created, nil
}

// DeleteConnection removes tenant's AI connection (and its sealed key);
// usage and call records stay. errs.NotFound when there is none.
func (s *Service) DeleteConnection(ctx context.Context, tenant, actor string) error {
	now := s.clock.Now().UTC()
	return s.st.Update(ctx, func(tx store.Txn) error {
		prev, err := connections.Get(tx, tenant, connectionID)
		if err != nil {
			return err
		}
		if err := connections.Delete(tx, tenant, connectionID); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "ai.connection.delete",
			Entity: "ai_connection", EntityID: connectionID, Before: audit.Marshal(prev.out()), After: audit.Marshal(nil)})
	})
}

func last4(k string) string {
	r := []rune(k)
	if len(r) <= 8 {
		return ""
	}
	return string(r[len(r)-4:])
}

// seal encrypts an API key with AES-256-GCM; the tenant is the additional
// data, so a sealed key copied to another workspace does not open.
func (s *Service) seal(tenant, key string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", errors.Wrap(err, "seal the API key")
	}
	ct := s.aead.Seal(nonce, nonce, []byte(key), []byte("ai-key/"+tenant))
	return base64.RawStdEncoding.EncodeToString(ct), nil
}

func (s *Service) open(tenant, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", errors.New("the stored API key is damaged; set it again")
	}
	pt, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte("ai-key/"+tenant))
	if err != nil {
		return "", errors.New("the stored API key cannot be opened with this workspace's secret key; set it again")
	}
	return string(pt), nil
}
