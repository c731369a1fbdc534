package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// Bounds of a subscription.
const (
	MaxURLLen         = 2048
	MaxEvents         = 50
	MaxEventLen       = 120
	MaxDescriptionLen = 500
	// MaxSubscriptions is the most subscriptions a workspace may have.
	MaxSubscriptions = 50
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Outcomes of one attempt, as Config.OnAttempt and the metrics name them.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeRetrying  = "retrying"
	OutcomeFailed    = "failed"
)

// Config configures New.
type Config struct {
	// Store holds subscriptions, deliveries and the due index. Required.
	Store store.Store
	// Clock tells the time and runs the retry timers. Defaults to the
	// wall clock.
	Clock clock.Clock
	// Logger receives delivery failures. Defaults to discarding them.
	Logger *slog.Logger
	// Resolver resolves receiver hosts. Defaults to net.DefaultResolver.
	Resolver Resolver
	// Allow admits address ranges the guard refuses otherwise (for
	// example 127.0.0.0/8 for a receiver on the same host). Defaults to
	// none.
	Allow []netip.Prefix
	// PerTenant bounds one workspace's deliveries in flight. Defaults
	// to 4.
	PerTenant int
	// Timeout bounds one attempt. Defaults to 10s.
	Timeout time.Duration
	// RetryBase bounds the first retry delay; the bound doubles per
	// attempt up to RetryMax, and each delay is drawn at random between a
	// tenth of its bound and the bound (jitter). Defaults to 30s and 1h.
	RetryBase, RetryMax time.Duration
	// RetryFor is how long a delivery is retried before it fails, and how
	// long a subscription may fail before it is disabled. Defaults to 24h.
	RetryFor time.Duration
	// Keep is how long a finished delivery stays in the log. Defaults to
	// 30 days.
	Keep time.Duration
	// OnAttempt, when set, is called after each attempt is durable, with
	// its outcome (metrics). It must not block.
	OnAttempt func(tenant string, d *Delivery, outcome string)
	// Owns, when set, says that several nodes share Store (a clustered
	// run engine): this node sends only the due deliveries whose id Owns
	// reports true for, so each is sent by one node; it looks for due
	// deliveries written by other nodes every SharedPoll; and it keeps a
	// workspace's subscriptions for at most SharedCacheTTL, as another
	// node may change them. Defaults to none: this node sends every
	// delivery.
	Owns func(id string) bool
}

// SharedPoll is how often a node sharing its store looks for deliveries
// other nodes wrote; SharedCacheTTL is how long it keeps subscriptions
// (an event emitted within it of a subscription's change on another node
// may be delivered by the old ones).
const (
	SharedPoll     = 200 * time.Millisecond
	SharedCacheTTL = time.Second
)

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.PerTenant <= 0 {
		c.PerTenant = 4
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 30 * time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = time.Hour
	}
	if c.RetryFor <= 0 {
		c.RetryFor = 24 * time.Hour
	}
	if c.Keep <= 0 {
		c.Keep = 30 * 24 * time.Hour
	}
	return c
}

// Subscription is a workspace's subscription as the API shows it (never
// with its secret).
type Subscription struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Active      bool     `json:"active"`
	// FailingSince is when deliveries began failing without a success
	// since; null while healthy.
	FailingSince *time.Time `json:"failing_since"`
	// DisabledReason says why the workspace disabled it, if it did.
	DisabledReason *string   `json:"disabled_reason"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Created is a new subscription with its signing secret, shown this once.
type Created struct {
	Subscription
	Secret string `json:"secret"`
}

// stored is a subscription as stored, with its secret.
type stored struct {
	Subscription
	Secret string `json:"secret"`
}

// Delivery is one event sent (or to send) to one subscription.
type Delivery struct {
	ID             string `json:"id"`
	SubscriptionID string `json:"subscription_id"`
	EventID        string `json:"event_id"`
	Event          string `json:"event"`
	// Status is pending, succeeded or failed.
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// ResponseCode is the receiver's last HTTP status (null when none
	// answered).
	ResponseCode *int    `json:"response_code"`
	LastError    *string `json:"last_error"`
	// DurationMS is how long the last attempt took.
	DurationMS    *int64     `json:"duration_ms"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// RedeliveryOf is the delivery this one repeats.
	RedeliveryOf *string    `json:"redelivery_of"`
	CreatedAt    time.Time  `json:"created_at"`
	CompletedAt  *time.Time `json:"completed_at"`
	// Payload is the body sent.
	Payload []byte `json:"-"`
}

// deliveryRecord stores the payload beside the delivery.
type deliveryRecord struct {
	Delivery
	Body string `json:"body"`
}

