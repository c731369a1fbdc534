package runengine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bas-platform/bas/runengine"
)

// TestStepOutputCap: a capability's output beyond MaxStepOutputBytes fails
// the run with a clear error instead of being stored; one within is kept.
func TestStepOutputCap(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.create(t, `{"type":"event","event":"custom.big"}`, `[
		{"key":"echo","type":"execute","capability":"test.echo","config":{"args":{
		 "a":"${trigger.data.s}","b":"${trigger.data.s}","c":"${trigger.data.s}","d":"${trigger.data.s}","e":"${trigger.data.s}"}}}
	]`)
	for _, tt := range []struct {
		size int
		want runengine.RunStatus
	}{
		{50 << 10, runengine.RunCompleted},
		{60 << 10, runengine.RunFailed},
	} {
		started, err := runsOf(b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "custom.big", Data: map[string]any{"s": strings.Repeat("x", tt.size)}}))
		if err != nil || len(started) != 1 {
			t.Fatalf("publish: %v, %d runs", err, len(started))
		}
		r := b.waitRun(t, runID(t, started[0]), string(tt.want), status(tt.want))
		if tt.want == runengine.RunFailed {
			if r.Error == nil || !strings.Contains(*r.Error, "a step's output may be at most 262144") || r.Steps[0].Output != nil {
				t.Errorf("failed run: error %v, output stored: %v", r.Error, r.Steps[0].Output != nil)
			}
		}
	}
}
