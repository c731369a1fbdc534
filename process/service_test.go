package process

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type testBundle struct {
	ctx   context.Context
	st    store.Store
	clock *clock.Fake
	acc   *access.Service
	svc   *Service
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	acc := access.New(access.Config{Store: st, Clock: clk, Logger: logger})
	svc := NewService(Config{Store: st, Clock: clk, Logger: logger, Access: accessQueue{acc}})
	acc.RegisterChangeKind(ChangeKindUpdate, svc.ApplyChangeTx, access.DecidedWith(access.PermProcessesManage))
	return &testBundle{ctx: context.Background(), st: st, clock: clk, acc: acc, svc: svc}
}

func manualIn(name string, steps ...Step) ProcessIn {
	if len(steps) == 0 {
		steps = []Step{{Key: "review", Type: StepHumanTask, Config: json.RawMessage(`{"title": "Review"}`)}}
	}
	return ProcessIn{Name: name, Trigger: Trigger{Type: TriggerManual}, Steps: steps}
}

func payStep(c Controls) Step {
	return Step{Key: "pay", Type: StepExecute, Capability: "payments.pay",
		Config: json.RawMessage(`{"args": {"amount_cents": "${trigger.data.amount_cents}"}, "amount_path": "trigger.data.amount_cents"}`), Controls: c}
}

func (b *testBundle) create(t *testing.T, tenant string, in ProcessIn) *Definition {
	t.Helper()
	b.clock.Advance(time.Millisecond) // ids sort by creation time
	d, err := b.svc.Create(b.ctx, tenant, "usr_alice", in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return d
}

func ptr[T any](v T) *T { return &v }

func TestCreateAndGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := manualIn("Supplier invoice")
	in.Description, in.Function = "Checks supplier invoices", "finance"
	in.Trigger = Trigger{Type: TriggerSchedule, Cron: "0 9 * * 1-5"}
	d := b.create(t, "t1", in)
	if !strings.HasPrefix(d.ID, "prc_") || d.Version != 1 || !d.Enabled || d.Archived || d.TemplateID != nil {
		t.Errorf("created = %+v", d)
	}
	if d.Trigger.Timezone != "UTC" {
		t.Errorf("schedule timezone = %q, want UTC by default", d.Trigger.Timezone)
	}
	if !d.CreatedAt.Equal(b.clock.Now()) || !d.UpdatedAt.Equal(d.CreatedAt) {
		t.Errorf("times = %v %v", d.CreatedAt, d.UpdatedAt)
	}
	got, err := b.svc.Get(b.ctx, "t1", d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("Get (-created +got):\n%s", diff)
	}
	// Another tenant's id is not found.
	if _, err := b.svc.Get(b.ctx, "t2", d.ID); !errors.Is(err, errs.NotFound) {
		t.Errorf("Get from another tenant: %v, want NotFound", err)
	}
	disabled := manualIn("Off")
	disabled.Enabled = ptr(false)
	disabled.TemplateID = "tpl_invoice"
	off := b.create(t, "t1", disabled)
	if off.Enabled || off.TemplateID == nil || *off.TemplateID != "tpl_invoice" {
		t.Errorf("created = %+v", off)
	}
}

func TestCreateValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := ProcessIn{Name: strings.Repeat("x", 201), Trigger: Trigger{Type: TriggerEvent},
		Steps: []Step{{Key: "a", Type: StepWait, Config: json.RawMessage(`{}`)}, {Key: "a", Type: StepExecute}}}
	_, err := b.svc.Create(b.ctx, "t1", "usr_alice", in)
	if !errors.Is(err, errs.Invalid) {
		t.Fatalf("Create: %v, want Invalid", err)
	}
	want := []string{"name:string_too_long", "trigger.event:missing", "steps.0.config.duration:missing",
		"steps.1.key:value_error", "steps.1.capability:missing"}
	if diff := cmp.Diff(want, where(errs.Violations(err))); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if _, err := b.svc.Create(b.ctx, "t1", "usr_alice", ProcessIn{Name: "no steps", Trigger: Trigger{Type: TriggerManual}}); !errors.Is(err, errs.Invalid) {
		t.Errorf("Create without steps: %v", err)
	}
	defs, _, err := b.svc.List(b.ctx, "t1", Query{}, store.Page{})
	if err != nil || len(defs) != 0 {
		t.Errorf("an invalid create stored something: %v %v", defs, err)
	}
}

