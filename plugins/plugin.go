package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/plugins/internal/logadapt"
	"github.com/bas-platform/bas/plugins/internal/wire"
	"github.com/cockroachdb/errors"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// The health statuses a plugin reports (capability.Health.Status).
const (
	StatusConnected = "connected"
	StatusStarting  = "starting"
	StatusFailed    = "failed"
)

// killGrace is how long a plugin gets to exit on Close before it is killed.
const killGrace = 5 * time.Second

// Plugin is a provider served by a plugin process. Load returns one; its
// process may be replaced by restarts while the Plugin stays the same. It
// implements capability.Provider and capability.HealthChecker.
type Plugin struct {
	h        *Host
	path     string
	name     string // the binary's file name
	checksum []byte // sha256 to check at every start, or nil
	log      *slog.Logger

	mu      sync.Mutex
	info    capability.Info
	caps    []capability.Capability
	inst    *instance // the live process; nil while (re)starting or failed
	status  string
	detail  string
	changed chan struct{} // closed and replaced on every status change
	failed  bool          // the plugin never loaded
	closed  bool

	// The calls in flight, for the events the plugin may emit (mayEmitTo);
	// a lock of their own, apart from the status's.
	callsMu sync.Mutex
	calls   map[string]string // token -> tenant of each call in flight
	tokens  uint64            // tokens handed out

	stop chan struct{} // closed by close to end the supervisor
	done chan struct{} // closed when the supervisor has ended
}

var (
	_ capability.Provider      = (*Plugin)(nil)
	_ capability.HealthChecker = (*Plugin)(nil)
)

func newPlugin(h *Host, abs string) *Plugin {
	name := filepath.Base(abs)
	return &Plugin{
		h:       h,
		path:    abs,
		name:    name,
		log:     h.log.With("plugin", name),
		info:    normalizeInfo(capability.Info{}, name),
		status:  StatusStarting,
		detail:  "loading",
		changed: make(chan struct{}),
	}
}

// Path returns the plugin binary's absolute path.
func (p *Plugin) Path() string { return p.path }

// Info describes the provider as the plugin last described itself, with
// Kind plugin and an id prefixed "plugin.". A plugin that never loaded is
// "plugin.<file name>" with no capabilities.
func (p *Plugin) Info() capability.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// Capabilities returns the capabilities the plugin describes (sdk.Describer),
// with their schemas; nil when it describes none.
func (p *Plugin) Capabilities() []capability.Capability {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.caps)
}

// Health reports "connected" with the provider's own view of its health,
// "starting" while the plugin (re)starts, or "failed" with the reason.
func (p *Plugin) Health(ctx context.Context) capability.Health {
	p.mu.Lock()
	inst, h := p.inst, capability.Health{Status: p.status, Detail: p.detail}
	p.mu.Unlock()
	if inst == nil {
		return h
	}
	ctx, cancel := context.WithTimeout(ctx, p.h.opts.CallTimeout)
	defer cancel()
	resp, err := inst.conn.Provider.Health(ctx, &wire.HealthRequest{})
	if err != nil {
		if lostConnection(ctx, err) {
			p.fail(inst, "lost its connection during a health check: "+status.Convert(err).Message())
			return capability.Health{Status: StatusStarting, Detail: "plugin lost its connection; restarting"}
		}
		return capability.Health{Status: StatusFailed, Detail: "health check failed: " + status.Convert(err).Message()}
	}
	if resp.Health.Status == "" {
		resp.Health.Status = StatusConnected
	}
	return resp.Health.ToCapability()
}

