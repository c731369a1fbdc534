package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/telemetry"
	"github.com/bas-platform/bas/runengine"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkPerRun is what the telemetry adds to one run of three execute
// steps (BenchmarkChain3's shape): the run's start and end, three steps
// and three provider calls, and a share of a commit. Compare it with the
// engine's CPU per run (BenchmarkChain3's cpu-µs/run).
func BenchmarkPerRun(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  func() telemetry.Config
	}{
		{"metrics+noop-tracer", func() telemetry.Config {
			return telemetry.Config{Metrics: prometheus.NewRegistry(), TracerProvider: noop.NewTracerProvider()}
		}},
		{"metrics+sampled-out-tracer", func() telemetry.Config {
			return telemetry.Config{Metrics: prometheus.NewRegistry(),
				TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))}
		}},
		{"metrics+recording-tracer", func() telemetry.Config {
			return telemetry.Config{Metrics: prometheus.NewRegistry(), TracerProvider: sdktrace.NewTracerProvider()}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tel, err := telemetry.New(bc.cfg())
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			run := runengine.RunNote{Tenant: "acme", RunID: "run_1", ProcessID: "prc_1", ProcessName: "Bench", StartedAt: now}
			steps := []string{"s0", "s1", "s2"}
			b.ReportAllocs()
			for b.Loop() {
				tel.RunStarted(run)
				for _, key := range steps {
					st := runengine.StepNote{RunNote: run, StepKey: key, StepType: "execute", StartedAt: now}
					tel.StepStarted(st)
					ctx, done := tel.ProviderCall(context.Background(), "bench.provider", capability.Call{Tenant: "acme", Capability: "bench.noop"})
					_ = ctx
					done(nil)
					st.EndedAt, st.Status = now, runengine.StepCompleted
					tel.StepFinished(st)
				}
				tel.Committed(4, time.Millisecond, nil)
				tel.RunFinished(run, runengine.RunCompleted)
			}
		})
	}
}
