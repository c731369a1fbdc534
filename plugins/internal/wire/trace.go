package wire

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// mdCarrier is gRPC metadata as an OpenTelemetry carrier.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// InjectTrace puts the span context of ctx, if any, in the call's gRPC
// metadata as a W3C traceparent (and tracestate).
func InjectTrace(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	md := metadata.MD{}
	propagation.TraceContext{}.Inject(ctx, mdCarrier(md))
	pairs := make([]string, 0, 2*len(md))
	for k, vs := range md {
		for _, v := range vs {
			pairs = append(pairs, k, v)
		}
	}
	return metadata.AppendToOutgoingContext(ctx, pairs...)
}

// ExtractTrace returns ctx carrying, as its remote span context, the
// traceparent the host sent, if any.
func ExtractTrace(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok || len(md.Get("traceparent")) == 0 {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, mdCarrier(md))
}
