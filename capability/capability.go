// Package capability is the provider contract: what a vendor compiles
// against to fill capabilities, and what the engine calls. A Capability is a
// named action with JSON Schemas for its arguments and result (email.send,
// task.create, erp.purchase_order.get ...). A Provider fills one or more
// capabilities: a built-in app, a connector or a vendor's plugin all
// implement the same interface, so the engine cannot tell them apart.
//
// The package is a leaf: the contract's types (Provider, Call, Info, App,
// Event, Health), the error kinds a call can end with, the standard
// capabilities' ids, argument and result types and declarations
// (StandardSpecs), the built-in apps (BuiltinApps), and Evidence, what the
// findings of every check cite. It imports no store, no
// schema library and no registry, so a vendor's plugin (plugins/sdk) stays
// small. The registry that binds capabilities to providers per workspace,
// the catalog's reflected schemas, the connectors and the integrations
// catalog live beside it in package capability/registry.
package capability

import (
	"context"
	"encoding/json"
	"strings"
)

// Capability describes one callable action.
type Capability struct {
	// ID is the dotted name steps use ("email.send").
	ID string `json:"id"`
	// Name is a short human title.
	Name string `json:"name"`
	// Description says what a call does.
	Description string `json:"description"`
	// Args is the JSON Schema arguments must satisfy; they are validated
	// before any provider sees them.
	Args json.RawMessage `json:"args_schema"`
	// Result is the JSON Schema of a successful result.
	Result json.RawMessage `json:"result_schema"`
}

// Kind says how a provider is reached.
type Kind string

// The provider kinds.
const (
	KindBuiltin   Kind = "builtin"
	KindConnector Kind = "connector"
	KindPlugin    Kind = "plugin"
)

// Info describes a provider.
type Info struct {
	// ID names the provider in bindings ("builtin.email", "plugin.acme-erp").
	ID string `json:"id"`
	// Name is a human title.
	Name string `json:"name"`
	// Kind is builtin, connector or plugin.
	Kind Kind `json:"kind"`
	// Capabilities lists the capability ids the provider fills.
	Capabilities []string `json:"capabilities"`
	// App, when set, is the app the provider describes (its API prefix and
	// events); it is listed by GET /v1/apps.
	App *App `json:"app,omitempty"`
	// Coming marks a declared connector that is not built yet: it is listed
	// with its capabilities but never fills one by default, cannot be bound,
	// and its calls fail with bas.ErrUnavailable.
	Coming bool `json:"coming,omitempty"`
}

// App describes a workspace app: built-in ones and plugin apps alike.
type App struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	API          API      `json:"api"`
	Events       Events   `json:"events"`
	Capabilities []string `json:"capabilities"`
}

// API is an app's HTTP surface.
type API struct {
	// Prefix is the path prefix of the app's endpoints ("/v1/docs").
	Prefix string `json:"prefix"`
}

// Events lists the event names an app emits and consumes.
type Events struct {
	Emits    []string `json:"emits"`
	Consumes []string `json:"consumes"`
}

// Call is one capability invocation.
type Call struct {
	// Tenant is the workspace the call acts for. A provider must keep each
	// tenant's data apart.
	Tenant string `json:"tenant"`
	// Capability is the capability id.
	Capability string `json:"capability"`
	// Args are the arguments, already valid against the capability's schema.
	Args json.RawMessage `json:"args"`
	// IdempotencyKey is the same for every attempt that may repeat an
	// earlier one ("<run>/<step>/<attempt>"); a provider that acts in a
	// system of record uses it to act at most once.
	IdempotencyKey string `json:"idempotency_key"`
}

// Provider fills capabilities.
type Provider interface {
	// Info describes the provider. It is called once when the provider is
	// registered, and again when a plugin restarts.
	Info() Info
	// Call performs one capability call and returns its JSON result. It must
	// honour ctx's deadline.
	Call(ctx context.Context, call Call) (json.RawMessage, error)
}

// ReturnsAtOnce is implemented by a provider whose calls never block: they
// do in-memory work only and return within microseconds. They wait for no
// network, write or read no store (a read of Badger waits for the commits
// in flight to land), and wait for no other goroutine, channel or lock a
// slow path holds; nor do they call the run engine and wait for its
// answer. A caller may then make the call on its own goroutine
// instead of handing it to another: the run engine makes such a call in
// the worker that owns the run, which saves two goroutine hand-offs per
// step. The registry honours it only for a built-in provider
// (KindBuiltin). A provider that blocks while claiming it holds up every
// run of that worker for as long as it blocks.
type ReturnsAtOnce interface {
	ReturnsAtOnce()
}

// Health is a provider's live state.
type Health struct {
	// Status is "connected", "starting", "failed", "coming" or "not_configured".
	Status string `json:"status"`
	// Detail says why, when the status is not "connected".
	Detail string `json:"detail,omitempty"`
}

// HealthChecker is implemented by providers whose health can change
// (plugins, connectors). Providers without it are always connected.
type HealthChecker interface {
	Health(ctx context.Context) Health
}

// Describer is implemented by providers that bring capabilities of their own
// beyond the standard catalog (a vendor's actions), with their JSON Schemas.
// The registry adds them to its catalog when the provider is registered; an
// id the catalog already has keeps its existing definition.
type Describer interface {
	Capabilities() []Capability
}

// Event is an event a provider sends back to the workspace.
type Event struct {
	Tenant string          `json:"tenant"`
	Name   string          `json:"name"`
	Data   json.RawMessage `json:"data"`
}

// ReservedNamespace returns the namespace of an event name the workspace
// itself owns (process.*, task.*, approval.*, and the built-in apps':
// docs.*, crm.* ...), and whether it is one: only the workspace emits such
// events, so neither a plugin nor a caller of POST /v1/events can pass
// off an event as a run's end, a decision or a validated document.
func ReservedNamespace(name string) (string, bool) {
	ns, _, _ := strings.Cut(name, ".")
	switch ns {
	case "process", "task", "approval", "docs", "crm", "invoicing", "boards", "usecases", "ai", "webhook",
		"decisions", "automation", "access", "capabilities", "tasks", "processes", "bas":
		return ns, true
	}
	return "", false
}

// EventSink receives events providers emit (a plugin's events reach the
// engine's bus through it).
type EventSink interface {
	Emit(ctx context.Context, ev Event) error
}
