package runengine_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/telemetry"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkChain3Observed is BenchmarkChain3 (64 starters) with the
// workspace's telemetry off, and on with metrics and a no-op tracer: the
// cost of observing runs, steps, provider calls and commits.
func BenchmarkChain3Observed(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run("telemetry="+mode, func(b *testing.B) {
			var tel *telemetry.Telemetry
			if mode == "on" {
				var err error
				tel, err = telemetry.New(telemetry.Config{Metrics: prometheus.NewRegistry(), TracerProvider: noop.NewTracerProvider()})
				if err != nil {
					b.Fatal(err)
				}
			}
			be := newObservedBenchEngine(b, tel)
			pid := be.process(b, 3)
			measure(b, be, 64, false, func(ctx context.Context) (string, error) {
				r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: pid,
					Subject: runengine.Subject{Type: "bench", Label: "run"}})
				if err != nil {
					return "", err
				}
				return r.ID, nil
			})
		})
	}
}

// newObservedBenchEngine is newBenchEngine with tel (nil: none) as the
// engine's Observer and the registry's CallObserver, as bas.Open wires it.
func newObservedBenchEngine(b *testing.B, tel *telemetry.Telemetry) *benchEngine {
	b.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.Real{}
	be := &benchEngine{st: st, done: map[string]*runEnd{}}
	be.procs = process.NewService(process.Config{Store: st, Clock: clk})
	rc := registry.Config{Store: st, Clock: clk}
	cfg := runengine.Config{Store: st, Clock: clk, Processes: be.procs, Gate: &autoGate{auto: true}, OnFinish: be.finished}
	if tel != nil {
		rc.Observer, cfg.Observer = tel, tel
	}
	reg := registry.New(rc)
	if err := reg.Register(noopProvider{}); err != nil {
		b.Fatal(err)
	}
	cfg.Capabilities = reg
	if be.eng, err = runengine.New(cfg); err != nil {
		b.Fatal(err)
	}
	if err := be.eng.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		be.eng.Close()
		st.Close()
	})
	return be
}
