package plugins

import (
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/plugins/internal/wire"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
)

// HostOptions configures a Host. The zero value is usable.
type HostOptions struct {
	// Logger receives the host's messages and every plugin's log lines
	// (tagged plugin=<binary name>): each stream of a plugin at most 100
	// lines a second after a burst of 1,000; the lines beyond are dropped
	// and counted. Defaults to slog.Default().
	Logger *slog.Logger
	// CallTimeout bounds every call (and health query) to a plugin; a
	// caller's earlier deadline wins. Defaults to 30s.
	CallTimeout time.Duration
	// StartTimeout bounds a plugin's start: the go-plugin handshake, then
	// the session's Init. Defaults to 10s.
	StartTimeout time.Duration
	// Sink receives the events plugins emit; one that is an EmitterSink
	// learns which plugin emitted each. Defaults to dropping them (they are
	// logged at debug level).
	Sink capability.EventSink
	// Uses reports whether tenant uses the plugin whose provider id is
	// provider: an event a plugin emits lands only in the tenant of the
	// call whose context it was emitted with (outside a call's context: of
	// any call the plugin is serving), or in one Uses accepts; the others are
	// refused (sdk.Forbidden, bas.ErrForbidden, to the plugin; a warning in
	// the host's log).
	// Wire it to registry.Registry.Uses. Defaults to accepting none: a
	// plugin emits only into the tenants of the calls it is serving.
	Uses func(ctx context.Context, tenant, provider string) (bool, error)
	// Listens reports whether tenant has an enabled process that an event
	// named event starts (an event trigger). An event a plugin's app
	// declares in Emits also lands in a tenant that listens for it, so a
	// plugin that only emits (from a webhook or a poll, with no capability
	// a tenant binds or calls) reaches the tenants whose processes start on
	// its events. Wire it to process.Service.Listens. Defaults to none.
	Listens func(ctx context.Context, tenant, event string) (bool, error)
	// Checksums maps a plugin's path (as given, or absolute) or its file
	// name to the sha256 of its binary, in hex. A plugin with a checksum is
	// checked at every start and fails to load when it does not match;
	// plugins without one are not checked.
	Checksums map[string]string
	// RestartBackoffMin is the wait before restarting a crashed plugin; it
	// doubles with every restart that does not last, up to
	// RestartBackoffMax. Defaults to 250ms.
	RestartBackoffMin time.Duration
	// RestartBackoffMax caps the wait between restarts; a plugin that ran at
	// least this long before crashing restarts after RestartBackoffMin
	// again. Defaults to 30s.
	RestartBackoffMax time.Duration
	// HealthInterval is how often each plugin is pinged. Defaults to 10s.
	HealthInterval time.Duration
	// Env is added to every plugin's environment ("KEY=value"); use it for
	// a plugin's settings.
	Env []string
	// InheritEnv passes the host's whole environment to plugins. Defaults to
	// false: plugins get only PATH, HOME, TMPDIR, TZ, LANG, proxy and CA
	// settings from the host, so its secrets stay in the host.
	InheritEnv bool
	// OnRestart, when set, is called with a plugin's provider id after it
	// restarted (its Info may have changed): wire it to
	// registry.Registry.Refresh. It runs on the plugin's supervisor
	// goroutine and should return promptly.
	OnRestart func(id string)
	// Clock times restarts and health checks. Defaults to clock.Real{}.
	Clock clock.Clock
}

