package telemetry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/telemetry"
	"github.com/bas-platform/bas/runengine"
	"github.com/prometheus/client_golang/prometheus"
)

// The telemetry counts what the engine tells it; a scrape reads the
// series from the registry it was given.
func Example() {
	reg := prometheus.NewRegistry()
	tel, err := telemetry.New(telemetry.Config{Metrics: reg})
	if err != nil {
		panic(err)
	}
	run := runengine.RunNote{Tenant: "acme", RunID: "run_1", ProcessID: "prc_1", ProcessName: "Invoices", StartedAt: time.Now()}
	tel.RunStarted(run)
	_, done := tel.ProviderCall(context.Background(), "acme.erp", capability.Call{Tenant: "acme", Capability: "invoice.send"})
	done(nil)
	tel.RunFinished(run, runengine.RunCompleted)

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "bas_runs_started_total" && mf.GetName() != "bas_runs_finished_total" &&
			mf.GetName() != "bas_provider_call_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				fmt.Println(mf.GetName(), m.GetCounter().GetValue())
			case m.GetHistogram() != nil:
				fmt.Println(mf.GetName(), "samples", m.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// bas_provider_call_duration_seconds samples 1
	// bas_runs_finished_total 1
	// bas_runs_started_total 1
}