func names(defs []*Definition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mk := func(name, function string, enabled bool) *Definition {
		in := manualIn(name)
		in.Function, in.Enabled = function, &enabled
		b.clock.Advance(time.Millisecond)
		return b.create(t, "t1", in)
	}
	mk("a", "finance", true)
	mk("b", "sales", true)
	c := mk("c", "finance", false)
	mk("d", "finance", true)
	b.create(t, "t2", manualIn("other tenant"))
	if err := b.svc.Archive(b.ctx, "t1", "usr_alice", c.ID); err != nil {
		t.Fatal(err)
	}
	mk("e", "sales", false)
	for _, test := range []struct {
		name string
		q    Query
		want []string
	}{
		{"all live, newest first", Query{}, []string{"e", "d", "b", "a"}},
		{"enabled", Query{Enabled: ptr(true)}, []string{"d", "b", "a"}},
		{"disabled", Query{Enabled: ptr(false)}, []string{"e"}},
		{"function", Query{Function: "finance"}, []string{"d", "a"}},
		{"function and enabled", Query{Function: "sales", Enabled: ptr(true)}, []string{"b"}},
		{"archived", Query{Archived: true}, []string{"c"}},
		{"archived of a function", Query{Archived: true, Function: "sales"}, nil},
	} {
		defs, next, err := b.svc.List(b.ctx, "t1", test.q, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(test.want, names(defs), cmpopts.EquateEmpty()); diff != "" || next != "" {
			t.Errorf("%s (-want +got):\n%s next=%q", test.name, diff, next)
		}
	}
	// Pages.
	var got []string
	cursor := ""
	for range 3 {
		defs, next, err := b.svc.List(b.ctx, "t1", Query{}, store.Page{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, names(defs)...)
		if cursor = next; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"e", "d", "b", "a"}, got); diff != "" {
		t.Errorf("paged (-want +got):\n%s", diff)
	}
}

func versionNumbers(vs []*Version) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = v.Version
	}
	return out
}

