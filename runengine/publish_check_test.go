package runengine_test

import (
	"context"
	"log/slog"
	"math"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestPublishNeedsTenantAndName: an event without its tenant or name is
// ErrInvalid naming each; before, Publish committed it and dispatched it
// (an embedder's zero PublishParams published an event with no tenant).
func TestPublishNeedsTenantAndName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, test := range []struct {
		name string
		p    runengine.PublishParams
		want []errs.Violation
	}{
		{"zero", runengine.PublishParams{}, []errs.Violation{
			{Loc: []any{"tenant"}, Msg: "is required", Type: "missing"},
			{Loc: []any{"name"}, Msg: "is required", Type: "missing"}}},
		{"no tenant", runengine.PublishParams{Name: "invoice.received"}, []errs.Violation{
			{Loc: []any{"tenant"}, Msg: "is required", Type: "missing"}}},
		{"no name", runengine.PublishParams{Tenant: tenant, Data: map[string]any{"a": 1}}, []errs.Violation{
			{Loc: []any{"name"}, Msg: "is required", Type: "missing"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			pub, err := b.eng.Publish(ctx, test.p)
			if pub != nil {
				t.Errorf("published %+v", pub.Event)
			}
			if diff := cmp.Diff(test.want, errs.Violations(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s (error %v)", diff, err)
			}
		})
	}
}

// TestGoCallerValuesChecked: from Go a caller can put in a start's or an
// event's data what JSON cannot hold (NaN, a func), and name a priority
// the API would refuse. Each is ErrInvalid at its field; before, the data
// was an error of no kind (an internal error, "json: unsupported value")
// and the priority was kept on the run as given.
func TestGoCallerValuesChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	def := b.create(t, `{"type": "manual"}`, `[{"key": "t", "type": "human_task", "config": {"title": "Check"}}]`)
	start := func(data map[string]any, priority string) error {
		_, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Data: data, Priority: priority})
		return err
	}
	publish := func(data map[string]any) error {
		_, err := b.eng.Publish(ctx, runengine.PublishParams{Tenant: tenant, Name: "invoice.received", Data: data})
		return err
	}
	for _, test := range []struct {
		name string
		err  error
		want []any // the violation's location; nil: no error
	}{
		{"start NaN", start(map[string]any{"amount": math.NaN()}, ""), []any{"data"}},
		{"start func", start(map[string]any{"f": func() {}}, ""), []any{"data"}},
		{"start urgent", start(nil, "urgent"), []any{"priority"}},
		{"start high", start(nil, "high"), nil},
		{"start normal", start(nil, "normal"), nil},
		{"publish +Inf", publish(map[string]any{"amount": math.Inf(1)}), []any{"data"}},
		{"publish chan", publish(map[string]any{"c": make(chan int)}), []any{"data"}},
		{"publish", publish(map[string]any{"amount": 1}), nil},
	} {
		var got []any
		if vs := errs.Violations(test.err); len(vs) == 1 {
			got = vs[0].Loc
		} else if test.err != nil {
			got = []any{"not one violation: " + test.err.Error()}
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%s: location (-want +got):\n%s", test.name, diff)
		}
	}
}

// TestRefusedStartLogsNoError: a Go caller's start whose data JSON cannot
// hold is refused to the caller (ErrInvalid), which is no error of the
// engine's: nothing is logged at Error (each such start logged "encode
// run" at Error before).
func TestRefusedStartLogsNoError(t *testing.T) {
	t.Parallel()
	var logged lockedBuffer
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	b := openWith(t, st, clock.NewFake(t0), &testProvider{}, &autoGate{auto: true}, func(cfg *runengine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	def := b.create(t, `{"type": "manual"}`, `[{"key": "t", "type": "human_task", "config": {"title": "Check"}}]`)
	for _, data := range []map[string]any{{"amount": math.NaN()}, {"f": func() {}}} {
		_, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
			Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Data: data})
		if !errors.Is(err, errs.Invalid) {
			t.Fatalf("start with %v: %v, want ErrInvalid", data, err)
		}
	}
	logged.mu.Lock()
	out := logged.buf.String()
	logged.mu.Unlock()
	if out != "" {
		t.Errorf("refused starts logged at Error:\n%s", out)
	}
}
