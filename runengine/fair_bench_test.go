package runengine_test

import (
	"context"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
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
// measured tenant's p50 and p99 in milliseconds, the p50 of its Start
// alone (until the start is durable), and how long goroutines waited,
// ready to run, for a processor meanwhile (runnable-p50-ms, -p99-ms: the
// CPU starvation every hop of a run pays), and the flooder's starts per
// second (what the caps cost it).
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
			var flooded atomic.Int64
			if c.flood {
				for range c.starters {
					wg.Go(func() {
						for ctx.Err() == nil {
							if _, err := be.eng.Start(ctx, runengine.StartParams{Tenant: "ten_flood", ProcessID: flood.ID,
								Subject: runengine.Subject{Type: "flood", Label: "run"}}); err == nil {
								flooded.Add(1)
							}
						}
					})
				}
			}
			lat := make([]time.Duration, 0, b.N)
			starts := make([]time.Duration, 0, b.N)
			sched := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
			metrics.Read(sched)
			before := slices.Clone(sched[0].Value.Float64Histogram().Counts) // Read reuses the histogram
			b.ResetTimer()
			began, floodedBefore := time.Now(), flooded.Load()
			for range b.N {
				t0 := time.Now()
				r, err := be.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: pid,
					Subject: runengine.Subject{Type: "bench", Label: "run"}})
				if err != nil {
					b.Fatal(err)
				}
				starts = append(starts, time.Since(t0))
				lat = append(lat, be.wait(r.ID).Sub(t0))
			}
			b.StopTimer()
			floodRate := float64(flooded.Load()-floodedBefore) / time.Since(began).Seconds()
			metrics.Read(sched)
			cancel()
			wg.Wait()
			slices.Sort(lat)
			slices.Sort(starts)
			b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
			b.ReportMetric(float64(starts[len(starts)/2])/1e6, "start-p50-ms")
			b.ReportMetric(floodRate, "flood-starts/s")
			b.ReportMetric(schedLatency(before, sched[0].Value.Float64Histogram(), 0.5)*1e3, "runnable-p50-ms")
			b.ReportMetric(schedLatency(before, sched[0].Value.Float64Histogram(), 0.99)*1e3, "runnable-p99-ms")
		})
	}
}

// schedLatency returns the q quantile, in seconds, of the goroutine
// scheduling latencies observed between two reads of the histogram.
func schedLatency(before []uint64, after *metrics.Float64Histogram, q float64) float64 {
	var total uint64
	counts := make([]uint64, len(after.Counts))
	for i := range after.Counts {
		counts[i] = after.Counts[i] - before[i]
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i, n := range counts {
		if seen += n; seen > want {
			return after.Buckets[i+1]
		}
	}
	return after.Buckets[len(after.Buckets)-1]
}