func (o HostOptions) withDefaults() HostOptions {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.RestartBackoffMin <= 0 {
		o.RestartBackoffMin = 250 * time.Millisecond
	}
	if o.RestartBackoffMax <= 0 {
		o.RestartBackoffMax = 30 * time.Second
	}
	if o.RestartBackoffMax < o.RestartBackoffMin {
		o.RestartBackoffMax = o.RestartBackoffMin
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// EmitterSink is a HostOptions.Sink that learns which plugin emitted an
// event: the host calls EmitFrom, with the plugin's provider id
// ("plugin.<name>"), instead of Emit.
type EmitterSink interface {
	capability.EventSink
	// EmitFrom takes ev, emitted by the plugin whose provider id is
	// provider.
	EmitFrom(ctx context.Context, provider string, ev capability.Event) error
}

// passedEnv lists the host variables plugins get without InheritEnv.
func passedEnv() []string {
	return []string{
		"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LC_ALL",
		"SSL_CERT_FILE", "SSL_CERT_DIR",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	}
}

// Host starts, supervises and stops plugin processes. It is safe for
// concurrent use. Two hosts share nothing.
type Host struct {
	opts HostOptions
	log  *slog.Logger

	mu      sync.Mutex
	closed  bool
	plugins []*Plugin // loaded and failed, in load order
}

// NewHost returns a host with opts (see HostOptions for the defaults).
func NewHost(opts HostOptions) *Host {
	opts = opts.withDefaults()
	return &Host{opts: opts, log: opts.Logger.With("component", "plugins")}
}

// LoadDir loads every executable file in dir (directories, hidden files and
// files without an execute bit are skipped; symbolic links are followed).
// It returns the plugins that loaded, in file-name order, and an error for
// each that did not; a failed plugin does not stop the others, and stays
// listed by Failed.
func (h *Host) LoadDir(ctx context.Context, dir string) ([]capability.Provider, []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, []error{errors.Wrapf(err, "plugins: read plugin directory %s", dir)}
	}
	var paths []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path)
		if err != nil {
			h.log.Debug("skipping plugin candidate", "path", path, "error", err)
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			h.log.Debug("skipping file that is not an executable", "path", path, "mode", fi.Mode().String())
			continue
		}
		paths = append(paths, path)
	}

	providers := make([]capability.Provider, len(paths))
	loadErrs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() { providers[i], loadErrs[i] = h.Load(ctx, path) })
	}
	wg.Wait()

	var loaded []capability.Provider
	var failed []error
	for i := range paths {
		if loadErrs[i] != nil {
			failed = append(failed, loadErrs[i])
			continue
		}
		loaded = append(loaded, providers[i])
	}
	return loaded, failed
}

// Load starts the plugin at path and returns it as a provider (a *Plugin).
// When it cannot be loaded (missing, not executable, bad checksum, not a bas
// plugin, a provider id another plugin has) the error says why, and Failed
// lists the plugin in state "failed". Loading a path again that failed
// before retries it; loading a loaded path is a Conflict.
func (h *Host) Load(ctx context.Context, path string) (capability.Provider, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errors.Wrapf(err, "plugins: load %s", path)
	}
	p := newPlugin(h, abs)

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errs.Unavailablef("plugin host is closed")
	}
	for i, q := range h.plugins {
		if q.path != abs {
			continue
		}
		if !q.loadFailed() {
			h.mu.Unlock()
			return nil, errs.Conflictf("plugin %s is already loaded as %s", abs, q.Info().ID)
		}
		h.plugins = append(h.plugins[:i], h.plugins[i+1:]...)
		break
	}
	h.plugins = append(h.plugins, p)
	h.mu.Unlock()

	if detail, kind := h.check(path, abs, p); detail != "" {
		return nil, p.loadFailure(detail, kind)
	}
	inst, init, err := p.launch(ctx)
	if err != nil {
		return nil, p.loadFailure(err.Error(), nil)
	}
	info := normalizeInfo(init.Info.ToCapability(), p.name)
	if err := validateInfo(info); err != nil {
		inst.kill()
		return nil, p.loadFailure(err.Error(), errs.Invalid)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		inst.kill()
		return nil, errs.Unavailablef("plugin host is closed")
	}
	for _, q := range h.plugins {
		if q != p && !q.loadFailed() && q.Info().ID == info.ID {
			inst.kill()
			return nil, p.loadFailure("provider id "+info.ID+" is already used by the plugin at "+q.path, errs.Conflict)
		}
	}
	p.adoptFirst(inst, info, wire.ToCapabilities(init.Capabilities))
	h.log.Info("plugin loaded", "plugin", info.ID, "path", abs, "pid", inst.pid())
	return p, nil
}