var subs = &store.Collection[stored]{
	Name:     "webhook",
	ID:       func(s *stored) string { return s.ID },
	NotFound: "webhook not found",
}

var deliveries = &store.Collection[deliveryRecord]{
	Name:     "webhook-delivery",
	ID:       func(d *deliveryRecord) string { return d.ID },
	NotFound: "delivery not found",
	Indexes: []store.Index[deliveryRecord]{
		{Name: "sub", Values: func(d *deliveryRecord) [][]any { return [][]any{{d.SubscriptionID, d.ID}} }},
	},
}

// dueKey is a delivery's entry in the due index: (System, "webhook-due",
// unix-nanos, tenant, delivery id), the id prefixed by expirePrefix for
// the time a finished delivery leaves the log.
func dueKey(at time.Time, tenant, id string) []byte {
	return store.Key(store.System, "webhook-due", at.UnixNano(), tenant, id)
}

const expirePrefix = "expire:"

// Service keeps subscriptions and delivers events. Create it with New,
// Open it once the store is ready, Close it before the store.
type Service struct {
	cfg    Config
	st     store.Store
	clock  clock.Clock
	log    *slog.Logger
	client *http.Client
	ids    ids.Generator // makes the ids of the records and audit entries it writes

	mu    sync.Mutex
	cache map[string][]*stored // tenant -> active subscriptions, loaded on first use
	// cachedAt is when each cache entry was loaded (kept when Owns is set).
	cachedAt map[string]time.Time

	sched *scheduler

	onExpire func(id string) // tests: a delivery left the log
}

// New returns the service on cfg.Store.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if cfg.Store == nil {
		return nil, errors.New("webhooks: Config needs a Store")
	}
	s := &Service{cfg: cfg, st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, cache: map[string][]*stored{},
		cachedAt: map[string]time.Time{}}
	tr := &http.Transport{DialContext: s.dial, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout, ResponseHeaderTimeout: cfg.Timeout, ForceAttemptHTTP2: true}
	s.client = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("stopped after 3 redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errors.Newf("redirect to a %s URL", req.URL.Scheme)
			}
			return nil // the dialer checks the address
		}}
	s.sched = newScheduler(s)
	return s, nil
}

// Open starts delivering, beginning with whatever is due.
func (s *Service) Open() { s.sched.start() }

// Close stops delivering and waits for attempts in flight; deliveries
// left resume on the next Open.
func (s *Service) Close() {
	s.sched.stop()
	s.client.CloseIdleConnections()
}

// eventPattern is an event name, optionally ending in ".*", or "*".
var eventPattern = regexp.MustCompile(`^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$`)

// matches reports whether event name matches one of patterns.
func matches(patterns []string, name string) bool {
	for _, p := range patterns {
		switch {
		case p == "*", p == name:
			return true
		case strings.HasSuffix(p, ".*") && strings.HasPrefix(name, p[:len(p)-1]):
			return true
		}
	}
	return false
}

// In creates a subscription.
type In struct {
	URL         string   `json:"url" jsonschema:"required,minLength=1,maxLength=2048"`
	Events      []string `json:"events" jsonschema:"required,minItems=1,maxItems=50"`
	Description *string  `json:"description,omitempty" jsonschema:"nullable,maxLength=500"`
	Active      *bool    `json:"active,omitempty"`
}

// Patch changes a subscription: only the keys present apply. Setting
// active to true re-enables a disabled subscription and forgets its
// failures.
type Patch struct {
	URL         *string   `json:"url,omitempty" jsonschema:"minLength=1,maxLength=2048"`
	Events      *[]string `json:"events,omitempty" jsonschema:"minItems=1,maxItems=50"`
	Description *string   `json:"description,omitempty" jsonschema:"nullable,maxLength=500"`
	Active      *bool     `json:"active,omitempty"`
}

// NoExtraProperties makes an unknown field of In a 422 (extra_forbidden).
func (In) NoExtraProperties() {}

// NoExtraProperties makes an unknown field of Patch a 422 (extra_forbidden).
func (Patch) NoExtraProperties() {}

// Validate reports every violation of in, located at its field names
// (["url"], ["events", 0]); the HTTP API puts them under "body".
func (in In) Validate() []errs.Violation {
	return validate(&in.URL, &in.Events, in.Description)
}

// Validate reports every violation of p, located at its field names
// (["url"], ["events", 0]); the HTTP API puts them under "body".
func (p Patch) Validate() []errs.Violation {
	return validate(p.URL, p.Events, p.Description)
}

