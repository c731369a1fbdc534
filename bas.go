// Package bas is an embeddable engine for a multi-tenant business-automation
// workspace: versioned processes whose durable runs call capabilities bound
// to providers (built-in apps, connectors, go-plugin subprocesses), with
// people in the loop through human tasks and approvals, and the workspace
// apps around it (documents, CRM, invoicing, boards, use cases, access).
//
// Open a workspace on a directory (Badger is the default store):
//
//	ws, err := bas.Open(ctx, bas.Options{Dir: "data"})
//	if err != nil { ... }
//	defer ws.Close()
//
// and serve its HTTP API with httpapi.New, or drive it from Go with typed
// calls: Start (idempotent with a key), WaitRun, Subscribe, CompleteTask,
// Decide, Cancel, Publish, and Call for any capability (the door to the
// workspace apps).
//
// # Seams
//
// Three seams let a host replace parts: Store (where state lives; see package
// store), Provider (what a capability call goes to; see package capability)
// and Clock (all time comes from it, so tests can move it by hand).
package bas

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
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
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/internal/telemetry"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/plugins"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Store is the storage seam (see package store).
type Store = store.Store

// Provider is the capability provider seam (see package capability).
type Provider = capability.Provider

// Clock is the time seam: Now and NewTimer.
type Clock = clock.Clock

// FakeClock is a Clock that moves only when told to; tests use it.
type FakeClock = clock.Fake

// NewFakeClock returns a FakeClock reading t.
var NewFakeClock = clock.NewFake

// Error kinds: test an error with errors.Is (cockroachdb/errors' Is, or the
// standard library's for errors returned by this package's API).
var (
	ErrNotFound        = errs.NotFound
	ErrConflict        = errs.Conflict
	ErrInvalid         = errs.Invalid
	ErrForbidden       = errs.Forbidden
	ErrUnauthenticated = errs.Unauthenticated
	ErrTooLarge        = errs.TooLarge
	ErrRateLimited     = errs.RateLimited
	ErrUnavailable     = errs.Unavailable
)