// check verifies that the file at abs can be a plugin and reads its
// configured checksum into p. It returns what is wrong ("" when nothing is)
// and the error kind that says so.
func (h *Host) check(path, abs string, p *Plugin) (detail string, kind error) {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "not found", errs.NotFound
	case err != nil:
		return "cannot read: " + err.Error(), nil
	case fi.IsDir():
		return "is a directory, not an executable", errs.Invalid
	case fi.Mode().Perm()&0o111 == 0:
		return "not executable (mode " + fi.Mode().String() + ")", errs.Invalid
	}
	for _, key := range []string{path, abs, filepath.Base(abs)} {
		sum, ok := h.opts.Checksums[key]
		if !ok {
			continue
		}
		b, err := hex.DecodeString(strings.TrimSpace(sum))
		if err != nil || len(b) != 32 {
			return fmt.Sprintf("bad checksum configuration: %q (key %q) is not a sha256 in hex", sum, key), errs.Invalid
		}
		p.checksum = b
		break
	}
	return "", nil
}

// Failed returns the plugins that could not be loaded, as providers in state
// "failed" whose calls return bas.ErrUnavailable. A plugin that loaded and
// later fails to restart is not listed here: its own Health says "failed".
func (h *Host) Failed() []capability.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []capability.Provider
	for _, p := range h.plugins {
		if p.loadFailed() {
			out = append(out, p)
		}
	}
	return out
}

// Close stops every plugin process and waits until each has exited (a
// plugin gets a few seconds to exit after its connection closes, then it is
// killed). The host's plugins then answer calls with bas.ErrUnavailable. Close
// may be called more than once.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	ps := append([]*Plugin(nil), h.plugins...)
	h.mu.Unlock()

	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(p.close)
	}
	wg.Wait()
	return nil
}

// env returns the environment of a plugin process.
func (h *Host) env() []string {
	var env []string
	if h.opts.InheritEnv {
		env = os.Environ()
	} else {
		for _, k := range passedEnv() {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	return append(env, h.opts.Env...)
}

// normalizeInfo makes a plugin's own description a plugin provider's:
// kind plugin, id prefixed "plugin.", defaults from the binary's file name
// (without its extension).
func normalizeInfo(info capability.Info, fileName string) capability.Info {
	id := strings.TrimSpace(info.ID)
	if id == "" {
		id = strings.TrimSuffix(fileName, filepath.Ext(fileName))
	}
	if info.Name == "" {
		info.Name = strings.TrimPrefix(id, "plugin.")
	}
	if !strings.HasPrefix(id, "plugin.") {
		id = "plugin." + id
	}
	info.ID = id
	info.Kind = capability.KindPlugin
	return info
}

func validateInfo(info capability.Info) error {
	if len(info.ID) > capability.MaxProviderIDLen {
		return errors.Newf("provider id %q is longer than %d characters", info.ID, capability.MaxProviderIDLen)
	}
	for _, c := range info.Capabilities {
		if strings.TrimSpace(c) == "" {
			return errors.Newf("provider %s lists an empty capability id", info.ID)
		}
	}
	if info.App != nil {
		// emit refuses these names; an app that declared one would list
		// (GET /v1/apps) an event it can never emit.
		for _, ev := range info.App.Events.Emits {
			if ns, reserved := capability.ReservedNamespace(ev); reserved {
				return errors.Newf("app %s declares the event %s, but events named %s.* are emitted only by the workspace itself; use your app's own namespace",
					info.App.ID, ev, ns)
			}
		}
	}
	return nil
}
