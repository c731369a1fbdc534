package wire

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Plugin is the go-plugin plugin of protocol version 1, used by both sides:
// the plugin process sets NewServer, the host leaves it nil.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// NewServer returns the provider server of a plugin process, given the
	// broker it reaches the host's services through.
	NewServer func(broker *plugin.GRPCBroker) ProviderServer
}

// Conn is what the host gets when it dispenses the plugin.
type Conn struct {
	// Provider calls the plugin's ProviderService.
	Provider *ProviderClient
	// GRPC is the connection to the plugin (for health checks).
	GRPC *grpc.ClientConn
	// Broker serves the host's services to the plugin.
	Broker *plugin.GRPCBroker
	// Done is cancelled by go-plugin when the plugin process exits.
	Done context.Context
}

// GRPCServer registers the provider server; it runs in the plugin process.
func (p *Plugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.NewServer == nil {
		return errors.New("bas plugin: no provider server configured")
	}
	RegisterProviderServer(s, p.NewServer(broker))
	return nil
}

// GRPCClient returns a *Conn; it runs in the host.
func (p *Plugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Conn{Provider: NewProviderClient(conn), GRPC: conn, Broker: broker, Done: ctx}, nil
}

// PluginSets returns the VersionedPlugins of a host (newServer nil) or of a
// plugin process.
func PluginSets(newServer func(broker *plugin.GRPCBroker) ProviderServer) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &Plugin{NewServer: newServer}},
	}
}
