package wire

import "google.golang.org/grpc/encoding"

// A gRPC server finds the codec for a request's content subtype in
// grpc/encoding's registry, and grpc requires codecs to be registered during
// initialisation (the registry is not safe for concurrent writes). This is
// the one init in bas: it adds a codec to gRPC's registry, it does not create
// state of ours. Servers must not use ForceServerCodec instead, because
// go-plugin's protobuf services share the server.
func init() {
	encoding.RegisterCodec(jsonCodec{})
}