func TestVersioning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.create(t, "t1", manualIn("Invoice"))
	update := func(actor string, p ProcessPatch) *Definition {
		t.Helper()
		b.clock.Advance(time.Minute)
		got, ch, err := b.svc.Update(b.ctx, "t1", actor, d.ID, p)
		if err != nil || ch != nil {
			t.Fatalf("Update: %v %v", ch, err)
		}
		return got
	}

	// Name, description, function and enabled keep the version.
	got := update("usr_bob", ProcessPatch{Name: ptr("Invoice check"), Description: ptr("d"), Function: ptr("finance"), Enabled: ptr(false)})
	if got.Version != 1 || got.Name != "Invoice check" || got.Enabled || got.Function != "finance" {
		t.Errorf("after a name edit = %+v, want version 1", got)
	}
	if !got.UpdatedAt.After(got.CreatedAt) {
		t.Errorf("updated_at not moved: %v", got.UpdatedAt)
	}

	// Steps make version 2.
	newSteps := []Step{{Key: "review", Type: StepHumanTask, Config: json.RawMessage(`{"title": "Review again"}`)}}
	got = update("usr_bob", ProcessPatch{Steps: newSteps})
	if got.Version != 2 {
		t.Errorf("after a steps edit: version %d, want 2", got.Version)
	}
	// The same steps again change nothing.
	same := update("usr_carol", ProcessPatch{Steps: newSteps})
	if same.Version != 2 || !same.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("identical steps: version %d updated %v", same.Version, same.UpdatedAt)
	}
	// The trigger makes version 3.
	got = update("usr_carol", ProcessPatch{Trigger: &Trigger{Type: TriggerEvent, Event: "docs.document.validated"}})
	if got.Version != 3 {
		t.Errorf("after a trigger edit: version %d, want 3", got.Version)
	}
	// Description cleared.
	got = update("usr_carol", ProcessPatch{Description: ptr("")})
	if got.Description != "" || got.Version != 3 {
		t.Errorf("after clearing description = %+v", got)
	}

	vs, next, err := b.svc.Versions(b.ctx, "t1", d.ID, store.Page{})
	if err != nil || next != "" {
		t.Fatal(err, next)
	}
	if diff := cmp.Diff([]int{1, 2, 3}, versionNumbers(vs)); diff != "" {
		t.Errorf("versions, oldest first (-want +got):\n%s", diff)
	}
	wantBy := []string{"usr_alice", "usr_bob", "usr_carol"}
	for i, v := range vs {
		if v.CreatedBy != wantBy[i] {
			t.Errorf("version %d created by %s, want %s", v.Version, v.CreatedBy, wantBy[i])
		}
	}
	if string(vs[0].Steps[0].Config) != `{"title": "Review"}` && string(vs[0].Steps[0].Config) != `{"title":"Review"}` {
		t.Errorf("version 1 keeps its steps: %s", vs[0].Steps[0].Config)
	}
	if vs[1].Trigger.Type != TriggerManual || vs[2].Trigger.Type != TriggerEvent {
		t.Errorf("version triggers: %+v %+v", vs[1].Trigger, vs[2].Trigger)
	}
	// Paged, oldest first.
	page, next, err := b.svc.Versions(b.ctx, "t1", d.ID, store.Page{Limit: 2})
	if err != nil || next == "" || len(page) != 2 {
		t.Fatalf("page 1: %v %q %v", versionNumbers(page), next, err)
	}
	page, next, err = b.svc.Versions(b.ctx, "t1", d.ID, store.Page{Limit: 2, Cursor: next})
	if err != nil || next != "" || versionNumbers(page)[0] != 3 {
		t.Fatalf("page 2: %v %q %v", versionNumbers(page), next, err)
	}
	// One version, in a transaction.
	err = b.st.View(b.ctx, func(r store.Reader) error {
		v, err := b.svc.GetVersion(r, "t1", d.ID, 2)
		if err != nil {
			return err
		}
		if v.Version != 2 || v.Steps[0].Key != "review" {
			t.Errorf("GetVersion = %+v", v)
		}
		if _, err := b.svc.GetVersion(r, "t1", d.ID, 4); !errors.Is(err, errs.NotFound) {
			t.Errorf("GetVersion(4): %v", err)
		}
		if _, err := b.svc.GetVersion(r, "t2", d.ID, 1); !errors.Is(err, errs.NotFound) {
			t.Errorf("GetVersion of another tenant: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.svc.Versions(b.ctx, "t2", d.ID, store.Page{}); !errors.Is(err, errs.NotFound) {
		t.Errorf("Versions of another tenant: %v", err)
	}
	// Every change is audited.
	var entries []*audit.Entry
	err = b.st.View(b.ctx, func(r store.Reader) error {
		var err error
		entries, _, err = audit.List(r, "t1", audit.Query{Entity: "process"}, store.Page{Limit: 100})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action+" by "+e.Actor)
	}
	wantActions := []string{"process.update by usr_carol", "process.update by usr_carol", "process.update by usr_bob",
		"process.update by usr_bob", "process.create by usr_alice"}
	if diff := cmp.Diff(wantActions, actions); diff != "" {
		t.Errorf("audit, newest first (-want +got):\n%s", diff)
	}
}

func TestUpdateErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.create(t, "t1", manualIn("Invoice"))
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Name: ptr("")}); !errors.Is(err, errs.Invalid) {
		t.Errorf("empty name: %v", err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Steps: []Step{}}); !errors.Is(err, errs.Invalid) {
		t.Errorf("empty steps: %v", err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t2", "usr_alice", d.ID, ProcessPatch{Name: ptr("x")}); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant: %v", err)
	}
	if err := b.svc.Archive(b.ctx, "t1", "usr_alice", d.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Name: ptr("x")}); !errors.Is(err, errs.Conflict) {
		t.Errorf("archived: %v, want Conflict", err)
	}
}

// TestLoadSeesEveryChange checks that Load, which shares decoded
// definitions, answers with the stored state after each change, and never
// another tenant's record.
func TestLoadSeesEveryChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.create(t, "t1", manualIn("Chase"))
	load := func(tenant string) (*Definition, error) {
		var def *Definition
		err := b.st.View(b.ctx, func(r store.Reader) error {
			var err error
			def, err = b.svc.Load(r, tenant, d.ID)
			return err
		})
		return def, err
	}
	first, err := load("t1")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := load("t1"); again != first {
		t.Errorf("unchanged bytes decoded again")
	}
	if _, err := load("t2"); !errors.Is(err, errs.NotFound) {
		t.Errorf("load from another tenant: %v", err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Name: ptr("Chase harder")}); err != nil {
		t.Fatal(err)
	}
	got, err := load("t1")
	if err != nil || got.Name != "Chase harder" || first.Name != "Chase" {
		t.Errorf("after rename: %+v %v (first %q)", got, err, first.Name)
	}
	if err := b.svc.Archive(b.ctx, "t1", "usr_alice", d.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := load("t1"); err != nil || !got.Archived {
		t.Errorf("after archive: %+v %v", got, err)
	}
}

