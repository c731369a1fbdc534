package usecases

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

var start = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// smallCatalog is a fixed catalog for fit and scope:
//
//	e_retail   retail                       sales       -> industry (for a retail workspace)
//	e_all      every business               finance     -> every_business
//	e_common   three industries (no retail) hr          -> common
//	e_other    manufacturing only           finance     -> other
//	e_two      two industries (no retail)   sales, hr   -> other
const smallTaxonomy = `{
  "industries": [{"tag": "industry:retail", "label": "Retail"}, {"tag": "industry:manufacturing", "label": "Manufacturing"},
    {"tag": "industry:healthcare", "label": "Healthcare"}, {"tag": "industry:education", "label": "Education"}],
  "departments": [{"tag": "department:finance", "label": "Finance"}, {"tag": "department:sales", "label": "Sales"}, {"tag": "department:hr", "label": "HR"}],
  "sizes": [{"tag": "size:1-10", "label": "1 to 10"}],
  "regulations": [{"tag": "regulation:gdpr", "label": "GDPR"}],
  "protected_data": [{"tag": "data:personal", "label": "Personal"}]
}`

func entryJSON(id string, industries, departments []string, risk string, template string) string {
	tpl := "null"
	if template != "" {
		tpl = `"` + template + `"`
	}
	q := func(l []string) string { b, _ := json.Marshal(l); return string(b) }
	return fmt.Sprintf(`{"id": %q, "name": %q, "summary": "s", "industries": %s, "departments": %s, "chain": ["intake", "human_task"],
		"protected_data": ["data:personal"], "regulations": [], "systems": ["system:xero"], "risk": %q, "guide": "g", "template_id": %s}`,
		id, id, q(industries), q(departments), risk, tpl)
}

func smallFiles() map[string][]byte {
	entries := []string{
		entryJSON("e_retail", []string{"industry:retail"}, []string{"department:sales"}, "low", "tpl_runs"),
		entryJSON("e_all", []string{EveryIndustry}, []string{"department:finance"}, "medium", "tpl_gap"),
		entryJSON("e_common", []string{"industry:manufacturing", "industry:healthcare", "industry:education"}, []string{"department:hr"}, "high", "tpl_coming"),
		entryJSON("e_other", []string{"industry:manufacturing"}, []string{"department:finance"}, "low", ""),
		entryJSON("e_two", []string{"industry:manufacturing", "industry:healthcare"}, []string{"department:sales", "department:hr"}, "medium", ""),
	}
	return map[string][]byte{"taxonomy.json": []byte(smallTaxonomy), "a.json": []byte("[" + strings.Join(entries, ",") + "]")}
}

// resolver is an in-memory Resolver: the capabilities listed resolve.
type resolver struct {
	mu sync.Mutex
	ok map[string]bool
}

func (r *resolver) Resolve(_ context.Context, _, id string) (capability.Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok[id] {
		return nil, nil
	}
	return nil, errs.Unavailablef("no provider is bound to %s", id)
}

// sink records events.
type sink struct {
	mu     sync.Mutex
	events []map[string]any
	kicks  int
}

func (s *sink) Emit(_ store.Txn, tenant, name string, data any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, _ := json.Marshal(data)
	var m map[string]any
	_ = json.Unmarshal(d, &m)
	m["_name"], m["_tenant"] = name, tenant
	s.events = append(s.events, m)
	return nil
}

func (s *sink) Kick() { s.mu.Lock(); s.kicks++; s.mu.Unlock() }

func (s *sink) all() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

type bundle struct {
	ctx    context.Context
	st     store.Store
	svc    *Service
	people *access.Service
	res    *resolver
	sink   *sink
	tenant string
	owner  string // the workspace owner's user id
}