// Options configure Open.
type Options struct {
	// Dir is the directory of the default Badger store. Defaults to "data".
	// Ignored when Store is set.
	Dir string
	// InMemory opens the default Badger store in memory (nothing survives
	// Close); for tests. Ignored when Store is set.
	InMemory bool
	// Store is where state lives. Defaults to Badger under Dir; a Store
	// given here is closed by Workspace.Close. Unless Cluster is set, the
	// workspace takes itself for the store's only writer: it serves kept
	// sessions and keys without reading them again until it writes access
	// records itself, so another process writing the same store would see
	// its sign-outs and revocations act late; and the autonomy gate keeps
	// the day's counts of automatic actions in memory, so another writer's
	// decisions would not count against this one's daily limits; and the
	// HTTP API tells an Idempotency-Key never stored from memory, so a
	// request retried here under a key another writer stored since this
	// workspace opened would act again. Share a store between processes
	// (or workspaces) only as a Cluster.
	Store Store
	// PostgresDSN, when set (and Store is not), keeps state in PostgreSQL
	// (or CockroachDB, YugabyteDB) instead of Badger: a connection string
	// such as "postgres://bas@db:5432/bas?sslmode=verify-full". See
	// store/pgstore and the README's Scaling section. One workspace works
	// on a database and schema at a time; another opened on it waits in
	// Open as a standby until the first is gone (unless Cluster is set).
	PostgresDSN string
	// Postgres is a connection pool to keep state in instead of
	// PostgresDSN; the caller keeps it (Workspace.Close leaves it open).
	Postgres *pgxpool.Pool
	// PostgresSchema is the PostgreSQL schema of bas's tables, created
	// when missing. Defaults to "public".
	PostgresSchema string
	// Cluster makes this workspace one node of several sharing one
	// PostgreSQL database and schema (PostgresDSN or Postgres, or a Store
	// the nodes share): the runs, timers and schedules are spread over
	// the live nodes by shard leases kept in the database, every node
	// serves the whole API, and a node that dies has its runs finished by
	// the others once its leases expire (ClusterLeaseTTL). See the
	// README's Scaling section. Defaults to false: one workspace works on
	// a PostgreSQL database at a time, another waiting in Open as a
	// standby.
	Cluster bool
	// NodeID names this node among the Cluster's nodes; it must be unique
	// per node. Defaults to host name, process id and a random suffix.
	NodeID string
	// ClusterShards is the number of shards runs are spread over; every
	// node must use the same number. Defaults to 32.
	ClusterShards int
	// ClusterLeaseTTL is how long a dead node's leases outlive it (they
	// are renewed every third of it). Defaults to 15s.
	ClusterLeaseTTL time.Duration
	// Clock tells the time. Defaults to the wall clock.
	Clock Clock
	// Logger receives structured logs. Defaults to discarding them.
	Logger *slog.Logger
	// Providers are extra capability providers (connectors, in-process
	// vendor providers) registered beside the built-in ones. A capability
	// two providers fill (email.send beside the outbox, say) is unbound
	// until a tenant binds one of them (PUT
	// /v1/capabilities/{id}/binding); a provider with the id builtin.email
	// takes the outbox's place instead, and must fill email.send.
	Providers []Provider
	// PluginDir, when set, is a directory whose executables are loaded as
	// provider plugins. Open fails with ErrInvalid when it is not a
	// directory it can read; a plugin in it that fails to load is logged
	// and shown failed (GET /v1/connections), and Open goes on.
	PluginDir string
	// Plugins are explicit paths of provider plugins to load. Open fails
	// with ErrInvalid when one is not an executable file, is listed twice
	// or lies in PluginDir (which loads it already, unless its name begins
	// with a dot, as LoadDir skips such files); a plugin that is there
	// but fails to load (not a bas plugin, a bad checksum) is logged and
	// shown failed, as one in PluginDir.
	Plugins []string
	// CallTimeout bounds one capability call (in process or to a plugin).
	// Defaults to 30s.
	CallTimeout time.Duration
	// PluginEnv is added to every plugin's environment ("KEY=value"; Open
	// fails with ErrInvalid on an entry without a key and "="), which
	// otherwise holds only PATH, HOME, TMPDIR, locale and proxy settings.
	PluginEnv []string
	// MaxUploadBytes bounds an uploaded document. Defaults to 25 MiB.
	MaxUploadBytes int64
	// PublicURL is the base URL the HTTP API is reached at
	// ("https://bas.example/api"), for links in emails and PDFs (an
	// invoice's PDF and payment link). Defaults to "/api".
	PublicURL string
	// PluginChecksums maps a plugin path or base name to its expected
	// SHA-256 (hex); a plugin that does not match is not started. Open
	// fails with ErrInvalid on a key that names no plugin of Plugins or
	// PluginDir (the plugin it was meant for would run unchecked).
	PluginChecksums map[string]string
	// CircuitFailures is how many consecutive failures that are a
	// provider's fault (timeouts, unavailable, malformed output, crashes;
	// not a caller's errors) open the circuit breaker of that provider and
	// capability: its calls then fail at once with ErrUnavailable until
	// CircuitCoolDown has passed and one trial call is let through. Use 1
	// to 1000. Defaults to 5.
	CircuitFailures int
	// CircuitCoolDown is how long an open circuit refuses calls before it
	// lets a trial call through. Use 1s to 24h. Defaults to 30s.
	CircuitCoolDown time.Duration

	// Workers is the number of run workers (each advances the runs whose id
	// hashes to it). Defaults to 2 x GOMAXPROCS.
	Workers int
	// MaxAttempts bounds the attempts of a failing capability call before
	// its step fails (retries back off from 1s, doubling, up to 5m).
	// Defaults to 5.
	MaxAttempts int
	// ApprovalExpiry is how long an approval stays pending before it
	// expires and stops its run. Defaults to 7 days.
	ApprovalExpiry time.Duration
	// Grace is how long Close lets capability calls in flight finish
	// before it cancels them; their runs resume on the next Open.
	// Defaults to 5s.
	Grace time.Duration
	// MaxRunsPerTenant and MaxRunsPerProcess cap the runs running (not
	// waiting for a person, a timer or an event) per tenant and per
	// process, so one tenant cannot take all the workers: a run started over
	// a cap is saved at once with its waiting_reason and takes its first
	// step when a run of its tenant (or process) ends or starts waiting,
	// high priority first. Use up to 1,000,000. Defaults to 0: no cap. They
	// count one node's runs and do nothing when Cluster is set.
	MaxRunsPerTenant, MaxRunsPerProcess int
	// MaxStartingPerTenant caps one tenant's starts in progress at once
	// (from Start, or Publish, to its durable answer); callers over it wait
	// in turn, so a tenant flooding starts or events cannot take the
	// processors from the others.
	// Use up to 1,000,000. Defaults to 0: no cap.
	MaxStartingPerTenant int
	// FairStartingPerTenant is the same cap applied only while another
	// tenant is active too (has a start in progress, or started a run or
	// committed a change beside another tenant's within the last second): a tenant alone keeps the whole engine, and a tenant
	// flooding starts beside others waits at the door, in turn, so their
	// runs keep close to the latency they have alone. Use up to 1,000,000,
	// or -1 for no such cap. Defaults to 0: GOMAXPROCS (one start in
	// progress per processor).
	FairStartingPerTenant int
	// MaxCallsPerTenant and MaxCallsPerProcess cap the capability calls in
	// flight per tenant and per process; a call over a cap waits for one of
	// its tenant's to end (the run shows why). Use up to 1,000,000.
	// Defaults to 0: no cap.
	MaxCallsPerTenant, MaxCallsPerProcess int
	// RateLimits bound the capability calls of each tenant's runs: at most
	// Limit calls per Per of a capability (crm.contact.create), or of every
	// capability whose id begins with a prefix ending in a dot (crm.), for
	// each value of Key when set (args.customer_id).
	// A call over a limit waits in the due-time index, its run showing why
	// in WaitingReason ("rate limit of crm.: 10 per 1s per
	// args.customer_id"); see runengine.Config.RateLimits for restarts and
	// clusters. Open fails with ErrInvalid on a limit whose Capability no
	// capability id matches (crm.* or crm, where crm. is meant), whose Key
	// is not under args, whose Limit is below 1 or whose Per is not above
	// zero. Defaults to none.
	RateLimits []RateLimit
	// SubscribeBuffer is how many recent events the workspace keeps for
	// subscribers (Subscribe); one that falls further behind is told it
	// missed events. Defaults to 4096.
	SubscribeBuffer int
	// Metrics, when set, receives the bas_... Prometheus series (never
	// the global registry unless given it). Defaults to none.
	Metrics prometheus.Registerer
	// TracerProvider, when set, traces API requests, run steps and
	// provider calls (into plugins too). Defaults to none, at no cost.
	TracerProvider trace.TracerProvider
	// WebhookAllow admits address ranges outbound webhooks refuse
	// otherwise (loopback, private, link-local, metadata ...), e.g.
	// 127.0.0.0/8 for a receiver on the same host. Defaults to none.
	WebhookAllow []netip.Prefix
	// WebhookResolver resolves webhook hosts. Defaults to
	// net.DefaultResolver.
	WebhookResolver WebhookResolver
	// SecretKey (32 bytes) seals stored secrets such as AI API keys.
	// Defaults to the key in <Dir>/secret.key, made the first time (a
	// random key per process for an in-memory workspace).
	SecretKey []byte
	// AIClient sends the AI connector's requests. Defaults to a plain
	// http.Client.
	AIClient *http.Client

	dirDefaulted bool // Dir was empty: a host's Store keeps no secret key file
}

