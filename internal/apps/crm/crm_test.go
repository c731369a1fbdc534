package crm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const tenant = "ten_crm"

// event is one event the recording sink got.
type event struct {
	Name string
	Data map[string]any
}

// recordingSink stands in for the run engine's outbox: Emit writes the
// event into the store inside the caller's transaction, so an event
// exists exactly when its change was committed.
type recordingSink struct {
	mu  sync.Mutex
	seq int
}

func (r *recordingSink) Emit(tx store.Txn, tenant, name string, data any) error {
	b, err := json.Marshal(event{Name: name, Data: data.(map[string]any)})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.seq++
	n := r.seq
	r.mu.Unlock()
	return tx.Set(store.Key(store.System, "test-outbox", n), b)
}

func (r *recordingSink) Kick() {}

type bundle struct {
	st    store.Store
	svc   *Service
	clock *clock.Fake
}

func setup(t testing.TB) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC))
	svc := New(Config{Store: st, Clock: clk, Events: &recordingSink{},
		OwnerExists: func(_ context.Context, _, id string) error {
			if id == "usr_ana" {
				return nil
			}
			return errs.NotFoundf("member not found")
		}})
	return &bundle{st: st, svc: svc, clock: clk}
}

// events returns the committed events, in order, and forgets them.
func (b *bundle) events(t *testing.T) []event {
	t.Helper()
	var out []event
	err := b.st.Update(context.Background(), func(tx store.Txn) error {
		var keys [][]byte
		err := tx.Scan(store.ScanOptions{Prefix: store.Key(store.System, "test-outbox")}, func(k, v []byte) error {
			var e event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			out = append(out, e)
			keys = append(keys, append([]byte(nil), k...))
			return nil
		})
		for _, k := range keys {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

func TestDealEventsAndClosedAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p, err := b.svc.DefaultPipeline(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	won, lost := p.Stages[4], p.Stages[5]
	d, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "Anvils", AmountCents: ptr[int64](12_000_00), OwnerID: ptr("usr_ana")})
	if err != nil {
		t.Fatal(err)
	}
	// Refused changes emit nothing.
	if _, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "x", OwnerID: ptr("usr_bob")}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("an unknown owner: %v", err)
	}
	if _, err := b.svc.UpdateDeal(ctx, tenant, d.ID, DealPatch{StageID: ptr("stg_nope")}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("an unknown stage: %v", err)
	}
	if got := names(b.events(t)); !cmp.Equal(got, []string{"crm.deal.created"}) {
		t.Fatalf("events %v", got)
	}
	for _, step := range []struct {
		stage      Stage
		wantEvents []string
		closed     bool
	}{
		{won, []string{"crm.deal.stage_changed", "crm.deal.won"}, true},
		{lost, []string{"crm.deal.stage_changed", "crm.deal.lost"}, true},
		{p.Stages[1], []string{"crm.deal.stage_changed"}, false},
		{p.Stages[1], nil, false},
		{won, []string{"crm.deal.stage_changed", "crm.deal.won"}, true},
	} {
		b.clock.Advance(time.Hour)
		d, err = b.svc.UpdateDeal(ctx, tenant, d.ID, DealPatch{StageID: &step.stage.ID})
		if err != nil {
			t.Fatal(err)
		}
		evs := b.events(t)
		if diff := cmp.Diff(step.wantEvents, names(evs)); diff != "" {
			t.Errorf("move to %s: events (-want +got):\n%s", step.stage.Name, diff)
		}
		if step.closed != (d.ClosedAt != nil) || (step.closed && !d.ClosedAt.Equal(b.clock.Now())) {
			t.Errorf("move to %s: closed_at %v", step.stage.Name, d.ClosedAt)
		}
		if d.Status != step.stage.Kind {
			t.Errorf("move to %s: status %s", step.stage.Name, d.Status)
		}
		for _, e := range evs {
			if e.Data["deal_id"] != d.ID || e.Data["amount_cents"] != float64(12_000_00) || e.Data["stage_id"] != step.stage.ID ||
				e.Data["owner_id"] != "usr_ana" || e.Data["stage_kind"] != step.stage.Kind {
				t.Errorf("event %s data %v", e.Name, e.Data)
			}
		}
	}
}