func setup(t testing.TB, files map[string][]byte) *bundle {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(start)
	people := access.New(access.Config{Store: st, Clock: clk, Logger: quiet})
	ws, owner, err := people.CreateWorkspace(context.Background(), access.NewWorkspace{ID: "ten_a", Name: "A", OwnerEmail: "owner@a.example"})
	if err != nil {
		t.Fatal(err)
	}
	var cat *Catalog
	if files != nil {
		if cat, err = Parse(files); err != nil {
			t.Fatal(err)
		}
	}
	b := &bundle{ctx: context.Background(), st: st, people: people, res: &resolver{ok: map[string]bool{}}, sink: &sink{},
		tenant: ws.ID, owner: owner.UserID}
	tpls := map[string]TemplateInfo{
		"tpl_runs":   {Requires: []string{"email.send"}, Available: true},
		"tpl_gap":    {Requires: []string{"email.send", "crm.deal.create"}, Available: true},
		"tpl_coming": {Requires: nil, Available: false},
	}
	b.svc, err = New(Config{Store: st, Clock: clk, Logger: quiet, People: people, Resolver: b.res, Events: b.sink, Catalog: cat,
		Template: func(id string) (TemplateInfo, bool) {
			if files == nil {
				return TemplateInfo{Available: true}, true
			}
			ti, ok := tpls[id]
			return ti, ok
		}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func entryIDs(list []EntryOut) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, e.ID)
	}
	return out
}

func violations(err error) []string {
	var out []string
	for _, v := range errs.Violations(err) {
		out = append(out, v.Where()+":"+v.Type)
	}
	return out
}

