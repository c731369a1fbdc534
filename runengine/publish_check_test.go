package runengine_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
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