// TestBoardCountersFollowEveryChange makes many random changes to deals
// (creates, moves, amount and currency changes, deletes) and checks the
// board's counters against a sum over the deals after each batch.
func TestBoardCountersFollowEveryChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p, err := b.svc.DefaultPipeline(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var live []string
	currencies := []string{"USD", "EUR"}
	for batch := range 10 {
		for range 30 {
			switch op := rng.IntN(10); {
			case op < 4 || len(live) == 0:
				st := p.Stages[rng.IntN(len(p.Stages))]
				d, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "d", AmountCents: ptr(rng.Int64N(1_000_000)),
					Currency: &currencies[rng.IntN(2)], StageID: &st.ID})
				if err != nil {
					t.Fatal(err)
				}
				live = append(live, d.ID)
			case op < 8:
				st := p.Stages[rng.IntN(len(p.Stages))]
				patch := DealPatch{StageID: &st.ID}
				if rng.IntN(2) == 0 {
					patch.AmountCents = ptr(rng.Int64N(1_000_000))
				}
				if rng.IntN(3) == 0 {
					patch.Currency = &currencies[rng.IntN(2)]
				}
				if _, err := b.svc.UpdateDeal(ctx, tenant, live[rng.IntN(len(live))], patch); err != nil {
					t.Fatal(err)
				}
			default:
				i := rng.IntN(len(live))
				if err := b.svc.DeleteDeal(ctx, tenant, live[i]); err != nil {
					t.Fatal(err)
				}
				live = append(live[:i], live[i+1:]...)
			}
		}
		checkBoard(t, b, p.ID, fmt.Sprintf("batch %d", batch))
	}
}

