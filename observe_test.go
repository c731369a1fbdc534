package bas_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// runEnded signals when a run span ends: the run's end is durable and
// counted by then.
type runEnded chan string

func (r runEnded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r runEnded) OnEnd(s sdktrace.ReadOnlySpan) {
	if strings.HasPrefix(s.Name(), "run ") {
		r <- s.Name()
	}
}
func (runEnded) Shutdown(context.Context) error   { return nil }
func (runEnded) ForceFlush(context.Context) error { return nil }

func TestMetricsAndSpansOfARun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	exp := tracetest.NewInMemoryExporter()
	ended := make(runEnded, 4)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(ended))
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}, Metrics: reg, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, _, err := wiring.Of(ws.Internal()).Access().CreateWorkspace(ctx, access.NewWorkspace{ID: "acme", Name: "Acme", OwnerEmail: "ann@acme.test"}); err != nil {
		t.Fatal(err)
	}
	in, err := process.DecodeIn([]byte(`{"name": "Convert", "trigger": {"type": "manual"},
	  "steps": [{"key": "fx", "type": "execute", "capability": "fx.convert",
	    "config": {"args": {"usd_cents": 10000}}, "controls": {"require_approval": true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := ws.Processes().Create(ctx, "acme", "usr_ann", in)
	if err != nil {
		t.Fatal(err)
	}
	run, err := ws.Engine().Start(ctx, runengine.StartParams{Tenant: "acme", ProcessID: def.ID,
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_ann"})
	if err != nil {
		t.Fatal(err)
	}
	if n := gauge(t, reg, "bas_pending_approvals"); n != 1 {
		t.Errorf("bas_pending_approvals while waiting = %v, want 1", n)
	}
	if _, err := ws.Engine().Decide(ctx, runengine.DecideParams{Tenant: "acme", ApprovalID: *run.Steps[0].ApprovalID, Approve: true, Actor: "usr_bob"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end")
	}

	// The scrape: counters moved.
	for _, test := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"bas_runs_started_total", []string{def.ID}, 1},
		{"bas_runs_finished_total", []string{def.ID, "completed"}, 1},
		{"bas_provider_call_duration_seconds", []string{"acme.rates"}, 1}, // sample count
		{"bas_step_duration_seconds", []string{"completed", "execute"}, 1},
	} {
		if got := sampleCount(t, reg, test.name, test.labels); got != test.want {
			t.Errorf("%s%v = %v, want %v", test.name, test.labels, got, test.want)
		}
	}
	if n := gauge(t, reg, "bas_pending_approvals"); n != 0 {
		t.Errorf("bas_pending_approvals after the decision = %v, want 0", n)
	}
	if n := sampleCount(t, reg, "bas_store_commit_duration_seconds", nil); n < 2 {
		t.Errorf("bas_store_commit_duration_seconds counted %v commits, want at least 2", n)
	}
	names, err := testutil.GatherAndCount(reg)
	if err != nil || names == 0 {
		t.Errorf("gather: %d series, %v", names, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "bas_") {
			t.Errorf("series %s is not named bas_...", mf.GetName())
		}
	}

	// The span tree: run > step > call, with the ids as attributes.
	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	var tree []string
	for _, s := range spans {
		path := s.Name
		for p := s.Parent; p.IsValid(); {
			parent, ok := byID[p.SpanID().String()]
			if !ok {
				path = "?" + " > " + path
				break
			}
			path = parent.Name + " > " + path
			p = parent.Parent
		}
		tree = append(tree, path)
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		if s.Name != "run Convert" && s.Name != "step fx" && s.Name != "call fx.convert" {
			continue
		}
		if attrs["bas.tenant"] != "acme" || attrs["bas.run_id"] != run.ID {
			t.Errorf("span %s attributes %v: want bas.tenant acme and bas.run_id %s", s.Name, attrs, run.ID)
		}
		if s.Name != "run Convert" && attrs["bas.step"] != "fx" {
			t.Errorf("span %s attributes %v: want bas.step fx", s.Name, attrs)
		}
	}
	want := []string{"run Convert > step fx > call fx.convert", "run Convert > step fx", "run Convert"}
	if diff := cmp.Diff(want, tree); diff != "" {
		t.Errorf("span tree (-want +got):\n%s", diff)
	}
}

// sampleCount is a counter's value or a histogram's sample count; labels
// are the values in the order of their names (as gathered: sorted).
func sampleCount(t *testing.T, reg *prometheus.Registry, name string, labels []string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetValue())
			}
			if !cmp.Equal(labels, got, cmpEmpty) {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") })

// gauge returns the value of the gauge named name, gathered anew.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
