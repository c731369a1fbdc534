package wire

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

func TestTraceContextCrossesTheWire(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	out := InjectTrace(trace.ContextWithSpanContext(context.Background(), sc))
	md, _ := metadata.FromOutgoingContext(out)
	got := trace.SpanContextFromContext(ExtractTrace(metadata.NewIncomingContext(context.Background(), md)))
	if !got.Equal(sc.WithRemote(true)) {
		t.Errorf("span context on the plugin's side = %v, want %v", got, sc)
	}
	// No span: nothing is sent, and the plugin's context has none.
	out = InjectTrace(context.Background())
	if md, ok := metadata.FromOutgoingContext(out); ok && len(md.Get("traceparent")) > 0 {
		t.Errorf("traceparent sent without a span")
	}
	if trace.SpanContextFromContext(ExtractTrace(metadata.NewIncomingContext(context.Background(), metadata.MD{}))).IsValid() {
		t.Errorf("a span context appeared from nothing")
	}
}