func TestFitAndScope(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	if _, err := b.svc.SetProfile(b.ctx, b.tenant, "usr_x", ProfileIn{Industries: []string{"industry:retail"}}); err != nil {
		t.Fatal(err)
	}
	me := Viewer{Tenant: b.tenant, Departments: []string{"department:finance"}}
	all, err := b.svc.List(b.ctx, me, Query{Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	fits := map[string]string{}
	forMe := map[string]bool{}
	for _, e := range all {
		fits[e.ID], forMe[e.ID] = e.Fit, e.ForMe
	}
	if diff := cmp.Diff(map[string]string{"e_retail": FitIndustry, "e_all": FitEveryBusiness, "e_common": FitCommon,
		"e_other": FitOther, "e_two": FitOther}, fits); diff != "" {
		t.Errorf("fit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"e_all": true, "e_other": true, "e_retail": false, "e_common": false, "e_two": false}, forMe); diff != "" {
		t.Errorf("for_me (-want +got):\n%s", diff)
	}
	for _, test := range []struct {
		name string
		v    Viewer
		q    Query
		want []string
	}{
		{"applicable by default", me, Query{}, []string{"e_all", "e_common", "e_retail"}},
		{"applicable", me, Query{Scope: ScopeApplicable}, []string{"e_all", "e_common", "e_retail"}},
		{"mine", me, Query{Scope: ScopeMine}, []string{"e_all", "e_other"}},
		{"mine with a department", me, Query{Scope: ScopeMine, Department: "department:hr"}, []string{"e_common", "e_two"}},
		{"mine without departments", Viewer{Tenant: b.tenant}, Query{Scope: ScopeMine}, []string{}},
		{"all", me, Query{Scope: ScopeAll}, []string{"e_all", "e_common", "e_other", "e_retail", "e_two"}},
		{"applicable in a department", me, Query{Department: "department:sales"}, []string{"e_retail"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			got, err := b.svc.List(b.ctx, test.v, test.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, entryIDs(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A workspace without industries: only every_business and common fit.
	if _, err := b.svc.SetProfile(b.ctx, b.tenant, "usr_x", ProfileIn{}); err != nil {
		t.Fatal(err)
	}
	got, _ := b.svc.List(b.ctx, me, Query{})
	if diff := cmp.Diff([]string{"e_all", "e_common"}, entryIDs(got)); diff != "" {
		t.Errorf("no industries (-want +got):\n%s", diff)
	}
	// A bad scope or department is a 422 naming both.
	_, err = b.svc.List(b.ctx, me, Query{Scope: "everything", Department: "finance"})
	if diff := cmp.Diff([]string{"query.scope:enum", "query.department:value_error"}, violations(err)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if _, err := b.svc.List(b.ctx, me, Query{Department: "department:legal"}); !errors.Is(err, errs.Invalid) {
		t.Errorf("unknown department: %v", err)
	}
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	v := Viewer{Tenant: b.tenant}
	readiness := func() map[string]Readiness {
		list, err := b.svc.List(b.ctx, v, Query{Scope: ScopeAll})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Readiness{}
		for _, e := range list {
			out[e.ID] = e.Readiness
		}
		return out
	}
	want := map[string]Readiness{
		"e_retail": {Runs: false, Template: true, Guide: true},
		"e_all":    {Runs: false, Template: true, Guide: true},
		"e_common": {Runs: false, Template: false, Guide: true}, // its template is coming
		"e_other":  {Runs: false, Template: false, Guide: true},
		"e_two":    {Runs: false, Template: false, Guide: true},
	}
	if diff := cmp.Diff(want, readiness()); diff != "" {
		t.Errorf("nothing resolves (-want +got):\n%s", diff)
	}
	b.res.mu.Lock()
	b.res.ok["email.send"] = true
	b.res.mu.Unlock()
	want["e_retail"] = Readiness{Runs: true, Template: true, Guide: true}
	if diff := cmp.Diff(want, readiness()); diff != "" {
		t.Errorf("email.send resolves (-want +got):\n%s", diff)
	}
	b.res.mu.Lock()
	b.res.ok["crm.deal.create"] = true
	b.res.mu.Unlock()
	want["e_all"] = Readiness{Runs: true, Template: true, Guide: true}
	if diff := cmp.Diff(want, readiness()); diff != "" {
		t.Errorf("both resolve (-want +got):\n%s", diff)
	}
}

func auditOf(t *testing.T, b *bundle) []*audit.Entry {
	t.Helper()
	var out []*audit.Entry
	if err := b.st.View(b.ctx, func(r store.Reader) error {
		var err error
		out, _, err = audit.List(r, b.tenant, audit.Query{Entity: "use_case_adoption"}, store.Page{Limit: 200})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestAdoption(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	long := strings.Repeat("é", MaxNotes)
	depts := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "department:finance"
		}
		return out
	}
	// Bounds and checks: each refused change writes nothing.
	for _, test := range []struct {
		name string
		in   AdoptionIn
		want []string
	}{
		{"notes one too long", AdoptionIn{Notes: ptr(long + "x")}, []string{"notes:string_too_long"}},
		{"15 departments", AdoptionIn{Departments: depts(15)}, []string{"departments:too_long"}},
		{"unknown status", AdoptionIn{Status: ptr("done")}, []string{"status:enum"}},
		{"owner and clear_owner", AdoptionIn{OwnerUserID: ptr(b.owner), ClearOwner: true}, []string{"clear_owner:value_error"}},
		{"unknown department", AdoptionIn{Departments: []string{"department:finance", "legal"}}, []string{"departments.1:value_error"}},
		{"owner no member", AdoptionIn{OwnerUserID: ptr("usr_nobody")}, []string{"owner_user_id:value_error"}},
		{"looser rating", AdoptionIn{Risk: ptr("low")}, []string{"risk:value_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_x", "e_all", test.in)
			if diff := cmp.Diff(test.want, violations(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(auditOf(t, b)); n != 0 || len(b.sink.all()) != 0 {
		t.Fatalf("refused changes wrote %d audit entries and %d events", n, len(b.sink.all()))
	}
	// Just inside the bounds: adopted (status interested by default),
	// audited with before null, one event in the transaction.
	a, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_x", "e_all", AdoptionIn{Notes: ptr(long), Departments: depts(14),
		OwnerUserID: ptr(b.owner)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != StatusInterested || *a.OwnerUserID != b.owner || len(a.Departments) != 1 {
		t.Errorf("adoption %+v", a)
	}
	// The same change again changes nothing and writes nothing.
	if _, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_y", "e_all", AdoptionIn{Notes: ptr(long)}); err != nil {
		t.Fatal(err)
	}
	// Status and owner cleared.
	a, err = b.svc.SetAdoption(b.ctx, b.tenant, "usr_y", "e_all", AdoptionIn{Status: ptr(StatusPiloting), ClearOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != StatusPiloting || a.OwnerUserID != nil || a.UpdatedBy != "usr_y" {
		t.Errorf("adoption %+v", a)
	}
	entries := auditOf(t, b)
	if len(entries) != 2 {
		t.Fatalf("%d audit entries, want 2", len(entries))
	}
	newest, first := entries[0], entries[1]
	if first.Action != "usecase.adoption.create" || string(first.Before) != "null" || first.Actor != "usr_x" || first.EntityID != "e_all" {
		t.Errorf("first entry %+v", first)
	}
	var before, after Adoption
	_ = json.Unmarshal(newest.Before, &before)
	_ = json.Unmarshal(newest.After, &after)
	if newest.Action != "usecase.adoption.update" || before.Status != StatusInterested || after.Status != StatusPiloting ||
		before.OwnerUserID == nil || after.OwnerUserID != nil {
		t.Errorf("update entry %s: before %+v after %+v", newest.Action, before, after)
	}
	evs := b.sink.all()
	if len(evs) != 2 || evs[1]["_name"] != EventAdoptionChanged || evs[1]["status"] != StatusPiloting ||
		evs[1]["previous_status"] != StatusInterested || evs[0]["previous_status"] != nil || evs[1]["use_case_id"] != "e_all" {
		t.Errorf("events %+v", evs)
	}
	// Unknown use case: 404.
	if _, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_x", "nope", AdoptionIn{}); !errors.Is(err, errs.NotFound) {
		t.Errorf("unknown use case: %v", err)
	}
}

// Rule 6: a rating can make the catalog's tier stricter, never looser.
func TestRatingStricterNeverLooser(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	v := Viewer{Tenant: b.tenant}
	risk := func(id string) (string, string) {
		e, err := b.svc.Get(b.ctx, v, id)
		if err != nil {
			t.Fatal(err)
		}
		return e.Risk, e.RiskTier
	}
	for _, test := range []struct {
		id, rating string
		ok         bool
	}{
		{"e_all", "high", true},      // medium tier: stricter
		{"e_all", "medium", true},    // the same
		{"e_all", "low", false},      // looser
		{"e_common", "high", true},   // high tier
		{"e_common", "low", false},   // looser
		{"e_retail", "low", true},    // low tier
		{"e_retail", "medium", true}, // stricter
	} {
		t.Run(test.id+" "+test.rating, func(t *testing.T) {
			_, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_x", test.id, AdoptionIn{Risk: ptr(test.rating)})
			if test.ok != (err == nil) {
				t.Fatalf("rating %s of %s: %v", test.rating, test.id, err)
			}
			if test.ok {
				if got, _ := risk(test.id); got != test.rating {
					t.Errorf("risk %s, want %s", got, test.rating)
				}
			}
		})
	}
	// Clearing the rating falls back to the tier.
	if _, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_x", "e_all", AdoptionIn{ClearRisk: true}); err != nil {
		t.Fatal(err)
	}
	if got, tier := risk("e_all"); got != "medium" || tier != "medium" {
		t.Errorf("after clear_risk: %s (tier %s)", got, tier)
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	v := Viewer{Tenant: b.tenant}
	for id, status := range map[string]string{"e_all": StatusLive, "e_retail": StatusPiloting, "e_other": StatusDeclined} {
		if _, err := b.svc.SetAdoption(b.ctx, b.tenant, "usr_x", id, AdoptionIn{Status: ptr(status)}); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := b.svc.Register(b.ctx, v, "")
	if err != nil {
		t.Fatal(err)
	}
	if reg.Counts.Active != 2 || reg.Counts.Total != 3 || reg.Counts.ByStatus[StatusDeclined] != 1 || len(reg.UseCases) != 3 {
		t.Errorf("register counts %+v, %d entries", reg.Counts, len(reg.UseCases))
	}
	for _, e := range reg.UseCases {
		if e.Adoption == nil {
			t.Errorf("%s without adoption", e.ID)
		}
	}
	live, err := b.svc.Register(b.ctx, v, StatusLive)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e_all"}, entryIDs(live.UseCases)); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
	if _, err := b.svc.Register(b.ctx, v, "finished"); !errors.Is(err, errs.Invalid) {
		t.Errorf("bad status: %v", err)
	}
	// Another tenant's register is empty, and its entries carry no adoption.
	if _, _, err := b.people.CreateWorkspace(b.ctx, access.NewWorkspace{ID: "ten_b", Name: "B", OwnerEmail: "owner@b.example"}); err != nil {
		t.Fatal(err)
	}
	other, err := b.svc.Register(b.ctx, Viewer{Tenant: "ten_b"}, "")
	if err != nil || len(other.UseCases) != 0 || other.Counts.Total != 0 {
		t.Errorf("another tenant's register: %+v, %v", other, err)
	}
	if e, err := b.svc.Get(b.ctx, Viewer{Tenant: "ten_b"}, "e_all"); err != nil || e.Adoption != nil {
		t.Errorf("another tenant's entry: %+v, %v", e, err)
	}
}

func TestDecodeAdoption(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, body string
		want       []string
	}{
		{"empty", ``, nil},
		{"nulls are absent", `{"status": null, "owner_user_id": null, "risk": null, "departments": null, "notes": null}`, nil},
		{"bad types and enums", `{"status": "done", "risk": "extreme", "departments": "finance", "clear_owner": "yes", "notes": 5}`,
			[]string{"clear_owner:type_error", "departments:type_error", "notes:type_error", "risk:enum", "status:enum"}},
		{"15 departments", `{"departments": [` + strings.Repeat(`"department:finance",`, 14) + `"department:hr"]}`, []string{"departments:too_long"}},
		{"4001 characters", `{"notes": "` + strings.Repeat("a", 4001) + `"}`, []string{"notes:string_too_long"}},
		{"4000 characters", `{"notes": "` + strings.Repeat("a", 4000) + `"}`, nil},
		{"owner and clear_owner", `{"owner_user_id": "usr_a", "clear_owner": true, "risk": "high", "clear_risk": true}`,
			[]string{"clear_owner:value_error", "clear_risk:value_error"}},
		{"owner id of 81 characters", `{"owner_user_id": "` + strings.Repeat("u", 81) + `"}`, []string{"owner_user_id:string_too_long"}},
		{"owner id of 80 characters", `{"owner_user_id": "` + strings.Repeat("u", 80) + `"}`, nil},
		{"empty owner id", `{"owner_user_id": ""}`, []string{"owner_user_id:string_too_short"}},
		{"14 departments", `{"departments": [` + strings.Repeat(`"department:finance",`, 13) + `"department:hr"]}`, nil},
		{"not an object", `[1]`, []string{":type_error"}},
		{"malformed", `{"status": `, []string{":json_invalid"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := DecodeAdoption([]byte(test.body))
			got := violations(err)
			slices.Sort(got)
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeProfile(t *testing.T) {
	t.Parallel()
	list := func(tag string, n int) string {
		b, _ := json.Marshal(slices.Repeat([]string{tag}, n))
		return string(b)
	}
	for _, test := range []struct {
		name, body string
		want       []string
	}{
		{"empty", ``, nil},
		{"nulls", `{"industries": null, "size": null, "systems": null, "regulations": null}`, nil},
		{"just inside", `{"industries": ` + list("industry:retail", 20) + `, "systems": ` + list("system:xero", 60) +
			`, "regulations": ` + list("regulation:gdpr", 30) + `}`, nil},
		{"just outside", `{"industries": ` + list("industry:retail", 21) + `, "systems": ` + list("system:xero", 61) +
			`, "regulations": ` + list("regulation:gdpr", 31) + `}`,
			[]string{"industries:too_long", "regulations:too_long", "systems:too_long"}},
		{"types", `{"industries": "industry:retail", "size": 3}`, []string{"industries:type_error", "size:type_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := DecodeProfile([]byte(test.body))
			got := violations(err)
			slices.Sort(got)
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProfile(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	_, err := b.svc.SetProfile(b.ctx, b.tenant, "usr_x", ProfileIn{Industries: []string{"industry:retail", "retail"},
		Size: ptr("tiny"), Systems: []string{"system:nosuch"}, Regulations: []string{"regulation:gdpr", "gdpr"}})
	if diff := cmp.Diff([]string{"industries.1:value_error", "systems.0:value_error", "regulations.1:value_error",
		"size:value_error"}, violations(err)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	p, err := b.svc.SetProfile(b.ctx, b.tenant, "usr_x", ProfileIn{Industries: []string{"industry:retail", "industry:retail"},
		Size: ptr("size:1-10"), Systems: []string{"system:xero"}, Regulations: []string{"regulation:gdpr"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Profile{Industries: []string{"industry:retail"}, Size: ptr("size:1-10"), Systems: []string{"system:xero"}, Regulations: []string{"regulation:gdpr"}}
	got, err := b.svc.Profile(b.ctx, b.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("set (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

// The embedded catalog: at least 120 entries over 12 industries and 12
// departments, ids short lowercase with underscores, every tag in the
// taxonomy (Load checks), and templates named that exist (New checks;
// see the workspace's Open).
func TestEmbeddedCatalog(t *testing.T) {
	t.Parallel()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	entries := c.Entries()
	industries, departments := map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if !IDPattern.MatchString(e.ID) {
			t.Errorf("id %q", e.ID)
		}
		for _, i := range e.Industries {
			industries[i] = true
		}
		for _, d := range e.Departments {
			departments[d] = true
		}
	}
	delete(industries, EveryIndustry)
	if len(entries) < 120 || len(industries) < 12 || len(departments) < 12 {
		t.Errorf("%d entries, %d industries, %d departments", len(entries), len(industries), len(departments))
	}
	tax := c.Taxonomy()
	if len(tax.Systems) == 0 || len(tax.Industries) < 12 || len(tax.Departments) < 12 {
		t.Errorf("taxonomy %+v", tax)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, entry, want string
	}{
		{"bad id", entryJSON("Bad-Id", []string{"industry:retail"}, []string{"department:sales"}, "low", ""), "id must match"},
		{"unknown industry", entryJSON("x_ind", []string{"industry:mining"}, []string{"department:sales"}, "low", ""), `industries: "industry:mining"`},
		{"all beside another", entryJSON("x_all", []string{EveryIndustry, "industry:retail"}, []string{"department:sales"}, "low", ""), "stands alone"},
		{"no department", entryJSON("x_dep", []string{"industry:retail"}, []string{}, "low", ""), "departments is empty"},
		{"bad risk", entryJSON("x_risk", []string{"industry:retail"}, []string{"department:sales"}, "extreme", ""), `risk "extreme"`},
	} {
		t.Run(test.name, func(t *testing.T) {
			files := smallFiles()
			files["b.json"] = []byte("[" + test.entry + "]")
			_, err := Parse(files)
			if err == nil || !strings.Contains(err.Error(), test.want) {
				t.Errorf("error %v, want one with %q", err, test.want)
			}
		})
	}
	files := smallFiles()
	files["b.json"] = []byte("[" + entryJSON("e_all", []string{EveryIndustry}, []string{"department:sales"}, "low", "") + "]")
	if _, err := Parse(files); err == nil || !strings.Contains(err.Error(), `use-case id "e_all" is used twice`) {
		t.Errorf("duplicate id: %v", err)
	}
}

// New refuses a catalog whose entries name templates that do not exist.
func TestNewChecksTemplates(t *testing.T) {
	t.Parallel()
	b := setup(t, smallFiles())
	cat, err := Parse(smallFiles())
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Store: b.st, People: b.people, Resolver: b.res, Catalog: cat,
		Template: func(id string) (TemplateInfo, bool) { return TemplateInfo{}, id != "tpl_gap" }})
	if err == nil || !strings.Contains(err.Error(), "e_all names template tpl_gap") {
		t.Errorf("New: %v", err)
	}
}