// WebhookResolver looks up a host's addresses; *net.Resolver is one.
type WebhookResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = "data"
		o.dirDefaulted = true
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Workspace is an open bas engine: the store, the run engine, the registry
// of capabilities and every workspace app. It serves any number of tenants.
type Workspace struct {
	opts   Options
	store  Store
	clock  Clock
	logger *slog.Logger

	// The services, wired by Open.
	access   *access.Service
	registry *registry.Registry
	plugins  *plugins.Host // nil when no plugin is configured

	processes *process.Service // definitions and versions
	engine    *runengine.Engine

	automation *automation.Service // settings and the autonomy gate
	decisions  *decisions.Service  // decisions, feedback, the agreement ledger

	docs *docs.Service // the documents app
	crm  *crm.Service  // the CRM app

	templates *templates.Service // the process template catalog
	usecases  *usecases.Service  // the use-case catalog and register
	boards    *boards.Service    // the boards app

	invoicing *invoicing.Service   // the invoicing app
	webhooks  *webhooks.Service    // outbound webhooks
	tel       *telemetry.Telemetry // metrics and traces; nil when off

	ai *ai.Service // the AI connector (bas_ai.go)

	closeOnce sync.Once
	closeErr  error
}

// appTimers keeps an app's durable timers in the run engine's due-time
// index (the engine is wired after the apps, so it is looked up per call).
type appTimers struct{ ws *Workspace }

