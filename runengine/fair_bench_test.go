package runengine_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// BenchmarkFairness measures one tenant's run latency (a chain of three
// calls, one run at a time, start to end) alone, while another tenant
// floods the engine with 64 concurrent starters, the same with the
// flooder capped at 8 calls in flight (MaxCallsPerTenant), and with 1024
// starters (a backlog in every worker's queue), and both floods with the
// flooder's runs in flight capped at 16 (MaxRunsPerTenant), or its starts
// in progress capped at 4 (MaxStartingPerTenant), or all three caps
// (calls 8, runs 16, starts 4). It reports the
// measured tenant's p50 and p99 in milliseconds.
func BenchmarkFairness(b *testing.B) {
	for _, c := range []struct {
		name     string
		flood    bool
		cap      int
		runCap   int
		starting int
		starters int
	}{{"alone", false, 0, 0, 0, 0}, {"flooded", true, 0, 0, 0, 64}, {"flooded-capped", true, 8, 0, 0, 64},
		{"flooded-wide", true, 0, 0, 0, 1024}, {"flooded-runcap", true, 0, 16, 0, 64}, {"flooded-wide-runcap", true, 0, 16, 0, 1024},
		{"flooded-admitted", true, 0, 0, 4, 64}, {"flooded-wide-admitted", true, 0, 0, 4, 1024},
		{"flooded-all-caps", true, 8, 16, 4, 64}, {"flooded-wide-all-caps", true, 8, 16, 4, 1024}} {
		b.Run(c.name, func(b *testing.B) {
			be := newBenchEngineWith(b, func(cfg *runengine.Config) {
				cfg.MaxCallsPerTenant, cfg.MaxRunsPerTenant, cfg.MaxStartingPerTenant = c.cap, c.runCap, c.starting
			})
			pid := be.process(b, 3)
			in, err := process.DecodeIn([]byte(`{"name":"Flood","trigger":{"type":"manual"},"steps":[
			  {"key":"a","type":"execute","capability":"bench.noop","config":{"args":{}}},
			  {"key":"b","type":"execute","capability":"bench.noop","config":{"args":{}}},
			  {"key":"c","type":"execute","capability":"bench.noop","config":{"args":{}}}]}`))
			if err != nil {
				b.Fatal(err)
			}
			flood, err := be.procs.Create(context.Background(), "ten_flood", "usr", in)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			if c.flood {
				for range c.starters {
					wg.Go(func() {
						for ctx.Err() == nil {
							_, _ = be.eng.Start(ctx, runengine.StartParams{Tenant: "ten_flood", ProcessID: flood.ID,
								Subject: runengine.Subject{Type: "flood", Label: "run"}})
						}
					})
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				r, err := be.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: pid,
					Subject: runengine.Subject{Type: "bench", Label: "run"}})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, be.wait(r.ID).Sub(t0))
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
		})
	}
}
