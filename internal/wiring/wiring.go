// Package wiring holds the services a workspace wires behind its public
// API, for this module's own packages: httpapi serves them over HTTP. An
// embedder reaches the same services through bas's typed calls and
// capabilities; nothing here is part of the API.
//
// bas.Workspace.Internal hands out a *Services (typed any, so no exported
// identifier of a public package names this package's types).
package wiring

import (
	"context"
	"encoding/json"

	"github.com/bas-platform/bas/store"

	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/apps/boards"
	"github.com/bas-platform/bas/internal/apps/crm"
	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/apps/docs"
	"github.com/bas-platform/bas/internal/apps/invoicing"
	"github.com/bas-platform/bas/internal/apps/templates"
	"github.com/bas-platform/bas/internal/apps/usecases"
	"github.com/bas-platform/bas/internal/apps/webhooks"
	"github.com/bas-platform/bas/internal/telemetry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// Services are a workspace's internal services.
type Services struct {
	access     *access.Service
	automation *automation.Service
	decisions  *decisions.Service
	docs       *docs.Service
	crm        *crm.Service
	invoicing  *invoicing.Service
	boards     *boards.Service
	templates  *templates.Service
	usecases   *usecases.Service
	webhooks   *webhooks.Service
	ai         *ai.Service
	tel        *telemetry.Telemetry
}

// Config lists the services.
type Config struct {
	Access     *access.Service
	Automation *automation.Service
	Decisions  *decisions.Service
	Docs       *docs.Service
	CRM        *crm.Service
	Invoicing  *invoicing.Service
	Boards     *boards.Service
	Templates  *templates.Service
	UseCases   *usecases.Service
	Webhooks   *webhooks.Service
	AI         *ai.Service
	Telemetry  *telemetry.Telemetry // nil when metrics and traces are off
}

// New returns the services of cfg.
func New(cfg Config) *Services {
	return &Services{access: cfg.Access, automation: cfg.Automation, decisions: cfg.Decisions, docs: cfg.Docs,
		crm: cfg.CRM, invoicing: cfg.Invoicing, boards: cfg.Boards, templates: cfg.Templates, usecases: cfg.UseCases,
		webhooks: cfg.Webhooks, ai: cfg.AI, tel: cfg.Telemetry}
}

// Of returns the services behind v, what bas.Workspace.Internal returns;
// it panics when v is not one (a bug of this module).
func Of(v any) *Services { return v.(*Services) }

// Access returns the access service (tenants, people, keys, invitations).
func (s *Services) Access() *access.Service { return s.access }

// Automation returns the automation service: workspace and process
// settings, and the autonomy gate.
func (s *Services) Automation() *automation.Service { return s.automation }

// Decisions returns the decisions service: decisions, their cases and
// feedback, and the agreement ledger.
func (s *Services) Decisions() *decisions.Service { return s.decisions }

// Docs returns the documents app: types, uploads, extraction, validation
// and review.
func (s *Services) Docs() *docs.Service { return s.docs }

// CRM returns the CRM app: companies, contacts, deals on pipelines with
// their board, and activities.
func (s *Services) CRM() *crm.Service { return s.crm }

// Invoicing returns the invoicing app: customers, invoices, payments and
// collection.
func (s *Services) Invoicing() *invoicing.Service { return s.invoicing }

// Boards returns the boards app: boards, their statuses, columns and
// groups, and items.
func (s *Services) Boards() *boards.Service { return s.boards }

// Templates returns the process template catalog and its installations.
func (s *Services) Templates() *templates.Service { return s.templates }

// UseCases returns the use-case catalog and the workspace registers.
func (s *Services) UseCases() *usecases.Service { return s.usecases }

// Webhooks returns the outbound webhooks: subscriptions and their
// deliveries.
func (s *Services) Webhooks() *webhooks.Service { return s.webhooks }

// AI returns the AI connector: each workspace's language-model connection,
// its token usage and call records. Its provider (connector.openai) fills
// ai.complete, ai.extract, ai.classify and ai.draft.
func (s *Services) AI() *ai.Service { return s.ai }

// HTTPRequest opens the span of an API request on the route pattern
// (e.g. "GET /v1/process-runs/:id") and returns the function that records
// its end: the status answered and the tenant, once known. Without metrics
// and traces it costs nothing.
func (s *Services) HTTPRequest(ctx context.Context, method, route, requestID string) (context.Context, func(status int, tenant string)) {
	return s.tel.HTTPRequest(ctx, method, route, requestID)
}

// Authenticate resolves a session token or API key to its principal; an
// unknown, expired or revoked one is errs.Unauthenticated.
func (s *Services) Authenticate(ctx context.Context, token string) (*access.Principal, error) {
	return s.access.Authenticate(ctx, token)
}

// Engine is what runengine.Engine.Internal returns.
type Engine interface {
	// Emit writes an event within tx (an app's own transaction); it is
	// emitted if and only if tx commits.
	Emit(tx store.Txn, tenant, name string, data any) error
	// Kick tells the engine, once tx has committed, that events wait.
	Kick()
	// StartJSON is Start answering the run's JSON view (the HTTP fast
	// path: the worker encodes it, no snapshot is made).
	StartJSON(ctx context.Context, p runengine.StartParams) (json.RawMessage, error)
}

// EngineOf returns the plumbing of an engine.
func EngineOf(e *runengine.Engine) Engine { return e.Internal().(Engine) }

// ChangeQueue is the access app as process's change queue.
func ChangeQueue(a *access.Service) process.ChangeQueue { return changeQueue{a} }

type changeQueue struct{ a *access.Service }

func (q changeQueue) FourEyes(ctx context.Context, tenant string) (bool, error) {
	return q.a.FourEyes(ctx, tenant)
}

func (q changeQueue) ProposeChangeTx(tx store.Txn, tenant, kind, requester, summary string, payload any) (string, error) {
	c, err := q.a.ProposeChangeTx(tx, tenant, kind, requester, summary, payload)
	if err != nil {
		return "", err
	}
	return c.ID, nil
}