// Call sends call to the plugin and returns its result. The call's deadline
// is the host's CallTimeout or ctx's, whichever is sooner; a call made while
// the plugin restarts waits for it within that deadline. Errors: the
// provider's own (with their kinds), bas.ErrUnavailable when the plugin is
// down, times out or crashes during the call, bas.ErrInvalid when the
// arguments are not JSON, and capability.ErrMalformedOutput (no kind) when
// the plugin's output is not valid JSON.
func (p *Plugin) Call(ctx context.Context, call capability.Call) (json.RawMessage, error) {
	if len(call.Args) > 0 && !json.Valid(call.Args) {
		return nil, errs.Invalidf([]any{"args"}, "json_invalid", "arguments for %s are not valid JSON", call.Capability)
	}
	timeout := p.h.opts.CallTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	cctx, cancel := context.WithTimeout(ctx, p.h.opts.CallTimeout)
	defer cancel()
	token := p.begin(call.Tenant)
	defer p.end(token)

	inst, err := p.ready(cctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(inst.provides, call.Capability) {
		// A process that restarted without the capability: the call was
		// routed by its predecessor's description, which the registry
		// reads again only once the new process is live.
		return nil, errs.Unavailablef("plugin %s does not provide %s (its process provides %s)", p.id(), call.Capability, listOrNone(inst.provides))
	}
	resp, err := inst.conn.Provider.Call(wire.InjectTrace(cctx), &wire.CallRequest{Call: wire.FromCall(call), Token: token})
	if err != nil {
		return nil, p.callError(ctx, cctx, inst, call.Capability, timeout, err)
	}
	if resp.Error != nil {
		return nil, errors.Wrapf(wire.DecodeError(ctx, resp.Error), "plugin %s", p.id())
	}
	if len(resp.Result) == 0 {
		return nil, nil
	}
	if !json.Valid(resp.Result) {
		return nil, p.malformed(call.Capability, resp.Result)
	}
	return json.RawMessage(resp.Result), nil
}

func (p *Plugin) id() string { return p.Info().ID }

// begin records a call of tenant in flight and returns its token, which
// events the plugin emits with the call's context carry back.
func (p *Plugin) begin(tenant string) string {
	p.callsMu.Lock()
	defer p.callsMu.Unlock()
	if p.calls == nil {
		p.calls = map[string]string{}
	}
	p.tokens++
	token := strconv.FormatUint(p.tokens, 36)
	p.calls[token] = tenant
	return token
}

// end records that the call begin returned token for has ended.
func (p *Plugin) end(token string) {
	p.callsMu.Lock()
	defer p.callsMu.Unlock()
	delete(p.calls, token)
}

// mayEmitTo reports whether an event of the plugin may land in tenant. An
// event emitted with a call's context (token) lands in that call's tenant;
// one emitted outside a call's context (or by an SDK that sends no token),
// in the tenant of any call the plugin is serving. Any event may land in a
// tenant that uses the plugin (HostOptions.Uses), and an event the plugin's
// app declares in one that listens for it (HostOptions.Listens). Otherwise
// the error says why not.
func (p *Plugin) mayEmitTo(ctx context.Context, info capability.Info, ev capability.Event, token string) error {
	id, tenant := info.ID, ev.Tenant
	p.callsMu.Lock()
	served := false
	if token != "" {
		callTenant, ok := p.calls[token]
		served = ok && callTenant == tenant
	} else {
		for _, callTenant := range p.calls {
			if callTenant == tenant {
				served = true
				break
			}
		}
	}
	p.callsMu.Unlock()
	if served { // tenant is set: emit checked it
		return nil
	}
	// An event the plugin's app declares (emit checked the name) lands in
	// a tenant whose processes start on it: asked first, as it is one
	// look-up of the event index, where Uses may read every process of
	// the tenant.
	if listens := p.h.opts.Listens; listens != nil && info.App != nil {
		ok, err := listens(ctx, tenant, ev.Name)
		if err != nil {
			return errors.Mark(errors.Wrapf(err, "plugin %s: check whether tenant %s listens for %s", id, tenant, ev.Name), errs.Unavailable)
		}
		if ok {
			return nil
		}
	}
	if uses := p.h.opts.Uses; uses != nil {
		ok, err := uses(ctx, tenant, id)
		if err != nil {
			return errors.Mark(errors.Wrapf(err, "plugin %s: check that tenant %s uses it", id, tenant), errs.Unavailable)
		}
		if ok {
			return nil
		}
	}
	return errs.Forbiddenf("tenant %s does not use plugin %s: a plugin emits only into the tenant of the call it is serving, "+
		"into one that bound one of its capabilities to it or runs processes that call it, "+
		"or into one whose processes start on an event its app declares", tenant, id)
}

// ready returns the live instance, waiting while the plugin restarts.
func (p *Plugin) ready(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		inst, st, detail, changed, closed := p.inst, p.status, p.detail, p.changed, p.closed
		p.mu.Unlock()
		switch {
		case closed:
			return nil, errs.Unavailablef("plugin %s: the plugin host is closed", p.id())
		case inst != nil:
			return inst, nil
		case st == StatusFailed:
			return nil, errs.Unavailablef("plugin %s is unavailable: %s", p.id(), detail)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, errs.Unavailablef("plugin %s is still starting (%s): %v", p.id(), detail, ctx.Err())
		}
	}
}