// checkBoard compares the board's counters with sums over every deal of
// the pipeline.
func checkBoard(t *testing.T, b *bundle, pipelineID, when string) {
	t.Helper()
	ctx := context.Background()
	cols, err := b.svc.Board(ctx, tenant, pipelineID, 200)
	if err != nil {
		t.Fatal(err)
	}
	type fig struct{ Count, Total, Weighted int64 }
	got, want := map[string]fig{}, map[string]fig{}
	gotCur, wantCur := map[string]fig{}, map[string]fig{}
	var all []*Deal
	cursor := ""
	for {
		page, next, err := b.svc.ListDeals(ctx, tenant, DealFilter{PipelineID: pipelineID}, store.Page{Limit: 200, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	for _, c := range cols {
		got[c.Stage.ID] = fig{c.Count, c.TotalCents, c.WeightedCents}
		for _, ct := range c.Totals {
			gotCur[c.Stage.ID+"/"+ct.Currency] = fig{ct.Count, ct.TotalCents, ct.WeightedCents}
		}
		var f fig
		for _, d := range all {
			if d.StageID != c.Stage.ID {
				continue
			}
			f.Count++
			f.Total += d.AmountCents
			k := c.Stage.ID + "/" + d.Currency
			cf := wantCur[k]
			cf.Count++
			cf.Total += d.AmountCents
			cf.Weighted = cf.Total * int64(c.Stage.Probability) / 100
			wantCur[k] = cf
		}
		f.Weighted = f.Total * int64(c.Stage.Probability) / 100
		want[c.Stage.ID] = f
		if int64(len(c.Deals)) != min(f.Count, 200) {
			t.Errorf("%s: stage %s shows %d deals of %d", when, c.Stage.Name, len(c.Deals), f.Count)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: board (-sum over deals +counters):\n%s", when, diff)
	}
	if diff := cmp.Diff(wantCur, gotCur); diff != "" {
		t.Errorf("%s: board per currency (-sum over deals +counters):\n%s", when, diff)
	}
}

// TestConcurrentMovesKeepCounters moves deals from many goroutines at
// once; conflicting transactions retry, and the counters stay exact.
func TestConcurrentMovesKeepCounters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p, err := b.svc.DefaultPipeline(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 40 {
		d, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "d", AmountCents: ptr(int64(100 * (i + 1)))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(ids); i += 8 {
				st := p.Stages[(i+g)%len(p.Stages)]
				if _, err := b.svc.UpdateDeal(ctx, tenant, ids[i], DealPatch{StageID: &st.ID}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	testwait.Wait(t, &wg, "the concurrent moves returned")
	checkBoard(t, b, p.ID, "after concurrent moves")
}

func TestStageAndPipelineDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	p, err := b.svc.CreatePipeline(ctx, tenant, PipelineIn{Name: "Renewals", Stages: []StageIn{{Name: "Due"}, {Name: "Done", Kind: ptr(KindWon)}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "r", PipelineID: &p.ID})
	if err != nil {
		t.Fatal(err)
	}
	if d.StageID != p.Stages[0].ID {
		t.Errorf("deal in %s, want the first open stage", d.StageID)
	}
	if _, err := b.svc.DeleteStage(ctx, tenant, p.ID, p.Stages[0].ID); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete a stage holding a deal: %v", err)
	}
	if err := b.svc.DeletePipeline(ctx, tenant, p.ID); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete a pipeline holding a deal: %v", err)
	}
	if _, err := b.svc.UpdateDeal(ctx, tenant, d.ID, DealPatch{StageID: &p.Stages[1].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.DeleteStage(ctx, tenant, p.ID, p.Stages[0].ID); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete the last open stage: %v", err)
	}
	if _, err := b.svc.DeleteStage(ctx, tenant, p.ID, p.Stages[1].ID); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete the stage now holding the deal: %v", err)
	}
	if err := b.svc.DeleteDeal(ctx, tenant, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.DeletePipeline(ctx, tenant, p.ID); err != nil {
		t.Fatal(err)
	}
	def, err := b.svc.DefaultPipeline(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.DeletePipeline(ctx, tenant, def.ID); !errors.Is(err, errs.Conflict) {
		t.Errorf("delete the default pipeline: %v", err)
	}
}

func TestExistsForOtherApps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, err := b.svc.CreateCompany(ctx, tenant, CompanyIn{Name: "ACME"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "d", CompanyID: &c.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		name string
		err  error
		want error
	}{
		{"company", b.svc.CompanyExists(ctx, tenant, c.ID), nil},
		{"deal", b.svc.DealExists(ctx, tenant, d.ID), nil},
		{"company of another tenant", b.svc.CompanyExists(ctx, "ten_other", c.ID), errs.NotFound},
		{"deal of another tenant", b.svc.DealExists(ctx, "ten_other", d.ID), errs.NotFound},
		{"missing company", b.svc.CompanyExists(ctx, tenant, "cmp_nope"), errs.NotFound},
		{"missing deal", b.svc.DealExists(ctx, tenant, "del_nope"), errs.NotFound},
		{"missing contact", b.svc.ContactExists(ctx, tenant, "con_nope"), errs.NotFound},
	} {
		if (test.want == nil) != (test.err == nil) || (test.want != nil && !errors.Is(test.err, test.want)) {
			t.Errorf("%s: %v, want %v", test.name, test.err, test.want)
		}
	}
}

func TestProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	prov := b.svc.Provider()
	if info := prov.Info(); info.ID != ProviderID || info.Kind != capability.KindBuiltin || len(info.Capabilities) != 7 {
		t.Errorf("info %+v", info)
	}
	var builtin capability.App
	for _, a := range capability.BuiltinApps() {
		if a.ID == "crm" {
			builtin = a
		}
	}
	if diff := cmp.Diff(builtin, App()); diff != "" {
		t.Errorf("App() differs from the built-in crm app (-builtin +App):\n%s", diff)
	}
	call := func(capID, key string, args any) (map[string]any, error) {
		raw, _ := json.Marshal(args)
		out, err := prov.Call(ctx, capability.Call{Tenant: tenant, Capability: capID, Args: raw, IdempotencyKey: key})
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		return m, nil
	}
	must := func(m map[string]any, err error) map[string]any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// A create retried with the same key creates once.
	co1 := must(call(capability.CRMCompanyCreate, "run_1/s/1", map[string]any{"name": "ACME Supplies", "website": "https://acme.test"}))
	co2 := must(call(capability.CRMCompanyCreate, "run_1/s/1", map[string]any{"name": "ACME Supplies", "website": "https://acme.test"}))
	if co1["company_id"] != co2["company_id"] {
		t.Errorf("a retried create made %v and %v", co1, co2)
	}
	if list, _, _ := b.svc.ListCompanies(ctx, tenant, CompanyFilter{}, store.Page{}); len(list) != 1 || *list[0].Website != "https://acme.test" {
		t.Errorf("companies %v", list)
	}
	coID := co1["company_id"].(string)
	ct := must(call(capability.CRMContactCreate, "run_1/c/1", map[string]any{"first_name": "Ana", "last_name": "Lima", "email": "Ana@Acme.test", "company_id": coID}))
	for _, args := range []map[string]any{{"email": "ana@acme.test"}, {"name": "ana l"}, {"company": "acme"}, {"name": "ana", "company": "acme s"}} {
		got := must(call(capability.CRMContactLookup, "", args))
		cs, _ := got["contacts"].([]any)
		if got["found"] != true || len(cs) != 1 || cs[0].(map[string]any)["contact_id"] != ct["contact_id"] || cs[0].(map[string]any)["company"] != "ACME Supplies" {
			t.Errorf("lookup %v: %v", args, got)
		}
	}
	for _, args := range []map[string]any{{"email": "ana@acme.tes"}, {"name": "lima x"}, {"name": "ana", "company": "globex"}} {
		if got := must(call(capability.CRMContactLookup, "", args)); got["found"] != false {
			t.Errorf("lookup %v: %v", args, got)
		}
	}
	deal := must(call(capability.CRMDealCreate, "run_1/d/1", map[string]any{"title": "Anvils", "amount_cents": 5000, "close_date": "2025-06-30",
		"company_id": coID, "contact_id": ct["contact_id"]}))
	d, err := b.svc.GetDeal(ctx, tenant, deal["deal_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if d.ExpectedClose == nil || d.ExpectedClose.Format(time.DateOnly) != "2025-06-30" || d.Status != "open" {
		t.Errorf("deal %+v", d)
	}
	moved := must(call(capability.CRMDealMove, "run_1/m/1", map[string]any{"deal_id": d.ID, "stage_name": "won"}))
	if moved["status"] != "won" || moved["from_stage_id"] != d.StageID || moved["closed_at"] == nil {
		t.Errorf("move %v", moved)
	}
	if _, err := call(capability.CRMDealMove, "run_1/m/2", map[string]any{"deal_id": d.ID, "stage_name": "Nowhere"}); !errors.Is(err, errs.Invalid) {
		t.Errorf("a move to a stage that does not exist: %v", err)
	}
	upd := must(call(capability.CRMDealUpdate, "run_1/u/1", map[string]any{"deal_id": d.ID, "amount_cents": 7000, "stage_id": moved["stage_id"]}))
	if upd["status"] != "won" {
		t.Errorf("update %v", upd)
	}
	act := must(call(capability.CRMActivityLog, "run_1/a/1", map[string]any{"subject": "Won it", "deal_id": d.ID}))
	a, err := b.svc.GetActivity(ctx, tenant, act["activity_id"].(string))
	if err != nil || a.Kind != "note" || *a.DealID != d.ID {
		t.Errorf("activity %+v, %v", a, err)
	}
	if _, err := call(capability.CRMActivityLog, "run_1/a/2", map[string]any{"subject": "x", "deal_id": "del_nope"}); !errors.Is(err, errs.Invalid) {
		t.Errorf("an activity on a deal that does not exist: %v", err)
	}
	if _, err := call("crm.nope", "", map[string]any{}); !errors.Is(err, errs.Invalid) {
		t.Errorf("an unknown capability: %v", err)
	}
}

func TestSearchListsEachRecordOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Each matches "an" at several entries (first name, full name, e-mail).
	var want []string
	for i := range 7 {
		b.clock.Advance(time.Millisecond)
		c, err := b.svc.CreateContact(ctx, tenant, ContactIn{FirstName: fmt.Sprintf("Ann%d", i), LastName: ptr("Anders"),
			Email: ptr(fmt.Sprintf("ann%d@example.com", i))})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c.ID)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := b.svc.ListContacts(ctx, tenant, ContactFilter{Q: "an"}, store.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			got = append(got, c.ID)
		}
		if next == "" {
			break
		}
		cursor = next
		if pages > 10 {
			t.Fatal("too many pages")
		}
	}
	// "ann0" ... "ann6" sort before "anders", and each contact once.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("q=an (-want +got):\n%s", diff)
	}
}

// TestDeleteTooManyLinks: a company linked to more records than one
// transaction can unlink is a conflict, and nothing changes.
func TestDeleteTooManyLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	c, err := b.svc.CreateCompany(ctx, tenant, CompanyIn{Name: "Big"})
	if err != nil {
		t.Fatal(err)
	}
	for start := 0; start < 4000; start += 500 {
		err := b.st.Update(ctx, func(tx store.Txn) error {
			for range 500 {
				if _, err := b.svc.createDealTx(ctx, tx, tenant, DealIn{Title: "d", CompanyID: &c.ID}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.svc.DeleteCompany(ctx, tenant, c.ID); !errors.Is(err, errs.Conflict) {
		t.Fatalf("delete: %v, want a conflict", err)
	}
	if err := b.svc.CompanyExists(ctx, tenant, c.ID); err != nil {
		t.Errorf("the company is gone: %v", err)
	}
	page, _, err := b.svc.ListDeals(ctx, tenant, DealFilter{CompanyID: c.ID}, store.Page{Limit: 10})
	if err != nil || len(page) != 10 {
		t.Errorf("the company's deals: %d, %v", len(page), err)
	}
}

// TestViolationsAtFieldNames: the Go API locates violations at the input's
// field names (["stages", 0, "name"], an activity's ["body"]), not under
// "body" (the HTTP API's prefix).
func TestViolationsAtFieldNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	long, nope := string(make([]byte, MaxBodyLen+1)), "nope"
	for _, test := range []struct {
		name string
		call func() error
		want []string // "loc type"
	}{
		{"activity body", func() error {
			return errs.Validation(ActivityIn{Kind: "note", Subject: "s", Body: &long}.Validate()...)
		}, []string{"body string_too_long"}},
		{"pipeline stage", func() error {
			return errs.Validation(PipelineIn{Name: "p", Stages: []StageIn{{Name: ""}}}.Validate()...)
		}, []string{"stages.0.name string_too_short"}},
		{"stage", func() error { return errs.Validation(StageIn{Name: ""}.Validate()...) }, []string{"name string_too_short"}},
		{"deal refs", func() error {
			_, err := b.svc.CreateDeal(ctx, tenant, DealIn{Title: "d", CompanyID: &nope, StageID: &nope})
			return err
		}, []string{"stage_id value_error"}},
		{"contact company", func() error {
			_, err := b.svc.CreateContact(ctx, tenant, ContactIn{FirstName: "a", CompanyID: &nope})
			return err
		}, []string{"company_id value_error"}},
		{"activity deal", func() error {
			_, err := b.svc.LogActivity(ctx, tenant, ActivityIn{Kind: "note", Subject: "s", DealID: &nope})
			return err
		}, []string{"deal_id value_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			err := test.call()
			var got []string
			for _, v := range errs.Violations(err) {
				got = append(got, v.Where()+" "+v.Type)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("violations of %v (-want +got):\n%s", err, diff)
			}
		})
	}
}
