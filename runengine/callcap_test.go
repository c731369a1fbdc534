package runengine_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestCallCapWaitingReason shows why a run whose call waits for a slot
// under a call cap waits, on the run and in lists, and clears it once the
// call goes out.
func TestCallCapWaitingReason(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(*runengine.Config)
		want   func(processID string) string
	}{
		{"tenant", func(c *runengine.Config) { c.MaxCallsPerTenant = 1 },
			func(string) string { return "call cap of the tenant: 1 calls in flight" }},
		{"process", func(c *runengine.Config) { c.MaxCallsPerProcess = 1 },
			func(id string) string { return "call cap of process " + id + ": 1 calls in flight" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			q := &queueProvider{next: make(chan struct{})}
			b := openChanged(t, c.change, q)
			ctx := context.Background()
			def := b.create(t, `{"type":"manual"}`, `[{"key":"call","type":"execute","capability":"test.queue","config":{"args":{"label":"${subject.label}"}}}]`)
			start := func(label string) string {
				r, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Subject: runengine.Subject{Type: "t", Label: label}})
				if err != nil {
					t.Fatal(err)
				}
				return runID(t, r)
			}
			first := start("first")
			waitFor(t, "the first call", func() bool { return len(q.calls()) == 1 })
			second := start("second")
			reasons := func() map[string]string {
				got := map[string]string{}
				for _, id := range []string{first, second} {
					r, err := b.eng.GetRun(ctx, tenant, id)
					if err != nil {
						t.Fatal(err)
					}
					got["get "+r.Subject.Label] = r.WaitingReason
				}
				list, _, err := b.eng.ListRuns(ctx, tenant, runengine.RunQuery{ProcessID: def.ID}, store.Page{})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range list {
					got["list "+r.Subject.Label] = r.WaitingReason
				}
				return got
			}
			want := map[string]string{"get first": "", "get second": c.want(def.ID), "list first": "", "list second": c.want(def.ID)}
			if diff := cmp.Diff(want, reasons()); diff != "" {
				t.Errorf("waiting reasons while capped (-want +got):\n%s", diff)
			}
			q.next <- struct{}{}
			waitFor(t, "the second call", func() bool { return len(q.calls()) == 2 })
			want = map[string]string{"get first": "", "get second": "", "list first": "", "list second": ""}
			if diff := cmp.Diff(want, reasons()); diff != "" {
				t.Errorf("waiting reasons once the call went out (-want +got):\n%s", diff)
			}
			q.next <- struct{}{}
			b.waitRun(t, second, "completed", status(runengine.RunCompleted))
		})
	}
}