func (a appTimers) SetTimer(tx store.Txn, tenant, kind, token string, at time.Time) error {
	if a.ws.engine == nil {
		return errs.Unavailablef("the workspace is still opening")
	}
	return a.ws.engine.SetTimer(tx, tenant, kind, token, at)
}

func (a appTimers) CancelTimer(tx store.Txn, tenant, kind, token string, at time.Time) error {
	if a.ws.engine == nil {
		return errs.Unavailablef("the workspace is still opening")
	}
	return a.ws.engine.CancelTimer(tx, tenant, kind, token, at)
}

// appEvents hands the apps' events (documents, CRM, invoicing, boards, use cases) to the run engine's outbox
// (the engine is wired after the apps, so it is looked up per event).
type appEvents struct{ ws *Workspace }

func (d appEvents) Emit(tx store.Txn, tenant, name string, data any) error {
	if d.ws.engine == nil {
		return errs.Unavailablef("the workspace is still opening")
	}
	return wiring.EngineOf(d.ws.engine).Emit(tx, tenant, name, data)
}

func (d appEvents) Kick() {
	if d.ws.engine != nil {
		wiring.EngineOf(d.ws.engine).Kick()
	}
}

// Open opens a workspace: the store (Badger under Dir unless Store is set),
// the providers and plugins, and the run engine, which resumes the runs that
// were in flight when the workspace last closed or crashed. A Dir another
// workspace (in this process or another) holds open is an ErrConflict.
func Open(ctx context.Context, opts Options) (*Workspace, error) {
	if err := opts.validate(); err != nil {
		return nil, withKind(err)
	}
	opts = opts.withDefaults()
	st := opts.Store
	if st == nil {
		pg, err := postgresStore(ctx, opts)
		if err != nil {
			return nil, err
		}
		st = pg
	}
	if st == nil {
		bo := badgerstore.Options{InMemory: opts.InMemory, Logger: opts.Logger}
		if !opts.InMemory {
			bo.Dir = filepath.Clean(opts.Dir)
		}
		bs, err := badgerstore.Open(bo)
		if err != nil {
			return nil, withKind(errors.Wrapf(err, "open store in %s", opts.Dir))
		}
		st = bs
	}
	st = store.Hooked(st) // the HTTP layer's Idempotency-Keys commit with the change (store.AlsoInUpdate)
	ws := &Workspace{opts: opts, store: st, clock: opts.Clock, logger: opts.Logger}
	if err := ws.openTelemetry(); err != nil {
		_ = st.Close()
		return nil, err
	}
	// -- wiring: capabilities (registry, built-in providers, plugins)
	ws.registry = registry.New(registry.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger,
		CallTimeout: opts.CallTimeout, Observer: ws.callObserver(),
		CircuitFailures: opts.CircuitFailures, CircuitCoolDown: opts.CircuitCoolDown})
	for _, p := range opts.Providers {
		if err := ws.registry.Register(p); err != nil {
			_ = ws.Close()
			return nil, errors.Wrap(err, "register Options.Providers")
		}
	}
	for _, p := range registry.DeclaredConnectors() {
		if _, taken := ws.registry.Provider(p.Info().ID); !taken { // a host's real connector wins
			if err := ws.registry.Register(p); err != nil {
				_ = ws.Close()
				return nil, errors.Wrap(err, "declare connectors")
			}
		}
	}
	// listens is the process layer, made below, once it is: a plugin's
	// event in the meantime lands only where Uses lets it.
	var listens atomic.Pointer[process.Service]
	if opts.PluginDir != "" || len(opts.Plugins) > 0 {
		ws.plugins = plugins.NewHost(plugins.HostOptions{Logger: opts.Logger, Clock: opts.Clock,
			Checksums: opts.PluginChecksums, Sink: eventSink{ws}, CallTimeout: opts.CallTimeout, Env: opts.PluginEnv,
			Uses: ws.registry.Uses, // a plugin's events land only in tenants that use it
			// or, for an event its app declares, whose processes start on it
			Listens: func(ctx context.Context, tenant, event string) (bool, error) {
				if s := listens.Load(); s != nil {
					return s.Listens(ctx, tenant, event)
				}
				return false, nil
			},
			OnRestart: func(id string) {
				ws.tel.PluginRestarted(id)
				if err := ws.registry.Refresh(id); err != nil {
					opts.Logger.Error("refresh a restarted plugin", "provider", id, "error", err.Error())
				}
			}})
		var loaded []capability.Provider
		if opts.PluginDir != "" {
			ps, loadErrs := ws.plugins.LoadDir(ctx, opts.PluginDir)
			loaded = append(loaded, ps...)
			for _, err := range loadErrs {
				opts.Logger.Error("plugin not loaded", "error", err.Error())
			}
		}
		for _, path := range opts.Plugins {
			p, err := ws.plugins.Load(ctx, path)
			if err != nil {
				opts.Logger.Error("plugin not loaded", "path", path, "error", err.Error())
				continue
			}
			loaded = append(loaded, p)
		}
		// Plugins that failed to load are registered too, so
		// GET /v1/connections shows them failed with the reason.
		for _, p := range append(loaded, ws.plugins.Failed()...) {
			if err := ws.registry.Register(p); err != nil {
				info := p.Info()
				opts.Logger.Error("plugin not registered", "provider", info.ID, "error", err.Error())
				if pl, ok := p.(*plugins.Plugin); ok {
					pl.Stop("not registered: " + err.Error())
				}
				_ = ws.registry.Register(registry.Failed(info.ID, info.Name, capability.KindPlugin, err.Error()))
			}
		}
	}
	// The systems a workspace says it uses (its profile) pick connectors
	// in gaps and are the default list of GET /v1/integrations.
	ws.registry.SetSystems(func(ctx context.Context, tenant string) ([]string, error) {
		if ws.access == nil {
			return nil, nil
		}
		w, err := ws.access.Workspace(ctx, tenant)
		if err != nil {
			return nil, err
		}
		var profile struct {
			Systems []string `json:"systems"`
		}
		if json.Unmarshal(w.Profile, &profile) != nil {
			return nil, nil
		}
		for i, name := range profile.Systems {
			profile.Systems[i] = strings.TrimPrefix(name, "system:")
		}
		return profile.Systems, nil
	})
	// -- wiring: access
	var mailer access.Caller // email.send for sign-in codes and invitations
	if ws.registry != nil {
		mailer = ws.registry
	}
	ws.access = access.New(access.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger, Mailer: mailer,
		Shared: opts.Cluster,
		Apps: func() []string { // plugin apps keys may be limited to
			var out []string
			if ws.registry != nil {
				for _, a := range ws.registry.Apps() {
					out = append(out, a.ID)
				}
			}
			return out
		}})
	ws.processes = process.NewService(process.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger,
		Access: wiring.ChangeQueue(ws.access)})
	ws.access.RegisterChangeKind(process.ChangeKindUpdate, ws.processes.ApplyChangeTx,
		access.DecidedWith(access.PermProcessesManage))
	listens.Store(ws.processes)
	if ws.registry != nil {
		ws.registry.SetNeededBy(ws.processes.Needed)
	}
	// -- wiring: autonomy (decisions, automation settings and the gate)
	ws.decisions = decisions.New(decisions.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger, Caller: ws.registry})
	if err := ws.registry.Register(ws.decisions.Provider()); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "register the decisions provider")
	}
	ws.automation = automation.New(automation.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger,
		Changes: ws.access, Shared: opts.Cluster,
		ProcessExists: func(ctx context.Context, tenant, id string) error {
			_, err := ws.processes.Get(ctx, tenant, id)
			return err
		},
		WhatIfAgreement: func(r store.Reader, tenant, processID string) (*float64, error) {
			w, err := runengine.LatestWhatIf(r, tenant, processID)
			if err != nil || w == nil {
				return nil, err
			}
			return w.AgreementRate, nil
		}})
	ws.access.RegisterChangeKind(automation.ChangeKind, ws.automation.ApplyChangeTx,
		access.DecidedWith(access.PermAutomationManage))
	// -- wiring: docs
	ws.docs = docs.NewService(docs.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger, Events: appEvents{ws},
		MaxUploadBytes: opts.MaxUploadBytes})
	if err := ws.registry.Register(ws.docs.Provider()); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "register the docs provider")
	}
	if err := ws.openAI(); err != nil { // -- wiring: the AI connector
		_ = ws.Close()
		return nil, err
	}
	// An upload cut by a crash left its file pending. No upload of this
	// workspace has begun yet and, unless it is a Cluster's node, nothing
	// else writes the store (see Options.Store): every pending file is
	// left over. A node leaves the last hour's to the others' uploads.
	sweepAge := time.Duration(0)
	if opts.Cluster {
		sweepAge = time.Hour
	}
	if n, err := ws.docs.Sweep(ctx, sweepAge); err != nil {
		opts.Logger.Warn("docs: sweeping unfinished uploads failed", "error", err.Error())
	} else if n > 0 {
		opts.Logger.Info("docs: removed unfinished uploads", "files", n)
	}
	// -- wiring: boards (its events go to the engine's outbox as the docs app's do)
	ws.boards = boards.New(boards.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger, Events: appEvents{ws}})
	if err := ws.registry.Register(ws.boards.Provider()); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "register the boards provider")
	}
	// -- wiring: crm (its events reach the engine's outbox as the docs app's do)
	ws.crm = crm.New(crm.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger, Events: appEvents{ws},
		OwnerExists: func(ctx context.Context, tenant, userID string) error {
			_, err := ws.access.Member(ctx, tenant, userID)
			return err
		}})
	if err := ws.registry.Register(ws.crm.Provider()); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "register the crm provider")
	}
	// -- wiring: invoicing (customers link to the CRM's companies, invoices to its deals)
	ws.invoicing = invoicing.New(invoicing.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger,
		Events: appEvents{ws}, Timers: appTimers{ws}, Mailer: ws.registry, PublicURL: opts.PublicURL, Companies: ws.crm,
		WorkspaceName: func(ctx context.Context, tenant string) (string, error) {
			w, err := ws.access.Workspace(ctx, tenant)
			if err != nil {
				return "", err
			}
			return w.Name, nil
		}})
	if err := ws.registry.Register(ws.invoicing.Provider()); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "register the invoicing provider")
	}
	// -- wiring: catalogs (process templates, use cases)
	if err := ws.openCatalogs(); err != nil {
		_ = ws.Close()
		return nil, err
	}
	// -- wiring: engine
	if _, taken := ws.registry.Provider(mail.ProviderID); !taken {
		if err := ws.registry.Register(mail.NewProvider(st, opts.Clock)); err != nil {
			_ = ws.Close()
			return nil, errors.Wrap(err, "register the email outbox")
		}
	}
	if err := ws.openWebhooks(); err != nil {
		_ = ws.Close()
		return nil, err
	}
	eng, err := runengine.New(runengine.Config{Store: st, Clock: opts.Clock, Logger: opts.Logger,
		Capabilities: ws.registry, Processes: ws.processes, Gate: ws.automation.Gate(), CallTimeout: opts.CallTimeout,
		Workers: opts.Workers, MaxAttempts: opts.MaxAttempts, ApprovalTTL: opts.ApprovalExpiry, Grace: opts.Grace,
		MaxRunsPerTenant: opts.MaxRunsPerTenant, MaxRunsPerProcess: opts.MaxRunsPerProcess,
		MaxStartingPerTenant: opts.MaxStartingPerTenant, FairStartingPerTenant: opts.FairStartingPerTenant,
		MaxCallsPerTenant: opts.MaxCallsPerTenant, MaxCallsPerProcess: opts.MaxCallsPerProcess,
		RateLimits:      slices.Clone(opts.RateLimits), // the engine keeps them; the caller's slice is its own
		SubscribeBuffer: opts.SubscribeBuffer, Tap: ws.webhooks, Observer: ws.engineObserver(),
		Cluster: opts.clusterConfig()})
	if err != nil {
		_ = ws.Close()
		return nil, err
	}
	ws.engine = eng
	eng.HandleTimers(invoicing.TimerCollect, ws.invoicing.HandleTimer)
	eng.HandleTimers(invoicing.TimerOnboard, ws.invoicing.HandleTimer)
	if err := ws.registry.Register(eng.Provider()); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "register the task provider")
	}
	if err := eng.Open(ctx); err != nil {
		_ = ws.Close()
		return nil, errors.Wrap(err, "open the run engine")
	}
	ws.webhooks.Open()
	return ws, nil
}

