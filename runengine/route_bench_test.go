package runengine_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// BenchmarkRouteThenCall runs a process of a route step, whose rule looks
// at the subject, then an execute step, from 64 starters (see measure): a
// pure step's cost on the engine's path.
func BenchmarkRouteThenCall(b *testing.B) {
	be := newBenchEngineOn(b, noopProvider{}, func(*runengine.Config) {})
	in, err := process.DecodeIn([]byte(`{"name":"Bench","function":"ops","trigger":{"type":"manual"},"steps":[
		{"key":"route","type":"route","config":{"rules":[{"when":{"subject.type":"delivery"},"queue":"receiving"}],"default":{"queue":"ap"}}},
		{"key":"s1","type":"execute","capability":"bench.noop","config":{"args":{"i":1}}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	def, err := be.procs.Create(context.Background(), tenant, "usr_bench", in)
	if err != nil {
		b.Fatal(err)
	}
	measure(b, be, 64, false, func(ctx context.Context) (string, error) {
		r, err := be.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "delivery", Label: "run"}})
		if err != nil {
			return "", err
		}
		return r.ID, nil
	})
}