func TestArchive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := manualIn("On invoices")
	in.Trigger = Trigger{Type: TriggerEvent, Event: "docs.document.validated"}
	d := b.create(t, "t1", in)
	if err := b.svc.Archive(b.ctx, "t2", "usr_alice", d.ID); !errors.Is(err, errs.NotFound) {
		t.Errorf("archive from another tenant: %v", err)
	}
	if err := b.svc.Archive(b.ctx, "t1", "usr_alice", d.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Archive(b.ctx, "t1", "usr_alice", d.ID); !errors.Is(err, errs.NotFound) {
		t.Errorf("second archive: %v, want NotFound", err)
	}
	got, err := b.svc.Get(b.ctx, "t1", d.ID)
	if err != nil || !got.Archived || got.Version != 1 {
		t.Errorf("archived process = %+v, %v", got, err)
	}
	if vs, _, err := b.svc.Versions(b.ctx, "t1", d.ID, store.Page{}); err != nil || len(vs) != 1 {
		t.Errorf("versions of an archived process: %v %v", vs, err)
	}
	err = b.st.View(b.ctx, func(r store.Reader) error {
		defs, err := b.svc.ByEvent(r, "t1", "docs.document.validated")
		if len(defs) != 0 {
			t.Errorf("an archived process still listens: %v", names(defs))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestByEventAndNeeded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := func(name, event string, steps ...Step) *Definition {
		in := manualIn(name, steps...)
		in.Trigger = Trigger{Type: TriggerEvent, Event: event, Filter: json.RawMessage(`{"amount_cents": {"gte": 100}}`)}
		return b.create(t, "t1", in)
	}
	notify := Step{Key: "notify", Type: StepFollowUp, Config: json.RawMessage(`{"to": "a@acme.test", "subject": "s", "body": "b"}`)}
	a := ev("a", "docs.document.validated", payStep(Controls{}))
	ev("b", "docs.document.validated", notify)
	c := ev("c", "crm.deal.won")
	b.create(t, "t2", manualIn("elsewhere"))
	other := manualIn("t2 listener")
	other.Trigger = Trigger{Type: TriggerEvent, Event: "docs.document.validated"}
	b.create(t, "t2", other)
	byEvent := func(event string) []string {
		var out []string
		err := b.st.View(b.ctx, func(r store.Reader) error {
			defs, err := b.svc.ByEvent(r, "t1", event)
			out = names(defs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a", "b"}, byEvent("docs.document.validated")); diff != "" {
		t.Errorf("ByEvent (-want +got):\n%s", diff)
	}
	needed, err := b.svc.Needed(b.ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"email.send", "payments.pay"}, needed); diff != "" {
		t.Errorf("Needed (-want +got):\n%s", diff)
	}
	// Disabling a process drops it from both; moving c to another event
	// moves its index entry.
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", a.ID, ProcessPatch{Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", c.ID,
		ProcessPatch{Trigger: &Trigger{Type: TriggerEvent, Event: "docs.document.validated"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "c"}, byEvent("docs.document.validated")); diff != "" {
		t.Errorf("ByEvent after the edits (-want +got):\n%s", diff)
	}
	if got := byEvent("crm.deal.won"); len(got) != 0 {
		t.Errorf("stale event index: %v", got)
	}
	needed, err = b.svc.Needed(b.ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"email.send"}, needed); diff != "" {
		t.Errorf("Needed after disabling (-want +got):\n%s", diff)
	}
}

func TestOnChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type call struct {
		tenant   string
		old, new string // "name@version" or ""
		archived bool
	}
	var calls []call
	desc := func(d *Definition) string {
		if d == nil {
			return ""
		}
		return d.Name + "@" + string(rune('0'+d.Version))
	}
	b.svc.OnChange(func(tx store.Txn, tenant string, old, new *Definition) error {
		calls = append(calls, call{tenant, desc(old), desc(new), new.Archived})
		if new.Name == "refused" {
			return errors.New("hook refuses")
		}
		return nil
	})
	d := b.create(t, "t1", manualIn("p"))
	if _, _, err := b.svc.Update(b.ctx, "t1", "u", d.ID, ProcessPatch{Name: ptr("q")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "u", d.ID, ProcessPatch{Name: ptr("q")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "u", d.ID, ProcessPatch{Name: ptr("refused")}); err == nil {
		t.Error("a hook error did not abort the update")
	}
	if err := b.svc.Archive(b.ctx, "t1", "u", d.ID); err != nil {
		t.Fatal(err)
	}
	want := []call{
		{"t1", "", "p@1", false},
		{"t1", "p@1", "q@1", false},
		{"t1", "q@1", "refused@1", false},
		{"t1", "q@1", "q@1", true},
	}
	if diff := cmp.Diff(want, calls, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	got, _ := b.svc.Get(b.ctx, "t1", d.ID)
	if got.Name != "q" {
		t.Errorf("the refused update was stored: %q", got.Name)
	}
}

// fourEyes opens a workspace with four-eyes on and returns its admin and a
// second admin.
func (b *testBundle) fourEyes(t *testing.T, tenant string) (owner, second *access.Principal) {
	t.Helper()
	_, m, err := b.acc.CreateWorkspace(b.ctx, access.NewWorkspace{ID: tenant, Name: "Acme", OwnerEmail: "owner@acme.test", FourEyes: true})
	if err != nil {
		t.Fatal(err)
	}
	admin := func(user string) *access.Principal {
		return &access.Principal{Tenant: tenant, UserID: user, Roles: []string{access.RoleAdmin},
			Perms: access.PermissionsOf([]string{access.RoleAdmin})}
	}
	return admin(m.UserID), admin("usr_second")
}

func TestFourEyesWidening(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, second := b.fourEyes(t, "t1")
	d, err := b.svc.Create(b.ctx, "t1", owner.Actor(), manualIn("Pay", payStep(Controls{RequireApproval: true, AmountCapCents: ptr[int64](1000)})))
	if err != nil {
		t.Fatal(err)
	}

	// Tightening applies at once.
	got, ch, err := b.svc.Update(b.ctx, "t1", owner.Actor(), d.ID,
		ProcessPatch{Steps: []Step{payStep(Controls{RequireApproval: true, AmountCapCents: ptr[int64](500)})}})
	if err != nil || ch != nil || got.Version != 2 {
		t.Fatalf("tightening: %+v %+v %v", got, ch, err)
	}

	// Widening waits for a second person.
	widened := []Step{payStep(Controls{AmountCapCents: ptr[int64](5000)})}
	got, ch, err = b.svc.Update(b.ctx, "t1", owner.Actor(), d.ID, ProcessPatch{Name: ptr("Pay faster"), Steps: widened})
	if err != nil || got != nil || ch == nil {
		t.Fatalf("widening: %+v %+v %v", got, ch, err)
	}
	if queued, err := b.acc.Change(b.ctx, "t1", ch.ID); err != nil || queued.Kind != ChangeKindUpdate || queued.Status != access.ChangePending {
		t.Errorf("queued change = %+v, %v", queued, err)
	}
	if !strings.Contains(ch.Summary, "no longer requires approval") ||
		!strings.Contains(ch.Summary, "raised from 500 to 5000") {
		t.Errorf("change = %+v", ch)
	}
	cur, _ := b.svc.Get(b.ctx, "t1", d.ID)
	if cur.Version != 2 || cur.Name != "Pay" {
		t.Errorf("the widening applied before approval: %+v", cur)
	}
	pending, _, err := b.acc.Changes(b.ctx, "t1", access.ChangePending, store.Page{})
	if err != nil || len(pending) != 1 || pending[0].ID != ch.ID {
		t.Fatalf("pending changes: %v %v", pending, err)
	}

	// The requester cannot approve its own change.
	if _, err := b.acc.Approve(b.ctx, owner, ch.ID, ""); !errors.Is(err, errs.Forbidden) {
		t.Errorf("self-approval: %v, want Forbidden", err)
	}
	// A second admin can.
	b.clock.Advance(time.Hour)
	if _, err := b.acc.Approve(b.ctx, second, ch.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	cur, _ = b.svc.Get(b.ctx, "t1", d.ID)
	if cur.Version != 3 || cur.Name != "Pay faster" || cur.Steps[0].Controls.RequireApproval {
		t.Errorf("after approval = %+v", cur)
	}
	err = b.st.View(b.ctx, func(r store.Reader) error {
		v, err := b.svc.GetVersion(r, "t1", d.ID, 3)
		if err == nil && v.CreatedBy != owner.Actor() {
			t.Errorf("version 3 created by %s, want the requester %s", v.CreatedBy, owner.Actor())
		}
		entries, _, err := audit.List(r, "t1", audit.Query{Entity: "process"}, store.Page{Limit: 1})
		if err == nil && (entries[0].Actor != second.Actor() || !strings.Contains(entries[0].Reason, "approved by "+second.Actor())) {
			t.Errorf("audit of the applied change = %+v", entries[0])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFourEyesStaleChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, second := b.fourEyes(t, "t1")
	d, err := b.svc.Create(b.ctx, "t1", owner.Actor(), manualIn("Pay", payStep(Controls{RequireApproval: true})))
	if err != nil {
		t.Fatal(err)
	}
	_, ch, err := b.svc.Update(b.ctx, "t1", owner.Actor(), d.ID, ProcessPatch{Steps: []Step{payStep(Controls{})}})
	if err != nil || ch == nil {
		t.Fatalf("widening: %v %v", ch, err)
	}
	// Meanwhile the process moves to version 2.
	other := payStep(Controls{RequireApproval: true, AllowedTools: []string{"payments.pay"}})
	if _, _, err := b.svc.Update(b.ctx, "t1", owner.Actor(), d.ID, ProcessPatch{Steps: []Step{other}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.acc.Approve(b.ctx, second, ch.ID, ""); !errors.Is(err, errs.Conflict) {
		t.Errorf("approving a stale change: %v, want Conflict", err)
	}
	cur, _ := b.svc.Get(b.ctx, "t1", d.ID)
	if cur.Version != 2 || !cur.Steps[0].Controls.RequireApproval {
		t.Errorf("the stale change applied: %+v", cur)
	}
}

func TestWideningWithoutFourEyes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// No workspace record: four-eyes is off.
	d := b.create(t, "t1", manualIn("Pay", payStep(Controls{RequireApproval: true})))
	b.clock.Advance(time.Second)
	got, ch, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Steps: []Step{payStep(Controls{})}})
	if err != nil || ch != nil || got.Version != 2 {
		t.Fatalf("widening without four-eyes: %+v %+v %v", got, ch, err)
	}
	err = b.st.View(b.ctx, func(r store.Reader) error {
		entries, _, err := audit.List(r, "t1", audit.Query{Entity: "process"}, store.Page{Limit: 1})
		if err == nil && entries[0].Reason != "step pay no longer requires approval" {
			t.Errorf("audit reason = %q", entries[0].Reason)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// accessQueue is the access service as the change queue (bas wires the
// same through internal/wiring, which this package's tests cannot import).
type accessQueue struct{ a *access.Service }

func (q accessQueue) FourEyes(ctx context.Context, tenant string) (bool, error) {
	return q.a.FourEyes(ctx, tenant)
}

func (q accessQueue) ProposeChangeTx(tx store.Txn, tenant, kind, requester, summary string, payload any) (string, error) {
	c, err := q.a.ProposeChangeTx(tx, tenant, kind, requester, summary, payload)
	if err != nil {
		return "", err
	}
	return c.ID, nil
}

// TestListens reports a tenant whose enabled processes start on an event,
// from the event trigger index: not another tenant's, nor another event's,
// nor once the process is disabled.
func TestListens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := manualIn("On weather")
	in.Trigger = Trigger{Type: TriggerEvent, Event: "weather.changed"}
	d := b.create(t, "t1", in)
	listens := func(tenant, event string) bool {
		t.Helper()
		ok, err := b.svc.Listens(b.ctx, tenant, event)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	type answer struct {
		Tenant, Event string
		Listens       bool
	}
	var got []answer
	for _, c := range []struct{ tenant, event string }{{"t1", "weather.changed"}, {"t2", "weather.changed"}, {"t1", "weather.asked"}} {
		got = append(got, answer{c.tenant, c.event, listens(c.tenant, c.event)})
	}
	want := []answer{{"t1", "weather.changed", true}, {"t2", "weather.changed", false}, {"t1", "weather.asked", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Listens (-want +got):\n%s", diff)
	}
	if _, _, err := b.svc.Update(b.ctx, "t1", "usr_alice", d.ID, ProcessPatch{Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if listens("t1", "weather.changed") {
		t.Error("a disabled process still listens")
	}
}
