package wire

import (
	"context"

	"google.golang.org/grpc"
)

// ProviderServer is what a plugin serves.
type ProviderServer interface {
	Init(ctx context.Context, req *InitRequest) (*InitResponse, error)
	Call(ctx context.Context, req *CallRequest) (*CallResponse, error)
	Health(ctx context.Context, req *HealthRequest) (*HealthResponse, error)
}

// HostServer is what the host serves to a plugin.
type HostServer interface {
	Emit(ctx context.Context, req *EmitRequest) (*EmitResponse, error)
}

// RegisterProviderServer adds srv to s under ProviderService.
func RegisterProviderServer(s *grpc.Server, srv ProviderServer) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: ProviderService,
		HandlerType: (*ProviderServer)(nil),
		Methods: []grpc.MethodDesc{
			unary(ProviderService, "Init", ProviderServer.Init),
			unary(ProviderService, "Call", ProviderServer.Call),
			unary(ProviderService, "Health", ProviderServer.Health),
		},
		Metadata: "bas plugin protocol v1 (hand-written, JSON codec)",
	}, srv)
}

// RegisterHostServer adds srv to s under HostService.
func RegisterHostServer(s *grpc.Server, srv HostServer) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: HostService,
		HandlerType: (*HostServer)(nil),
		Methods: []grpc.MethodDesc{
			unary(HostService, "Emit", HostServer.Emit),
		},
		Metadata: "bas plugin protocol v1 (hand-written, JSON codec)",
	}, srv)
}

// unary builds the method descriptor of one request/response method whose
// server implementation is method, a method expression on the server
// interface S.
func unary[S, Req, Resp any](service, name string, method func(S, context.Context, *Req) (*Resp, error)) grpc.MethodDesc {
	fullMethod := "/" + service + "/" + name
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			req := new(Req)
			if err := dec(req); err != nil {
				return nil, err
			}
			if interceptor == nil {
				return method(srv.(S), ctx, req)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}
			return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
				return method(srv.(S), ctx, req.(*Req))
			})
		},
	}
}

// invoke calls one method of service over conn with the JSON codec.
func invoke[Resp any](ctx context.Context, conn grpc.ClientConnInterface, service, method string, req any) (*Resp, error) {
	resp := new(Resp)
	if err := conn.Invoke(ctx, "/"+service+"/"+method, req, resp, grpc.CallContentSubtype(CodecName)); err != nil {
		return nil, err
	}
	return resp, nil
}

// ProviderClient calls a plugin's ProviderService.
type ProviderClient struct {
	conn grpc.ClientConnInterface
}

// NewProviderClient returns a client of the ProviderService on conn.
func NewProviderClient(conn grpc.ClientConnInterface) *ProviderClient {
	return &ProviderClient{conn: conn}
}

// Init opens the plugin's session.
func (c *ProviderClient) Init(ctx context.Context, req *InitRequest) (*InitResponse, error) {
	return invoke[InitResponse](ctx, c.conn, ProviderService, "Init", req)
}

// Call performs one capability call.
func (c *ProviderClient) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	return invoke[CallResponse](ctx, c.conn, ProviderService, "Call", req)
}

// Health asks for the provider's health.
func (c *ProviderClient) Health(ctx context.Context, req *HealthRequest) (*HealthResponse, error) {
	return invoke[HealthResponse](ctx, c.conn, ProviderService, "Health", req)
}

// HostClient calls the host's HostService.
type HostClient struct {
	conn grpc.ClientConnInterface
}

// NewHostClient returns a client of the HostService on conn.
func NewHostClient(conn grpc.ClientConnInterface) *HostClient {
	return &HostClient{conn: conn}
}

// Emit sends an event to the host.
func (c *HostClient) Emit(ctx context.Context, req *EmitRequest) (*EmitResponse, error) {
	return invoke[EmitResponse](ctx, c.conn, HostService, "Emit", req)
}