// openCatalogs loads the process template catalog and the use-case
// catalog (each checked as it loads) and wires their services.
func (ws *Workspace) openCatalogs() error {
	opts := ws.opts
	tpls, err := templates.New(templates.Config{Store: ws.store, Clock: opts.Clock, Logger: opts.Logger,
		Processes: ws.processes, Gaps: ws.registry})
	if err != nil {
		return errors.Wrap(err, "load the process templates")
	}
	ws.templates = tpls
	ucs, err := usecases.New(usecases.Config{Store: ws.store, Clock: opts.Clock, Logger: opts.Logger,
		People: ws.access, Resolver: ws.registry, Events: appEvents{ws},
		Template: func(id string) (usecases.TemplateInfo, bool) {
			t, ok := tpls.Catalog().Get(id)
			return usecases.TemplateInfo{Requires: t.Requires, Available: t.Status == templates.StatusAvailable}, ok
		}})
	if err != nil {
		return errors.Wrap(err, "load the use cases")
	}
	ws.usecases = ucs
	return nil
}

// eventSink takes events providers emit (plugins) onto the engine's bus.
type eventSink struct{ ws *Workspace }

var _ plugins.EmitterSink = eventSink{}

// Emit publishes ev durably and starts the runs it triggers; the event's
// emitter is "provider".
func (s eventSink) Emit(ctx context.Context, ev capability.Event) error {
	return s.EmitFrom(ctx, "provider", ev)
}