// callError explains a transport error of a call.
func (p *Plugin) callError(ctx, cctx context.Context, inst *instance, capID string, timeout time.Duration, err error) error {
	st := status.Convert(err)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return errors.Wrapf(ctx.Err(), "plugin %s: call %s cancelled", p.id(), capID)
	case st.Code() == codes.DeadlineExceeded || errors.Is(cctx.Err(), context.DeadlineExceeded):
		return errs.Unavailablef("plugin %s: call %s timed out after %s", p.id(), capID, timeout.Round(time.Millisecond))
	case lostConnection(cctx, err):
		p.fail(inst, fmt.Sprintf("lost its connection during call %s (%s)", capID, st.Message()))
		return errs.Unavailablef("plugin %s exited or lost its connection during call %s; it is restarting", p.id(), capID)
	case st.Code() == codes.ResourceExhausted:
		return errors.Mark(errors.Newf("plugin %s: call %s: message too large: %s", p.id(), capID, st.Message()), errs.TooLarge)
	case st.Code() == codes.Internal && strings.Contains(st.Message(), "unmarshal"):
		return errors.Mark(errors.Newf("plugin %s returned malformed output for %s: %s", p.id(), capID, st.Message()),
			capability.ErrMalformedOutput)
	default:
		return errors.Newf("plugin %s: call %s failed: %s: %s", p.id(), capID, st.Code(), st.Message())
	}
}

// listOrNone lists ids, or says "nothing".
func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}

// lostConnection tells whether err means the plugin's connection broke (the
// process died or is going away), rather than a deadline or a bad message.
func lostConnection(ctx context.Context, err error) bool {
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	case codes.Canceled:
		return ctx.Err() == nil // cancelled, but not by us
	}
	return false
}

func (p *Plugin) malformed(capID string, out []byte) error {
	var v any
	reason := "not valid JSON"
	if err := json.Unmarshal(out, &v); err != nil {
		reason = err.Error()
	}
	const show = 64
	shown := out
	if len(shown) > show {
		shown = shown[:show]
	}
	return errors.Mark(errors.Newf("plugin %s returned malformed output for %s: %s (output starts %q)", p.id(), capID, reason, shown),
		capability.ErrMalformedOutput)
}

// emit passes an event from the plugin to the host's sink; token is the
// call whose context it was emitted with, if any.
func (p *Plugin) emit(ctx context.Context, ev capability.Event, token string) error {
	info := p.Info()
	var vs []errs.Violation
	if ev.Name == "" {
		vs = append(vs, errs.Violation{Loc: []any{"event", "name"}, Msg: "an event needs a name", Type: "missing"})
	} else if ns, reserved := capability.ReservedNamespace(ev.Name); reserved {
		vs = append(vs, errs.Violation{Loc: []any{"event", "name"}, Type: "value_error",
			Msg: fmt.Sprintf("events named %s.* are emitted only by the workspace itself; use your app's own namespace", ns)})
	} else if info.App != nil && !slices.Contains(info.App.Events.Emits, ev.Name) {
		vs = append(vs, errs.Violation{Loc: []any{"event", "name"}, Type: "value_error",
			Msg: fmt.Sprintf("app %s does not declare the event %s (it emits %s)", info.App.ID, ev.Name, strings.Join(info.App.Events.Emits, ", "))})
	}
	if ev.Tenant == "" {
		vs = append(vs, errs.Violation{Loc: []any{"event", "tenant"}, Msg: "an event needs the tenant it belongs to", Type: "missing"})
	}
	if len(ev.Data) > 0 && !json.Valid(ev.Data) {
		vs = append(vs, errs.Violation{Loc: []any{"event", "data"}, Msg: "event data is not valid JSON", Type: "json_invalid"})
	}
	if err := errs.Validation(vs...); err != nil {
		p.log.Warn("plugin emitted an invalid event", "event", ev.Name, "error", err)
		return err
	}
	if err := p.mayEmitTo(ctx, info, ev, token); err != nil {
		p.log.Warn("plugin event refused: the tenant does not use the plugin", "event", ev.Name, "tenant", ev.Tenant, "error", err)
		return err
	}
	if p.h.opts.Sink == nil {
		p.log.Debug("dropping plugin event: the host has no sink", "event", ev.Name, "tenant", ev.Tenant)
		return nil
	}
	if es, ok := p.h.opts.Sink.(EmitterSink); ok {
		return es.EmitFrom(ctx, info.ID, ev)
	}
	return p.h.opts.Sink.Emit(ctx, ev)
}