func validate(u *string, events *[]string, desc *string) []errs.Violation {
	var vs []errs.Violation
	if u != nil {
		switch n := len(*u); {
		case n == 0:
			vs = append(vs, errs.Violation{Loc: []any{"url"}, Msg: "must not be empty", Type: "string_too_short"})
		case n > MaxURLLen:
			vs = append(vs, errs.Violation{Loc: []any{"url"}, Msg: "must be at most " + strconv.Itoa(MaxURLLen) + " characters", Type: "string_too_long"})
		}
	}
	if events != nil {
		switch n := len(*events); {
		case n == 0:
			vs = append(vs, errs.Violation{Loc: []any{"events"}, Msg: "must name at least 1 event", Type: "too_short"})
		case n > MaxEvents:
			vs = append(vs, errs.Violation{Loc: []any{"events"}, Msg: "must name at most " + strconv.Itoa(MaxEvents) + " events", Type: "too_long"})
		}
		for i, e := range *events {
			switch {
			case len(e) > MaxEventLen:
				vs = append(vs, errs.Violation{Loc: []any{"events", i}, Msg: "must be at most " + strconv.Itoa(MaxEventLen) + " characters", Type: "string_too_long"})
			case !eventPattern.MatchString(e):
				vs = append(vs, errs.Violation{Loc: []any{"events", i}, Msg: `must be an event name ("crm.deal.won"), a namespace ("invoicing.*") or "*"`, Type: "string_pattern_mismatch"})
			}
		}
	}
	if desc != nil && len([]rune(*desc)) > MaxDescriptionLen {
		vs = append(vs, errs.Violation{Loc: []any{"description"}, Msg: "must be at most " + strconv.Itoa(MaxDescriptionLen) + " characters", Type: "string_too_long"})
	}
	return vs
}

func (s *Service) guardURL(ctx context.Context, u string) error {
	if err := s.checkURL(ctx, u); err != nil {
		return errs.Validation(errs.Violation{Loc: []any{"url"}, Msg: err.Error(), Type: "value_error"})
	}
	return nil
}

// Create adds a subscription and returns it with its secret, which is
// never shown again.
func (s *Service) Create(ctx context.Context, tenant, actor string, in In) (*Created, error) {
	if vs := in.Validate(); len(vs) > 0 {
		return nil, errs.Validation(vs...)
	}
	if err := s.guardURL(ctx, in.URL); err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	v := &stored{Subscription: Subscription{ID: s.ids.New("whk", now), URL: in.URL, Events: in.Events, Active: true,
		CreatedAt: now, UpdatedAt: now}, Secret: "whsec_" + ids.Token(32)}
	if in.Description != nil {
		v.Description = *in.Description
	}
	if in.Active != nil {
		v.Active = *in.Active
	}
	err := s.st.Update(ctx, func(tx store.Txn) error {
		have, _, err := subs.List(tx, tenant, store.Page{Limit: MaxSubscriptions})
		if err != nil {
			return err
		}
		if len(have) >= MaxSubscriptions {
			return errs.Conflictf("a workspace may have at most %d webhooks", MaxSubscriptions)
		}
		if err := subs.Put(tx, tenant, v); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "create", Entity: "webhook", EntityID: v.ID,
			After: audit.Marshal(v.Subscription)})
	})
	if err != nil {
		return nil, err
	}
	s.forget(tenant)
	return &Created{Subscription: v.Subscription, Secret: v.Secret}, nil
}

// Get returns a subscription of tenant (without its secret).
func (s *Service) Get(ctx context.Context, tenant, id string) (*Subscription, error) {
	var v *stored
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		v, err = subs.Get(r, tenant, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &v.Subscription, nil
}

// List returns one page of tenant's subscriptions, newest first.
func (s *Service) List(ctx context.Context, tenant string, p store.Page) ([]*Subscription, string, error) {
	var page []*stored
	var next string
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		page, next, err = subs.List(r, tenant, p)
		return err
	})
	out := make([]*Subscription, len(page))
	for i, v := range page {
		out[i] = &v.Subscription
	}
	return out, next, err
}