// EmitFrom is Emit of an event the plugin whose provider id is provider
// emitted: the event and the runs it starts name it as their emitter
// (plugins.EmitterSink).
func (s eventSink) EmitFrom(ctx context.Context, provider string, ev capability.Event) error {
	if s.ws.engine == nil {
		return errs.Unavailablef("the workspace is still opening")
	}
	var data map[string]any
	if len(ev.Data) > 0 {
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			return errs.Invalidf([]any{"data"}, "type_error", "event data must be a JSON object")
		}
	}
	_, err := s.ws.engine.Publish(ctx, runengine.PublishParams{Tenant: ev.Tenant, Name: ev.Name, Data: data, Emitter: provider})
	return err
}

// Engine returns the run engine: runs, tasks, approvals, events, cockpit.
func (ws *Workspace) Engine() *runengine.Engine { return ws.engine }

// AgreementRate is the share of decided actions people agreed with over
// the last 30 days, or nil when none was decided.
func (ws *Workspace) AgreementRate(ctx context.Context, tenant string) (*float64, error) {
	return ws.decisions.AgreementRate(ctx, tenant)
}

// Ping checks that the store answers.
func (ws *Workspace) Ping(ctx context.Context) error {
	return ws.store.View(ctx, func(store.Reader) error { return nil })
}

