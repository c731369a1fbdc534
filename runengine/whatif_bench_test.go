package runengine_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/bas-platform/bas/runengine"
)

// BenchmarkWhatIf replays a three-step process version over 200 runs whose
// first step a person approved or rejected, and reports the replay's
// throughput in cases per second.
func BenchmarkWhatIf(b *testing.B) {
	be := newBenchEngineWith(b, func(cfg *runengine.Config) { cfg.Gate = &autoGate{auto: false} })
	pid := be.process(b, 3)
	ctx := context.Background()
	const runs = 200
	for i := range runs {
		r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: pid, Subject: runengine.Subject{Type: "bench", Label: "run"}})
		if err != nil {
			b.Fatal(err)
		}
		for step := range 3 {
			r, err = be.eng.WaitRunUntil(ctx, tenant, r.ID, func(r *runengine.Run) bool {
				return r.Finished() || r.Steps[step].Status == runengine.StepWaitingApproval
			})
			if err != nil {
				b.Fatal(err)
			}
			if r.Finished() {
				break
			}
			if _, err := be.eng.Decide(ctx, runengine.DecideParams{Tenant: tenant, ApprovalID: *r.Steps[step].ApprovalID,
				Approve: i%4 != 0 || step > 0, Actor: "usr_boss"}); err != nil {
				b.Fatal(err)
			}
		}
		be.wait(r.ID)
	}
	b.ResetTimer()
	t0 := time.Now()
	cases := 0
	for range b.N {
		job, err := be.eng.WhatIf(ctx, tenant, runengine.WhatIfParams{ProcessID: pid, Limit: runs}, "usr_bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			j, err := be.eng.GetJob(ctx, tenant, job.ID)
			if err != nil {
				b.Fatal(err)
			}
			if j.Status == runengine.JobCompleted {
				if j.Result.Cases != runs {
					b.Fatalf("replayed %d cases, want %d", j.Result.Cases, runs)
				}
				cases += j.Result.Cases
				break
			}
			runtime.Gosched()
		}
	}
	b.ReportMetric(float64(cases)/time.Since(t0).Seconds(), "cases/s")
}
