package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/plugins/internal/logadapt"
	"github.com/bas-platform/bas/plugins/internal/wire"
	"github.com/cockroachdb/errors"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Host is the bas host seen from a plugin.
type Host interface {
	// Emit sends an event to the workspace's event bus. If the provider
	// describes an app (Info().App), the event's name must be one of the
	// app's Events.Emits. No name may be in a namespace the workspace owns
	// (process.*, approval.*, docs.* ...: capability.ReservedNamespace);
	// such an event is refused (sdk.Invalid). Tenant is required:
	// use the tenant of the call that caused the event, and that call's
	// ctx. The event lands only in a tenant that uses the provider (it
	// bound one of the provider's capabilities to it, or its processes
	// call one the provider alone fills, or, for an event the app
	// declares, its processes start on that event), or in the tenant of the call
	// whose ctx it is emitted with (a ctx of its own: of any call the
	// provider is serving); any other tenant is refused (sdk.Forbidden).
	Emit(ctx context.Context, ev capability.Event) error
	// Logger returns the plugin's logger; its lines appear in the host's log.
	Logger() *slog.Logger
}

// HostSetter is implemented by providers that want the Host. SetHost is
// called once the host has connected, before the first Call.
type HostSetter interface {
	SetHost(h Host)
}

// Describer is implemented by providers that describe the capabilities they
// fill (names, descriptions and JSON Schemas of arguments and results), so a
// workspace that does not know them yet can validate their calls. It is
// capability.Describer; the host passes the descriptions on.
type Describer = capability.Describer

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	logger *slog.Logger
}

// WithLogger sets the logger of the plugin process (go-plugin's messages and
// Host.Logger). Defaults to NewLogger(os.Stderr, slog.LevelInfo).
func WithLogger(l *slog.Logger) ServeOption {
	return func(c *serveConfig) { c.logger = l }
}

// Serve serves p to the bas host that started this process and returns when
// the host closes the connection. Run it from main and do nothing else
// there: nothing may be written to stdout before Serve. Started by hand
// rather than by a host, the binary says it is a plugin and exits with
// status 1.
func Serve(p capability.Provider, opts ...ServeOption) {
	var cfg serveConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = NewLogger(os.Stderr, slog.LevelInfo)
	}
	go exitWithHost(cfg.logger, os.Getppid())
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.PluginSets(newServerFunc(p, cfg.logger)),
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           logadapt.Hclog(cfg.logger),
	})
}

// exitWithHost ends the plugin when the host that started it is gone (the
// process is re-parented), for systems where the kernel does not kill it
// with the host (on Linux the host asks for that).
func exitWithHost(logger *slog.Logger, host int) {
	if host <= 1 {
		return
	}
	for range time.Tick(time.Second) {
		if os.Getppid() != host {
			logger.Error("the bas host is gone; exiting", "host_pid", host)
			os.Exit(1)
		}
	}
}

// NewLogger returns a logger writing JSON lines to w (the plugin's stderr)
// in the form the host relays into its own log at the lines' levels.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, logadapt.HclogJSON(level)))
}

func newServerFunc(p capability.Provider, logger *slog.Logger) func(*plugin.GRPCBroker) wire.ProviderServer {
	return func(broker *plugin.GRPCBroker) wire.ProviderServer {
		return &server{p: p, broker: broker, logger: logger}
	}
}

// server adapts a capability.Provider to the wire protocol.
type server struct {
	p      capability.Provider
	broker *plugin.GRPCBroker
	logger *slog.Logger

	mu       sync.Mutex
	hostConn *grpc.ClientConn
}

// recovered turns a panic of the provider into an error.
func (s *server) recovered(what string, r any) error {
	s.logger.Error("provider panicked", "in", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return errors.Newf("provider panicked in %s: %v", what, r)
}

func (s *server) Init(ctx context.Context, req *wire.InitRequest) (resp *wire.InitResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = &wire.InitResponse{Error: wire.EncodeError(ctx, s.recovered("Info", r))}, nil
		}
	}()
	if hs, ok := s.p.(HostSetter); ok {
		conn, err := s.broker.Dial(req.BrokerID)
		if err != nil {
			err = errors.Wrap(err, "connect to the host's event service")
			return &wire.InitResponse{Error: wire.EncodeError(ctx, err)}, nil
		}
		s.mu.Lock()
		old := s.hostConn
		s.hostConn = conn
		s.mu.Unlock()
		if old != nil {
			_ = old.Close()
		}
		hs.SetHost(&host{client: wire.NewHostClient(conn), logger: s.logger})
	}
	resp = &wire.InitResponse{Info: wire.FromInfo(s.p.Info())}
	if d, ok := s.p.(Describer); ok {
		resp.Capabilities = wire.FromCapabilities(d.Capabilities())
	}
	return resp, nil
}

func (s *server) Call(ctx context.Context, req *wire.CallRequest) (resp *wire.CallResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp, err = &wire.CallResponse{Error: wire.EncodeError(ctx, s.recovered(req.Call.Capability, r))}, nil
		}
	}()
	ctx = wire.ExtractTrace(ctx)
	if req.Token != "" {
		ctx = context.WithValue(ctx, callTokenKey{}, req.Token)
	}
	result, cerr := s.p.Call(ctx, req.Call.ToCapability())
	if cerr != nil {
		return &wire.CallResponse{Error: wire.EncodeError(ctx, cerr)}, nil
	}
	return &wire.CallResponse{Result: result}, nil
}

func (s *server) Health(ctx context.Context, _ *wire.HealthRequest) (resp *wire.HealthResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			perr := s.recovered("Health", r)
			resp, err = &wire.HealthResponse{Health: wire.Health{Status: "failed", Detail: perr.Error()}}, nil
		}
	}()
	h := capability.Health{Status: "connected"}
	if hc, ok := s.p.(capability.HealthChecker); ok {
		h = hc.Health(ctx)
	}
	return &wire.HealthResponse{Health: wire.FromHealth(h)}, nil
}

// callTokenKey keys the host's token of the call a context belongs to; an
// event emitted with that context carries it back, so the host knows the
// call (and its tenant) the event came from.
type callTokenKey struct{}

// host is the Host of a plugin process.
type host struct {
	client *wire.HostClient
	logger *slog.Logger
}

func (h *host) Logger() *slog.Logger { return h.logger }

// emitTimeout bounds an Emit whose context has no deadline.
const emitTimeout = 30 * time.Second

func (h *host) Emit(ctx context.Context, ev capability.Event) error {
	if len(ev.Data) > 0 && !json.Valid(ev.Data) {
		return errs.Invalidf([]any{"event", "data"}, "json_invalid", "event %s: data is not valid JSON", ev.Name)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, emitTimeout)
		defer cancel()
	}
	token, _ := ctx.Value(callTokenKey{}).(string)
	resp, err := h.client.Emit(ctx, &wire.EmitRequest{Event: wire.FromEvent(ev), Call: token})
	if err != nil {
		return errors.Mark(errors.Wrapf(err, "emit event %s to the host", ev.Name), errs.Unavailable)
	}
	return wire.DecodeError(ctx, resp.Error)
}