// Internal is not part of the API: it hands this module's own packages
// (httpapi) the workspace's internal services, as an any whose type may
// change at any time (as database/sql's Conn.Raw hands a driver's
// connection). Embedders use the typed calls and capabilities instead.
func (ws *Workspace) Internal() any {
	return wiring.New(wiring.Config{Access: ws.access, Automation: ws.automation, Decisions: ws.decisions,
		Docs: ws.docs, CRM: ws.crm, Invoicing: ws.invoicing, Boards: ws.boards, Templates: ws.templates,
		UseCases: ws.usecases, Webhooks: ws.webhooks, AI: ws.ai, Telemetry: ws.tel})
}

// Processes returns the process service (definitions and versions).
func (ws *Workspace) Processes() *process.Service { return ws.processes }

// Capabilities returns the capability registry.
func (ws *Workspace) Capabilities() *registry.Registry { return ws.registry }

// Apps lists the built-in apps and the apps plugins describe.
func (ws *Workspace) Apps() []capability.App { return ws.registry.Apps() }

// Store returns the workspace's store.
func (ws *Workspace) Store() Store { return ws.store }

// Clock returns the workspace's clock.
func (ws *Workspace) Clock() Clock { return ws.clock }

// Logger returns the workspace's logger.
func (ws *Workspace) Logger() *slog.Logger { return ws.logger }

// Close stops the workspace gracefully: new work is refused, in-flight
// steps end or are left resumable, plugins are stopped and the store is
// closed. Calling Close again returns the first result.
func (ws *Workspace) Close() error {
	ws.closeOnce.Do(func() {
		if ws.engine != nil {
			if err := ws.engine.Close(); err != nil {
				ws.logger.Error("stop the run engine", "error", err.Error())
			}
		}
		if ws.webhooks != nil {
			ws.webhooks.Close()
		}
		if ws.plugins != nil {
			if err := ws.plugins.Close(); err != nil {
				ws.logger.Error("stop plugins", "error", err.Error())
			}
		}
		ws.closeErr = ws.store.Close()
	})
	return ws.closeErr
}
