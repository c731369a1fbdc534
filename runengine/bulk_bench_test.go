package runengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// BenchmarkBulkCancel cancels b.N runs waiting on a person with one bulk
// job (filter: status waiting) and reports the job's CPU time per run
// (cpu-µs/run, the engine's cost, steadier than the rate on a shared
// machine) and runs cancelled per second; starting the runs is not
// measured.
func BenchmarkBulkCancel(b *testing.B) {
	be := newBenchEngine(b)
	ctx := context.Background()
	in, err := process.DecodeIn([]byte(`{"name":"Bench","function":"ops","trigger":{"type":"manual"},
		"steps":[{"key":"t","type":"human_task","config":{"title":"Check"}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	def, err := be.procs.Create(ctx, tenant, "usr_bench", in)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "bench", Label: "run"}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := be.eng.WaitRunUntil(ctx, tenant, r.ID, func(r *runengine.Run) bool { return r.Status == runengine.RunWaiting }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := runengine.CPUTime()
	start := time.Now()
	j, err := be.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Status: runengine.RunWaiting}, runengine.JobCancel, "usr_bench")
	if err != nil {
		b.Fatal(err)
	}
	for j.Status == runengine.JobRunning {
		time.Sleep(5 * time.Millisecond)
		if j, err = be.eng.GetJob(ctx, tenant, j.ID); err != nil {
			b.Fatal(err)
		}
	}
	elapsed, cpu := time.Since(start), runengine.CPUTime()-cpu0
	b.StopTimer()
	if j.Changed != b.N {
		b.Fatalf("job changed %d runs, want %d", j.Changed, b.N)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
}