// hostService serves a plugin's HostService.
type hostService struct{ p *Plugin }

func (s hostService) Emit(ctx context.Context, req *wire.EmitRequest) (*wire.EmitResponse, error) {
	return &wire.EmitResponse{Error: wire.EncodeError(ctx, s.p.emit(ctx, req.Event.ToCapability(), req.Call))}, nil
}

// instance is one process of a plugin.
type instance struct {
	client  *plugin.Client
	cmd     *exec.Cmd
	conn    *wire.Conn
	started time.Time
	// provides is what the process said it fills (its Info's
	// Capabilities), set once as it is adopted, before it takes calls.
	provides []string

	once   sync.Once
	dead   chan struct{} // closed when the instance is found dead
	reason string        // why, set before dead is closed
}

func (i *instance) pid() int {
	if i.cmd.Process == nil {
		return 0
	}
	return i.cmd.Process.Pid
}

// markDead records that the instance is dead; it reports whether this call
// was the first to say so.
func (i *instance) markDead(reason string) bool {
	first := false
	i.once.Do(func() {
		i.reason = reason
		close(i.dead)
		first = true
	})
	return first
}

// kill ends the process at once and reaps it.
func (i *instance) kill() {
	killTree(i.cmd)
	i.client.Kill()
}

// shutdown closes the connection, which makes the plugin exit, and kills
// the process if it has not exited after killGrace.
func (i *instance) shutdown() {
	done := make(chan struct{})
	go func() {
		i.client.Kill()
		close(done)
	}()
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		killTree(i.cmd)
		<-done
	}
}

// exit describes how the process ended, once it has been reaped.
func (i *instance) exit() string {
	if i.cmd.ProcessState == nil {
		return ""
	}
	return i.cmd.ProcessState.String()
}

// ping checks the plugin answers go-plugin's gRPC health service.
func (i *instance) ping(ctx context.Context) error {
	_, err := healthpb.NewHealthClient(i.conn.GRPC).Check(ctx, &healthpb.HealthCheckRequest{Service: plugin.GRPCServiceName})
	return err
}

