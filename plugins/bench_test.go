package plugins_test

import (
	"context"
	"encoding/json"
	"github.com/bas-platform/bas/plugins/plugintest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/plugins"
)

// echo is the in-process twin of the test plugin's test.echo.
type echo struct{}

func (echo) Info() capability.Info {
	return capability.Info{ID: "builtin.echo", Kind: capability.KindBuiltin, Capabilities: []string{"test.echo"}}
}

func (echo) Call(_ context.Context, c capability.Call) (json.RawMessage, error) { return c.Args, nil }

// BenchmarkProviderCall measures one capability call in process and
// through a plugin, sequentially and from several goroutines, reporting
// calls/s and the 99th-percentile latency.
func BenchmarkProviderCall(b *testing.B) {
	_, bin := binaries(b)
	h := plugins.NewHost(plugins.HostOptions{Logger: discardLogger()})
	defer h.Close()
	dir := b.TempDir()
	p, err := h.Load(context.Background(), plugintest.Link(b, bin, dir, "test"))
	if err != nil {
		b.Fatal(err)
	}
	call := capability.Call{
		Tenant: "t1", Capability: "test.echo", IdempotencyKey: "run/step/1",
		Args: json.RawMessage(`{"number":"PO-1001","lines":[{"sku":"NW-CHAIR-01","quantity":4,"unit_cents":12900}]}`),
	}
	for _, bc := range []struct {
		name     string
		provider capability.Provider
		parallel bool
	}{
		{"in-process", echo{}, false},
		{"plugin", p, false},
		{"plugin-parallel", p, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			one := func(own *[]time.Duration) {
				start := time.Now()
				if _, err := bc.provider.Call(context.Background(), call); err != nil {
					b.Error(err)
				}
				*own = append(*own, time.Since(start))
			}
			b.ResetTimer()
			start := time.Now()
			if bc.parallel {
				b.RunParallel(func(pb *testing.PB) {
					var own []time.Duration
					for pb.Next() {
						one(&own)
					}
					mu.Lock()
					lat = append(lat, own...)
					mu.Unlock()
				})
			} else {
				for b.Loop() {
					one(&lat)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "calls/s")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "p99-ms")
			}
		})
	}
}
