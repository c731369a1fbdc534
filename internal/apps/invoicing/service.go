// Package invoicing is the invoicing app: customers, invoices with a real
// lifecycle (draft -> open -> paid | void | uncollectible), integer-cent
// money, gap-free invoice numbers, PDFs, a simulated payments account with
// payment links, and collection (overdue, reminders) moved on by the clock
// through the run engine's due-time index.
//
// Every change and the events it emits (invoicing.invoice.*,
// invoicing.payment.received) commit in one transaction; counters (a
// customer's balance, the workspace's invoice number) are kept in the same
// transaction as the change that moves them.
//
// Violations (a 422) are located at the inputs' field names (["lines", 0,
// "quantity"]); the HTTP API puts them under "body". A customer's balance
// past the int64 range is a violation at an empty location.
package invoicing

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/clock"
)

// EventSink receives the app's events: Emit writes the event to the run
// engine's outbox inside tx, the transaction of the change; Kick, called
// after it commits, tells the dispatcher to look.
type EventSink interface {
	Emit(tx store.Txn, tenant, name string, data any) error
	Kick()
}

// Timers keeps the app's durable timers in the run engine's due-time index
// (runengine.Engine implements it); the engine calls HandleTimer when one
// is due.
type Timers interface {
	SetTimer(tx store.Txn, tenant, kind, token string, at time.Time) error
	CancelTimer(tx store.Txn, tenant, kind, token string, at time.Time) error
}

// Caller performs capability calls (the capability registry): invoices and
// reminders go out through email.send.
type Caller interface {
	Call(ctx context.Context, call capability.Call) (json.RawMessage, error)
}

// Companies is what the app asks of the CRM: whether a company or a deal
// exists in a tenant (nil error), or not (an error marked errs.NotFound).
type Companies interface {
	CompanyExists(ctx context.Context, tenant, id string) error
	DealExists(ctx context.Context, tenant, id string) error
}

// Timer kinds of the app.
const (
	// TimerCollect moves an invoice's collection on (token: invoice id).
	TimerCollect = "invoicing.collect"
	// TimerOnboard completes a simulated onboarding (token: "account").
	TimerOnboard = "invoicing.onboard"
)

// Config configures New.
type Config struct {
	// Store is where customers, invoices and the account live. Required.
	Store store.Store
	// Clock tells the time. Defaults to the wall clock.
	Clock clock.Clock
	// Logger receives warnings. Defaults to discarding them.
	Logger *slog.Logger
	// Events receives invoicing.* events. Defaults to dropping them.
	Events EventSink
	// Timers keeps collection and onboarding timers. Defaults to none: the
	// clock then moves nothing on (for tools and tests of other parts).
	Timers Timers
	// Mailer sends email.send calls. Without it sending an invoice or a
	// reminder is errs.Unavailable.
	Mailer Caller
	// Companies checks company_id and deal_id against the CRM. Defaults to
	// none: ids are kept unchecked.
	Companies Companies
	// PublicURL is the base URL of the HTTP API, for the links in emails
	// and PDFs ("https://bas.example/api"). Defaults to "/api".
	PublicURL string
	// WorkspaceName returns a tenant's workspace name, the default business
	// name of its account. Defaults to "My business".
	WorkspaceName func(ctx context.Context, tenant string) (string, error)
	// OnboardingDelay is how long a simulated onboarding takes. Defaults to
	// 1 minute.
	OnboardingDelay time.Duration
	// PaymentLinkTTL is how long a payment link works. Defaults to 30 days.
	PaymentLinkTTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Events == nil {
		c.Events = noEvents{}
	}
	if c.PublicURL == "" {
		c.PublicURL = "/api"
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.OnboardingDelay <= 0 {
		c.OnboardingDelay = time.Minute
	}
	if c.PaymentLinkTTL <= 0 {
		c.PaymentLinkTTL = 30 * 24 * time.Hour
	}
	return c
}

type noEvents struct{}

func (noEvents) Emit(store.Txn, string, string, any) error { return nil }
func (noEvents) Kick()                                     {}

// Service is the invoicing app. It is safe for concurrent use.
type Service struct {
	cfg Config
	st  store.Store
	log *slog.Logger
	ids ids.Generator // makes the ids of the records it writes

	// numbering serializes finalizes per tenant stripe in this process, so
	// concurrent finalizes queue instead of conflicting on the counter
	// (the store's conflict retry still guards other processes).
	numbering [64]sync.Mutex
}

// New returns the invoicing app over cfg.Store. It panics when cfg.Store is
// nil: that is a wiring mistake, not a runtime condition.
func New(cfg Config) *Service {
	if cfg.Store == nil {
		panic("invoicing.New: Config.Store is required")
	}
	cfg = cfg.withDefaults()
	return &Service{cfg: cfg, st: cfg.Store, log: cfg.Logger}
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) stripe(tenant string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	return &s.numbering[h.Sum32()%uint32(len(s.numbering))]
}

// HandleTimer is the run engine's callback for the app's timers
// (register it with Engine.HandleTimers for TimerCollect and TimerOnboard).
func (s *Service) HandleTimer(ctx context.Context, t runengine.AppTimer) error {
	switch t.Kind {
	case TimerCollect:
		return s.collect(ctx, t)
	case TimerOnboard:
		return s.finishOnboarding(ctx, t)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