// launch starts a new process of the plugin and opens its session.
func (p *Plugin) launch(ctx context.Context) (*instance, *wire.InitResponse, error) {
	h := p.h
	cmd := exec.Command(p.path)
	cmd.Env = h.env()
	configureCmd(cmd)
	var secure *plugin.SecureConfig
	if p.checksum != nil {
		secure = &plugin.SecureConfig{Checksum: p.checksum, Hash: sha256.New()}
	}
	stderr := &tailWriter{size: maxStartStderr}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.PluginSets(nil),
		Cmd:              cmd,
		SecureConfig:     secure,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     h.opts.StartTimeout,
		Logger:           logadapt.Hclog(slog.New(budgetHandler{Handler: p.log.Handler(), budget: newBudget(h.opts.Clock)})),
		SyncStdout:       newLineLogger(p.log, "stdout", h.opts.Clock),
		SyncStderr:       newLineLogger(p.log, "stderr", h.opts.Clock),
		Stderr:           stderr,
	})
	inst := &instance{client: client, cmd: cmd, started: h.opts.Clock.Now(), dead: make(chan struct{})}

	rpc, err := client.Client()
	if err != nil {
		killTree(cmd)
		client.Kill() // waits until the plugin's stderr is read
		return nil, nil, startError(err, cmd, stderr.String())
	}
	if v := client.NegotiatedVersion(); v != wire.ProtocolVersion {
		inst.kill()
		return nil, nil, errors.Newf("handshake failed: the plugin speaks protocol %d, the host %d", v, wire.ProtocolVersion)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		inst.kill()
		return nil, nil, errors.Wrap(err, "handshake failed")
	}
	inst.conn = raw.(*wire.Conn)

	brokerID := inst.conn.Broker.NextId()
	go inst.conn.Broker.AcceptAndServe(brokerID, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		wire.RegisterHostServer(s, hostService{p: p})
		return s
	})
	ictx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	init, err := inst.conn.Provider.Init(ictx, &wire.InitRequest{BrokerID: brokerID})
	if err != nil {
		inst.kill()
		return nil, nil, errors.Newf("handshake failed: session init: %s", status.Convert(err).Message())
	}
	if init.Error != nil {
		inst.kill()
		return nil, nil, errors.Wrap(wire.DecodeError(ctx, init.Error), "handshake failed: the plugin could not start its session")
	}
	return inst, init, nil
}

// maxStartStderr bounds what a start error quotes of the plugin's stderr.
const maxStartStderr = 1024

// startError names why go-plugin could not start a plugin: its error and,
// when the process ended by itself, how and the end of what it wrote to
// stderr (a plugin that refuses the host says why there, and go-plugin's
// own message then only guesses).
func startError(err error, cmd *exec.Cmd, stderr string) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return errors.New("bad checksum: the binary's sha256 does not match the configured checksum")
	case errors.As(err, &pathErr):
		return errors.Newf("cannot start: %s", msg)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		return errors.Newf("handshake failed (not a bas plugin?): %s", msg)
	}
	// The process ended by itself: its own words come first.
	why := "the process ended with " + cmd.ProcessState.String()
	if stderr != "" {
		why += fmt.Sprintf("; its stderr ends %q", stderr)
	}
	return errors.Newf("handshake failed (not a bas plugin?): %s; go-plugin: %s", why, msg)
}

// loadFailed tells whether the plugin never loaded.
func (p *Plugin) loadFailed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// loadFailure records that the plugin could not be loaded and returns the
// error Load reports, marked with kind when it is not nil.
func (p *Plugin) loadFailure(detail string, kind error) error {
	p.mu.Lock()
	p.failed = true
	p.setLocked(StatusFailed, detail)
	p.mu.Unlock()
	p.log.Warn("plugin failed to load", "path", p.path, "reason", detail)
	err := errors.Newf("plugin %s: %s", p.path, detail)
	if kind != nil {
		err = errors.Mark(err, kind)
	}
	return err
}

// setLocked changes the status and wakes the waiting callers.
func (p *Plugin) setLocked(st, detail string) {
	p.status, p.detail = st, detail
	close(p.changed)
	p.changed = make(chan struct{})
}

// adoptFirst makes inst the plugin's first process and starts supervising.
func (p *Plugin) adoptFirst(inst *instance, info capability.Info, caps []capability.Capability) {
	inst.provides = slices.Clone(info.Capabilities)
	p.mu.Lock()
	p.info, p.caps, p.inst = info, caps, inst
	p.setLocked(StatusConnected, "")
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	p.mu.Unlock()
	go p.supervise(inst)
}

// adopt makes a restarted inst the live one; it reports false when the host
// closed meanwhile.
func (p *Plugin) adopt(inst *instance, init *wire.InitResponse) error {
	info := normalizeInfo(init.Info.ToCapability(), p.name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errs.Unavailablef("plugin host is closed")
	}
	if info.ID != p.info.ID {
		return errors.Newf("the restarted plugin calls itself %s, not %s: load it again", info.ID, p.info.ID)
	}
	if err := validateInfo(info); err != nil {
		return err
	}
	inst.provides = slices.Clone(info.Capabilities)
	p.info, p.caps, p.inst = info, wire.ToCapabilities(init.Capabilities), inst
	p.setLocked(StatusConnected, "")
	return nil
}

