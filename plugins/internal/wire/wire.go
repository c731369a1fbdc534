// Package wire is the protocol between the bas plugin host (package plugins)
// and a vendor's plugin process (package plugins/sdk): the go-plugin
// handshake, the message types, two hand-written gRPC services carried with
// a JSON codec, and the encoding of errors so their kinds survive the trip.
//
// Version 1 of the protocol has two services:
//
//	bas.plugin.v1.Provider (served by the plugin)
//	  Init(InitRequest) InitResponse      once per process: broker id in, provider description out
//	  Call(CallRequest) CallResponse      one capability call
//	  Health(HealthRequest) HealthResponse the provider's own view of its health
//
//	bas.plugin.v1.Host (served by the host on a connection brokered once per process)
//	  Emit(EmitRequest) EmitResponse      an event the provider sends to the workspace
//
// Errors a provider returns travel inside the response (Error), encoded with
// cockroachdb/errors so errors.Is sees their marks in the host; a gRPC status
// error always means the transport or the process failed.
//
// The messages are this package's own types (Info, Capability, Call, Health,
// Event, Violation), converted to and from package capability's at the edge
// (convert.go): the contract's Go types may change, protocol 1's JSON may
// not. testdata/protocol1.golden pins every message.
package wire

import (
	"encoding/json"

	"github.com/hashicorp/go-plugin"
)

// The protocol's constants.
const (
	// ProtocolVersion is the version of this protocol. A new version gets a
	// new number in VersionedPlugins; the host keeps serving old ones.
	ProtocolVersion = 1
	// PluginName is the name the provider plugin is dispensed under.
	PluginName = "provider"
	// ProviderService is the gRPC service a plugin serves.
	ProviderService = "bas.plugin.v1.Provider"
	// HostService is the gRPC service the host serves to a plugin.
	HostService = "bas.plugin.v1.Host"
)

// Handshake returns the go-plugin handshake every bas plugin and host share.
// The cookie only tells a binary that a bas host started it; it is not a
// security measure (checksums are).
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   "BAS_PLUGIN_MAGIC_COOKIE",
		MagicCookieValue: "7c1f0a4e-bas-provider-plugin-d2b9",
	}
}

// InitRequest opens a plugin's session with the host.
type InitRequest struct {
	// BrokerID is the go-plugin broker id the host serves HostService on.
	BrokerID uint32 `json:"broker_id"`
}

// InitResponse describes the provider.
type InitResponse struct {
	Info Info `json:"info"`
	// Capabilities describes the capabilities the provider fills, when the
	// provider describes them (sdk.Describer).
	Capabilities []Capability `json:"capabilities,omitempty"`
	// Error is set when the plugin could not start its session.
	Error *Error `json:"error,omitempty"`
}

// CallRequest is one capability call.
type CallRequest struct {
	Call Call `json:"call"`
	// Token names this call while it is served: an event the provider
	// emits with the call's context carries it back (EmitRequest.Call), so
	// the host knows which call, and which tenant, it came from. Empty from
	// a host that does not send one.
	Token string `json:"token,omitempty"`
}

// CallResponse carries a call's result or its error. Result is bytes, not
// raw JSON, so that the host (not the plugin's encoder) judges whether the
// provider's output is valid JSON.
type CallResponse struct {
	Result []byte `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// HealthRequest asks for the provider's health.
type HealthRequest struct{}

// HealthResponse is the provider's health.
type HealthResponse struct {
	Health Health `json:"health"`
}

// EmitRequest carries an event from the plugin to the host.
type EmitRequest struct {
	Event Event `json:"event"`
	// Call is the Token of the call whose context the event was emitted
	// with; empty outside a call (or from an SDK that does not send it).
	Call string `json:"call,omitempty"`
}

// EmitResponse says whether the host accepted the event.
type EmitResponse struct {
	Error *Error `json:"error,omitempty"`
}

// jsonCodec is the gRPC codec both services use; it is chosen per call with
// grpc.CallContentSubtype(CodecName), so go-plugin's own protobuf services
// on the same connection keep their codec.
type jsonCodec struct{}

// CodecName is the content subtype of the JSON codec.
const CodecName = "json"

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
func (jsonCodec) Name() string                       { return CodecName }