// Update applies p to a subscription.
func (s *Service) Update(ctx context.Context, tenant, actor, id string, p Patch) (*Subscription, error) {
	if vs := p.Validate(); len(vs) > 0 {
		return nil, errs.Validation(vs...)
	}
	if p.URL != nil {
		if err := s.guardURL(ctx, *p.URL); err != nil {
			return nil, err
		}
	}
	var out *Subscription
	err := s.st.Update(ctx, func(tx store.Txn) error {
		v, err := subs.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		before := v.Subscription
		if p.URL != nil {
			v.URL = *p.URL
		}
		if p.Events != nil {
			v.Events = *p.Events
		}
		if p.Description != nil {
			v.Description = *p.Description
		}
		if p.Active != nil {
			v.Active = *p.Active
			if v.Active {
				v.FailingSince, v.DisabledReason = nil, nil
			}
		}
		v.UpdatedAt = s.clock.Now().UTC()
		if err := subs.Put(tx, tenant, v); err != nil {
			return err
		}
		out = &v.Subscription
		return audit.Write(tx, tenant, &s.ids, audit.Entry{At: v.UpdatedAt, Actor: actor, Action: "update", Entity: "webhook", EntityID: v.ID,
			Before: audit.Marshal(before), After: audit.Marshal(v.Subscription)})
	})
	if err != nil {
		return nil, err
	}
	s.forget(tenant)
	return out, nil
}

// Delete removes a subscription; its pending deliveries are dropped when
// they come due.
func (s *Service) Delete(ctx context.Context, tenant, actor, id string) error {
	err := s.st.Update(ctx, func(tx store.Txn) error {
		v, err := subs.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := subs.Delete(tx, tenant, id); err != nil {
			return err
		}
		return audit.Write(tx, tenant, &s.ids, audit.Entry{At: s.clock.Now(), Actor: actor, Action: "delete", Entity: "webhook", EntityID: id,
			Before: audit.Marshal(v.Subscription)})
	})
	if err == nil {
		s.forget(tenant)
	}
	return err
}

// Deliveries returns one page of a subscription's deliveries, newest
// first.
func (s *Service) Deliveries(ctx context.Context, tenant, id string, p store.Page) ([]*Delivery, string, error) {
	var page []*deliveryRecord
	var next string
	err := s.st.View(ctx, func(r store.Reader) error {
		if _, err := subs.Get(r, tenant, id); err != nil {
			return err
		}
		var err error
		page, next, err = deliveries.ListBy(r, tenant, "sub", []any{id}, p)
		return err
	})
	out := make([]*Delivery, len(page))
	for i, d := range page {
		out[i] = &d.Delivery
	}
	return out, next, err
}

// Redeliver sends a delivery's event again, as a new delivery due now.
// The subscription must be active (409 otherwise).
func (s *Service) Redeliver(ctx context.Context, tenant, subID, deliveryID string) (*Delivery, error) {
	now := s.clock.Now().UTC()
	var out *Delivery
	err := s.st.Update(ctx, func(tx store.Txn) error {
		sub, err := subs.Get(tx, tenant, subID)
		if err != nil {
			return err
		}
		old, err := deliveries.Get(tx, tenant, deliveryID)
		if err != nil || old.SubscriptionID != subID {
			return errs.NotFoundf("delivery not found")
		}
		if !sub.Active {
			return errs.Conflictf("webhook is disabled; enable it first")
		}
		d := &deliveryRecord{Delivery: Delivery{ID: s.ids.New("whd", now), SubscriptionID: subID, EventID: old.EventID,
			Event: old.Event, Status: StatusPending, CreatedAt: now, NextAttemptAt: &now, RedeliveryOf: &old.ID}, Body: old.Body}
		if err := deliveries.Put(tx, tenant, d); err != nil {
			return err
		}
		out = &d.Delivery
		return tx.Set(dueKey(now, tenant, d.ID), nil)
	})
	if err != nil {
		return nil, err
	}
	s.sched.wake()
	return out, nil
}

// forget drops tenant's cached subscriptions after a change.
func (s *Service) forget(tenant string) {
	s.mu.Lock()
	delete(s.cache, tenant)
	s.mu.Unlock()
}

// active returns tenant's active subscriptions, cached.
func (s *Service) active(tenant string) ([]*stored, error) {
	s.mu.Lock()
	v, ok := s.cache[tenant]
	if ok && s.cfg.Owns != nil && time.Since(s.cachedAt[tenant]) > SharedCacheTTL {
		ok = false // another node may have changed them
	}
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	loaded := time.Now()
	var out []*stored
	err := s.st.View(context.Background(), func(r store.Reader) error {
		page, _, err := subs.List(r, tenant, store.Page{Limit: MaxSubscriptions})
		for _, v := range page {
			if v.Active {
				out = append(out, v)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cache[tenant] = out
	if s.cfg.Owns != nil {
		s.cachedAt[tenant] = loaded
	}
	s.mu.Unlock()
	return out, nil
}

// Sign returns the Bas-Signature header value for body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	_, _ = io.WriteString(m, ts)
	_, _ = m.Write([]byte{'.'})
	_, _ = m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}
