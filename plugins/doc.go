// Package plugins runs capability providers that live in other processes:
// vendors' go-plugin executables written with package plugins/sdk.
//
// A Host starts each plugin binary, checks it (an optional sha256 checksum,
// the go-plugin handshake with mutual TLS, protocol version 1), and hands
// back a capability.Provider the engine cannot tell from a built-in one:
//
//	h := plugins.NewHost(plugins.HostOptions{Logger: logger, Sink: bus})
//	defer h.Close()
//	providers, errs := h.LoadDir(ctx, "plugins")
//
// # Calls
//
// Every call carries a deadline: HostOptions.CallTimeout, or the caller's
// if sooner. A call that times out returns an error marked bas.ErrUnavailable
// that names the plugin; the plugin stays up and other calls go on. Errors
// the provider returns keep their kind (errors.Is(err, bas.ErrNotFound) holds
// for a provider's sdk.NotFoundf), their public message and violations. A
// result that is not valid JSON is a plain error ("plugin X returned
// malformed output ..."): the provider is at fault, not the caller.
//
// # Health and restarts
//
// A supervisor per plugin notices when the process exits, when a call loses
// its connection, or when a ping (every HealthInterval) fails, and restarts
// the plugin with exponential backoff between RestartBackoffMin and
// RestartBackoffMax. The call in flight during a crash returns an error
// marked bas.ErrUnavailable, so the engine retries it; calls made while the
// plugin restarts wait for it within their deadline. Health reports
// "connected", "starting" (restarting) or "failed" with a detail: "not
// found", "bad checksum ...", "handshake failed ...", "restart failed ...".
//
// A plugin that cannot be loaded does not disturb the others: Load returns
// a clear error and Failed lists it as a provider in state "failed" whose
// calls return bas.ErrUnavailable, so GET /v1/connections can show it.
//
// # Processes
//
// Each start gets a new exec.Cmd and a new checksum check. The host keeps
// its own clients (go-plugin's global client list is not used) and Close
// kills every plugin process and reaps it; Plugin.Stop ends one (bas.Open
// stops a plugin the workspace's registry refuses). On Linux each plugin gets
// PR_SET_PDEATHSIG=SIGKILL, so a host killed with SIGKILL leaves no plugin
// behind. Plugins do not inherit the host's environment: they get a few
// harmless variables (PATH, HOME, TMPDIR, TZ, LANG, proxy and CA settings)
// plus HostOptions.Env, unless HostOptions.InheritEnv is set.
//
// Events a plugin emits (sdk.Host.Emit) reach HostOptions.Sink over a
// connection brokered once per plugin process; a plugin that describes an
// app may emit only the events its app declares. An event lands only in the
// tenant of the call whose context it was emitted with (the SDK sends the
// call's token back; an event emitted outside a call's context: of any call
// the plugin is serving), or in a tenant HostOptions.Uses says uses the
// plugin (bas.Open asks the registry: the tenant bound one of
// the plugin's capabilities to it, or its processes call one the plugin
// alone fills); into any other tenant it is refused with ErrForbidden and
// logged.
//
// A call of a capability the plugin's live process does not list (it
// restarted into a version without it, before the registry read its new
// description) is refused with bas.ErrUnavailable without reaching it.
package plugins
