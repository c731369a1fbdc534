package runengine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

// TestRunSearch finds runs by the words of their label and of their
// declared search fields, and filters them by a field's value.
func TestRunSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, err := process.DecodeIn([]byte(`{"name":"Pay","function":"finance","trigger":{"type":"manual"},
	  "search":{"supplier":"steps.one.supplier","amount_cents":"steps.one.amount_cents","missing":"steps.two.nothing"},
	  "steps":[{"key":"one","type":"execute","capability":"test.echo","config":{"args":{"supplier":"${subject.type}","amount_cents":1250}}},
	    {"key":"two","type":"human_task","config":{"title":"Check"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	def, err := b.procs.Create(ctx, tenant, "usr_test", in)
	if err != nil {
		t.Fatal(err)
	}
	start := func(typ, label string) string {
		raw, err := b.eng.Start(ctx, runengine.StartParams{Tenant: tenant, ProcessID: def.ID, Subject: runengine.Subject{Type: typ, Label: label}})
		if err != nil {
			t.Fatal(err)
		}
		id := runID(t, raw)
		b.waitRun(t, id, "waiting", status(runengine.RunWaiting))
		return id
	}
	acme := start("ACME GmbH", "Invoice INV-1042")
	globex := start("Globex", "Invoice INV-7 for Globex")
	plain := b.start(t, b.create(t, `{"type":"manual"}`, `[{"key":"t","type":"human_task","config":{"title":"x"}}]`).ID)

	r, _ := b.eng.GetRun(ctx, tenant, acme)
	if diff := cmp.Diff(map[string]string{"supplier": "acme gmbh", "amount_cents": "1250"}, r.Search); diff != "" {
		t.Errorf("search values (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		name string
		q    runengine.RunQuery
		want []string
	}{
		{"a label word", runengine.RunQuery{Q: "invoice"}, []string{globex, acme}},
		{"every word", runengine.RunQuery{Q: "Invoice 1042"}, []string{acme}},
		{"a field's word", runengine.RunQuery{Q: "acme"}, []string{acme}},
		{"a word of no run", runengine.RunQuery{Q: "initech"}, nil},
		{"a label of a process without fields", runengine.RunQuery{Q: "inv-1"}, []string{plain}},
		{"a field value", runengine.RunQuery{Search: map[string]string{"supplier": " Globex "}}, []string{globex}},
		{"two fields", runengine.RunQuery{Search: map[string]string{"supplier": "acme gmbh", "amount_cents": "1250"}}, []string{acme}},
		{"a field and a word", runengine.RunQuery{Q: "globex", Search: map[string]string{"amount_cents": "1250"}}, []string{globex}},
		{"a field and another process", runengine.RunQuery{ProcessID: "prc_other", Search: map[string]string{"amount_cents": "1250"}}, nil},
	} {
		got, _, err := b.eng.ListRuns(ctx, tenant, c.q, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if diff := cmp.Diff(c.want, ids); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if got := runengine.SearchWords("Ünïcode, INV-7/ä"); !slices.Equal(got, []string{"ünïcode", "inv", "7", "ä"}) {
		t.Errorf("words = %q", got)
	}
	// A bulk job takes the same filter.
	j, err := b.eng.BulkRuns(ctx, tenant, runengine.JobFilter{Q: "invoice"}, runengine.JobCancel, "usr_a")
	if err != nil || j.Total != 2 {
		t.Fatalf("bulk over q: %+v %v", j, err)
	}
	if j := waitJob(t, b, j.ID); j.Changed != 2 {
		t.Errorf("job = %+v", j)
	}
	b.waitRun(t, plain, "still waiting", status(runengine.RunWaiting))
}