// fail records that inst is dead; the supervisor restarts the plugin.
func (p *Plugin) fail(inst *instance, reason string) {
	if !inst.markDead(reason) {
		return
	}
	p.mu.Lock()
	if p.inst == inst {
		p.inst = nil
		p.setLocked(StatusStarting, "plugin "+reason+"; restarting")
	}
	p.mu.Unlock()
	p.log.Warn("plugin failed", "reason", reason)
}

// supervise watches the live instance and restarts the plugin when it dies,
// until close.
func (p *Plugin) supervise(inst *instance) {
	defer close(p.done)
	opts := p.h.opts
	streak := 0
	for {
		if !p.watch(inst) {
			return
		}
		inst.kill()
		reason := inst.reason
		if exit := inst.exit(); exit != "" {
			reason += " (" + exit + ")"
		}
		if opts.Clock.Now().Sub(inst.started) >= opts.RestartBackoffMax {
			streak = 0
		}
		p.mu.Lock()
		if !p.closed {
			p.setLocked(StatusStarting, "plugin "+reason+"; restarting")
		}
		p.mu.Unlock()

		for {
			delay := backoff(opts.RestartBackoffMin, opts.RestartBackoffMax, streak)
			streak++
			if !p.sleep(delay) {
				return
			}
			next, init, err := p.launch(context.Background())
			if err == nil {
				if err = p.adopt(next, init); err == nil {
					p.log.Info("plugin restarted", "pid", next.pid(), "after", reason)
					if opts.OnRestart != nil {
						opts.OnRestart(p.id())
					}
					inst = next
					break
				}
				next.kill()
			}
			p.mu.Lock()
			closed := p.closed
			if !closed {
				p.setLocked(StatusFailed, fmt.Sprintf("restart failed: %s; retrying in %s", err, backoff(opts.RestartBackoffMin, opts.RestartBackoffMax, streak)))
			}
			p.mu.Unlock()
			if closed {
				return
			}
			p.log.Error("plugin restart failed", "error", err)
		}
	}
}

// watch waits until inst dies (true) or the plugin is closed (false),
// pinging it every HealthInterval.
func (p *Plugin) watch(inst *instance) bool {
	opts := p.h.opts
	for {
		t := opts.Clock.NewTimer(opts.HealthInterval)
		select {
		case <-p.stop:
			t.Stop()
			return false
		case <-inst.dead:
			t.Stop()
			return true
		case <-inst.conn.Done.Done():
			t.Stop()
			p.fail(inst, "exited")
			return true
		case <-t.C():
			ctx, cancel := context.WithTimeout(context.Background(), min(opts.HealthInterval, opts.CallTimeout))
			err := inst.ping(ctx)
			cancel()
			if err != nil {
				p.fail(inst, "failed its health check: "+status.Convert(err).Message())
				return true
			}
		}
	}
}

// sleep waits d on the host's clock; it reports false when the plugin is
// closed meanwhile.
func (p *Plugin) sleep(d time.Duration) bool {
	t := p.h.opts.Clock.NewTimer(d)
	select {
	case <-t.C():
		return true
	case <-p.stop:
		t.Stop()
		return false
	}
}

// backoff is lo doubled streak times, at most hi.
func backoff(lo, hi time.Duration, streak int) time.Duration {
	d := lo
	for range streak {
		if d >= hi/2 {
			return hi
		}
		d *= 2
	}
	return min(d, hi)
}

// Stop ends the plugin's process for good (the host will not restart it)
// and leaves it failed with reason: its calls then return bas.ErrUnavailable.
// A plugin that loaded but is not to be used (its registration failed, say)
// is stopped rather than left running until the host closes. Stop may be
// called more than once; the first reason stays.
func (p *Plugin) Stop(reason string) { p.stopWith(reason) }

// close stops supervising and ends the live process.
func (p *Plugin) close() { p.stopWith("the plugin host is closed") }

func (p *Plugin) stopWith(reason string) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	inst, stop, done := p.inst, p.stop, p.done
	p.inst = nil
	p.setLocked(StatusFailed, reason)
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	if inst != nil {
		inst.shutdown()
		p.log.Info("plugin stopped", "pid", inst.pid())
	}
}
