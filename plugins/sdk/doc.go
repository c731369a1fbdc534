// Package sdk is what a vendor imports to ship a bas capability provider as a
// plugin: a separate executable that the bas host starts, checks and
// restarts, talking gRPC over go-plugin.
//
// # Writing a provider
//
// A provider is a plain capability.Provider: Info describes it, Call performs
// one capability call. The main function hands it to Serve and does nothing
// else; in particular nothing may write to stdout before Serve, because the
// host reads the handshake there.
//
//	func main() {
//		sdk.Serve(&provider{})
//	}
//
// The provider must be safe for concurrent calls. Each call's context carries
// the host's deadline (the host's CallTimeout or the caller's, whichever is
// sooner) and is cancelled when the host gives up: honour it.
//
// # Tracing
//
// When the host traces (bas.Options.TracerProvider), each call's context
// carries the host's span of that provider call as its remote parent
// (W3C trace context over the gRPC metadata): trace.SpanContextFromContext
// (go.opentelemetry.io/otel/trace) returns it, and a span the vendor starts
// from that context with its own TracerProvider joins the host's trace.
//
// # Optional abilities
//
// A provider may implement more, found by type assertion:
//
//   - HostSetter: SetHost hands it a Host, to emit events to the workspace
//     (capability.Event) and to log into the host's log. Embedding HostRef
//     implements it. An event lands only in a tenant that uses the
//     provider: the tenant of a call it is serving, or one that bound one of
//     its capabilities to it or runs processes calling one it alone fills,
//     or, for an event its app declares, one whose processes start on that
//     event (see Host.Emit); other tenants refuse it with Forbidden.
//   - Describer: Capabilities describes the capabilities it fills, with their
//     JSON Schemas, for capabilities the workspace does not know yet. Every
//     capability Info lists that the standard catalog does not have must be
//     described: a workspace refuses to register a provider that lists one
//     undescribed.
//   - capability.HealthChecker: its own health ("failed" with a detail when
//     its backing system is unreachable), shown by GET /v1/connections.
//
// # Errors
//
// Errors returned by Call keep their kind in the host: an error marked
// NotFound (NotFoundf, or errors.Mark(err, sdk.NotFound) with
// github.com/cockroachdb/errors) is bas.ErrNotFound there, and its public
// message, validation violations and retry delay arrive too. A panic in Call
// is recovered and returned as an error.
//
// # Logging
//
// Log to stderr, never stdout: the host relays each line of the plugin's
// stderr into its own log. NewLogger writes the JSON lines the host reads
// with their levels; Host.Logger is such a logger.
package sdk
