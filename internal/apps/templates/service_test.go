package templates

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// noGaps says every capability is filled but those listed.
type noGaps map[string]bool

func (g noGaps) Gaps(_ context.Context, _ string, needed []string) ([]registry.Gap, error) {
	var out []registry.Gap
	for _, c := range needed {
		if g[c] {
			out = append(out, registry.Gap{Capability: c, FilledBy: registry.FilledByManual})
		}
	}
	return out, nil
}

func setup(t *testing.T, gaps noGaps) (*Service, *process.Service) { return setupTB(t, gaps) }

func setupTB(t testing.TB, gaps noGaps) (*Service, *process.Service) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	procs := process.NewService(process.Config{Store: st, Clock: clk, Logger: quiet})
	svc, err := New(Config{Store: st, Clock: clk, Logger: quiet, Processes: procs, Gaps: gaps})
	if err != nil {
		t.Fatal(err)
	}
	return svc, procs
}

// One request installs in one transaction: when a later process cannot be
// created, the earlier ones are not either.
func TestInstallAllOrNothing(t *testing.T) {
	t.Parallel()
	svc, procs := setup(t, nil)
	ctx := context.Background()
	created := 0
	procs.OnChange(func(tx store.Txn, tenant string, old, d *process.Definition) error {
		if old == nil && d.TemplateID != nil && *d.TemplateID == "refund_request" {
			return errors.New("the store refuses this one")
		}
		created++
		return nil
	})
	_, err := svc.Install(ctx, "ten_a", "usr_a", InstallIn{TemplateIDs: []string{"onboard_supplier", "leave_request", "refund_request"}})
	if err == nil {
		t.Fatal("installed despite a failing process")
	}
	if created == 0 {
		t.Fatal("the hook never ran: the test proves nothing")
	}
	list, _, err := procs.List(ctx, "ten_a", process.Query{}, store.Page{Limit: 50})
	if err != nil || len(list) != 0 {
		t.Fatalf("processes after a failed install: %d (%v)", len(list), err)
	}
	entries, err := svc.List(ctx, "ten_a", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Installed {
			t.Errorf("%s installed", e.ID)
		}
	}
	// Without the failing template, the others install.
	out, err := svc.Install(ctx, "ten_a", "usr_a", InstallIn{TemplateIDs: []string{"onboard_supplier", "leave_request"}})
	if err != nil || len(out.Installed) != 2 {
		t.Fatalf("install: %+v, %v", out, err)
	}
}

func TestInstallSkips(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t, noGaps{"crm.activity.log": true, "invoice.get": true, "invoice.send": true})
	ctx := context.Background()
	out, err := svc.Install(ctx, "ten_a", "usr_a", InstallIn{TemplateIDs: []string{
		"chase_receivable", "customer_complaint", "candidate_screening", "onboard_supplier", "onboard_supplier"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Skipped{
		{"chase_receivable", "requires invoice.get, invoice.send which no provider fills"},
		{"customer_complaint", "requires crm.activity.log which no provider fills"},
		{"candidate_screening", "coming: the template is not available yet"},
		{"onboard_supplier", "listed more than once"},
	}
	if diff := cmp.Diff(want, out.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if len(out.Installed) != 1 || *out.Installed[0].TemplateID != "onboard_supplier" || out.Installed[0].Function != "procurement" {
		t.Errorf("installed %+v", out.Installed)
	}
}

// Concurrent installations of one template make one process: the others
// see it installed.
func TestInstallConcurrent(t *testing.T) {
	t.Parallel()
	svc, procs := setup(t, nil)
	ctx := context.Background()
	const n = 8
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		installed int
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := svc.Install(ctx, "ten_a", "usr_a", InstallIn{TemplateIDs: []string{"onboard_supplier"}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			installed += len(out.Installed)
			mu.Unlock()
		}()
	}
	testwait.Wait(t, &wg, "the concurrent installs returned")
	list, _, err := procs.List(ctx, "ten_a", process.Query{}, store.Page{Limit: 50})
	if err != nil || len(list) != 1 || installed != 1 {
		t.Fatalf("%d processes, %d installed (%v)", len(list), installed, err)
	}
}

// BenchmarkInstall installs one template in a fresh workspace per
// iteration (one transaction: the process, its version, the audit entry
// and the installation).
func BenchmarkInstall(b *testing.B) {
	svc, _ := setupTB(b, nil)
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		if _, err := svc.Install(ctx, fmt.Sprintf("ten_%d", i), "usr_a", InstallIn{TemplateIDs: []string{"onboard_supplier"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// Check locates its violations at InstallIn's field names: the HTTP API,
// not the Go API, puts them under "body".
func TestCheckLocatesAtFieldNames(t *testing.T) {
	t.Parallel()
	svc, _ := setup(t, nil)
	type v struct{ Loc, Type string }
	where := func(err error) []v {
		var out []v
		for _, x := range errs.Violations(err) {
			out = append(out, v{fmt.Sprint(x.Loc), x.Type})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   InstallIn
		want []v
	}{
		{"missing", InstallIn{}, []v{{"[template_ids]", "missing"}}},
		{"empty", InstallIn{TemplateIDs: []string{}}, []v{{"[template_ids]", "too_short"}}},
		{"unknown and empty", InstallIn{TemplateIDs: []string{"onboard_supplier", "teleport_goods", ""}},
			[]v{{"[template_ids 1]", "value_error"}, {"[template_ids 2]", "string_too_short"}}},
	} {
		if diff := cmp.Diff(tc.want, where(svc.Check(tc.in))); diff != "" {
			t.Errorf("%s: violations (-want +got):\n%s", tc.name, diff)
		}
	}
}
