package decisions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

const tenant = "t1"

type bundle struct {
	st    store.Store
	clock *clock.Fake
	svc   *decisions.Service
}

func setup(t testing.TB, caller decisions.Caller) *bundle {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fc := clock.NewFake(time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC))
	return &bundle{st: st, clock: fc, svc: decisions.New(decisions.Config{Store: st, Clock: fc, Caller: caller})}
}

// violations renders the violations of err as "loc:type" strings.
func violations(err error) []string {
	var out []string
	for _, v := range errs.Violations(err) {
		out = append(out, v.Where()+":"+v.Type)
	}
	return out
}

func f64(f float64) *float64 { return &f }

// routeDecision decides where an invoice goes: it needs a vendor, and the
// output is a queue name.
func routeDecision() decisions.Decision {
	return decisions.Decision{
		Name:         "invoice-route",
		Description:  "Which queue an invoice goes to",
		InputSchema:  json.RawMessage(`{"type":"object","required":["vendor"],"properties":{"vendor":{"type":"string"},"amount":{"type":"number"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["queue"],"properties":{"queue":{"enum":["ap","review","legal"]}}}`),
	}
}

func TestDecisionValidate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 81)
	for _, test := range []struct {
		name string
		d    decisions.Decision
		want []string
	}{
		{"valid", decisions.Decision{Name: strings.Repeat("a", 80), Description: strings.Repeat("d", 2000)}, nil},
		{"empty name", decisions.Decision{Name: ""}, []string{"name:string_too_short"}},
		{"long name", decisions.Decision{Name: long}, []string{"name:string_too_long"}},
		{"bad name", decisions.Decision{Name: "a/b"}, []string{"name:string_pattern_mismatch"}},
		{"long description", decisions.Decision{Name: "a", Description: strings.Repeat("d", 2001)}, []string{"description:string_too_long"}},
		{"schema not an object", decisions.Decision{Name: "a", InputSchema: json.RawMessage(`[]`)}, []string{"input_schema:type_error"}},
		{"schema not a schema", decisions.Decision{Name: "a", OutputSchema: json.RawMessage(`{"type":12}`)}, []string{"output_schema:value_error"}},
		{"thresholds at the bounds", decisions.Decision{Name: "a", Thresholds: &decisions.Thresholds{Auto: f64(1), Suggest: f64(0)}}, nil},
		{"thresholds outside", decisions.Decision{Name: "a", Thresholds: &decisions.Thresholds{Auto: f64(1.01), Suggest: f64(-0.01)}},
			[]string{"thresholds.auto:less_than_equal", "thresholds.suggest:greater_than_equal"}},
		{"suggest above auto", decisions.Decision{Name: "a", Thresholds: &decisions.Thresholds{Auto: f64(0.5), Suggest: f64(0.7)}},
			[]string{"thresholds.suggest:value_error"}},
		{"suggest above the default auto", decisions.Decision{Name: "a", Thresholds: &decisions.Thresholds{Suggest: f64(0.95)}},
			[]string{"thresholds.suggest:value_error"}},
		{"several at once", decisions.Decision{Name: long, Description: strings.Repeat("d", 2001), InputSchema: json.RawMessage(`"x"`)},
			[]string{"name:string_too_long", "description:string_too_long", "input_schema:type_error"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(test.want, violations(errs.Validation(test.d.Validate()...))); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateGetListDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	rec, err := b.svc.Create(ctx, tenant, "u1", routeDecision())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *rec.Thresholds.Auto, decisions.DefaultAuto; got != want {
		t.Errorf("auto threshold = %v, want the default %v", got, want)
	}
	b.clock.Advance(time.Second)
	if _, err := b.svc.Create(ctx, tenant, "u1", routeDecision()); !errors.Is(err, errs.Conflict) {
		t.Errorf("second create: %v, want a conflict", err)
	}
	other := routeDecision()
	other.Name, other.InputSchema, other.OutputSchema = "a-first", nil, nil
	if _, err := b.svc.Create(ctx, tenant, "u1", other); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Create(ctx, "t2", "u9", routeDecision()); err != nil {
		t.Fatal(err)
	}
	list, _, err := b.svc.List(ctx, tenant, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"a-first", "invoice-route"}, names); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	got, err := b.svc.Get(ctx, tenant, "a-first")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.InputSchema) != "{}" || string(got.OutputSchema) != "{}" {
		t.Errorf("schemas = %s, %s; want the {} defaults", got.InputSchema, got.OutputSchema)
	}

	// Cases go with the decision; a new decision of the same name starts
	// afresh.
	if _, err := b.svc.RecordOutcome(ctx, tenant, "u1", "invoice-route", decisions.OutcomeIn{
		Input: json.RawMessage(`{"vendor":"acme"}`), Output: json.RawMessage(`{"queue":"ap"}`),
	}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
	if err := b.svc.Delete(ctx, tenant, "u1", "invoice-route"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
	if err := b.svc.Delete(ctx, tenant, "u1", "invoice-route"); !errors.Is(err, errs.NotFound) {
		t.Errorf("second delete: %v, want not found", err)
	}
	if _, err := b.svc.Get(ctx, tenant, "invoice-route"); !errors.Is(err, errs.NotFound) {
		t.Errorf("get after delete: %v, want not found", err)
	}
	if _, err := b.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		t.Fatal(err)
	}
	cs, _, err := b.svc.Cases(ctx, tenant, "invoice-route", store.Page{})
	if err != nil || len(cs) != 0 {
		t.Errorf("cases of the new decision = %d, %v; want none", len(cs), err)
	}
	ev, err := b.svc.Evaluate(ctx, tenant, "invoice-route", decisions.EvaluateIn{Input: json.RawMessage(`{"vendor":"acme"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Mode != decisions.ModeManual {
		t.Errorf("the recreated decision learned from its predecessor: %+v", ev)
	}
	// The other tenant's decision is untouched.
	if _, err := b.svc.Get(ctx, "t2", "invoice-route"); err != nil {
		t.Errorf("t2's decision: %v", err)
	}

	entries, _, err := listAudit(b, "decision")
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action+" "+e.EntityID)
	}
	want := []string{"decision.created invoice-route", "decision.deleted invoice-route", "decision.created a-first",
		"decision.created invoice-route"}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("audit, newest first (-want +got):\n%s", diff)
	}
}

func listAudit(b *bundle, entity string) ([]*audit.Entry, string, error) {
	var (
		out  []*audit.Entry
		next string
	)
	err := b.st.View(context.Background(), func(r store.Reader) error {
		var err error
		out, next, err = audit.List(r, tenant, audit.Query{Entity: entity}, store.Page{Limit: 200})
		return err
	})
	return out, next, err
}

func record(t *testing.T, b *bundle, input, output string) {
	t.Helper()
	if _, err := b.svc.RecordOutcome(context.Background(), tenant, "u1", "invoice-route", decisions.OutcomeIn{
		Input: json.RawMessage(input), Output: json.RawMessage(output),
	}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
}

func evaluate(t *testing.T, b *bundle, input string) *decisions.Evaluation {
	t.Helper()
	ev, err := b.svc.Evaluate(context.Background(), tenant, "invoice-route", decisions.EvaluateIn{Input: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Second)
	return ev
}

// result strips the case id so evaluations compare.
type result struct {
	Output     string
	Confidence float64
	Mode       string
	Rule       string // rule kind: exact, fields or none
}

func resultOf(ev *decisions.Evaluation) result {
	kind, _, _ := strings.Cut(ev.RuleID, ":")
	return result{Output: string(ev.Output), Confidence: ev.Confidence, Mode: ev.Mode, Rule: kind}
}

func TestEvaluateLearnsFromConfirmedCases(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if _, err := b.svc.Create(context.Background(), tenant, "u1", routeDecision()); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		record [][2]string // input, output recorded before evaluating
		input  string
		want   result
	}{
		{"nothing learned yet", nil, `{"vendor":"acme","amount":100}`,
			result{"null", 0, decisions.ModeManual, "none"}},
		{"one confirmed case: exact match", [][2]string{{`{"amount":100,"vendor":"acme"}`, `{"queue":"ap"}`}},
			`{"vendor":"acme","amount":100.0}`, result{`{"queue":"ap"}`, 1, decisions.ModeAuto, "exact"}},
		{"three to one: suggest", [][2]string{
			{`{"vendor":"acme","amount":100}`, `{"queue":"ap"}`},
			{`{"vendor":"acme","amount":100}`, `{"queue":"review"}`},
			{`{"vendor":"acme","amount":1e2}`, `{"queue":"ap"}`},
		}, `{"vendor":"acme","amount":100}`, result{`{"queue":"ap"}`, 0.75, decisions.ModeSuggest, "exact"}},
		{"no exact match: required fields", nil, `{"vendor":"acme","amount":5}`,
			result{`{"queue":"ap"}`, 0.75, decisions.ModeSuggest, "fields"}},
		{"another vendor: nothing", nil, `{"vendor":"globex","amount":100}`,
			result{"null", 0, decisions.ModeManual, "none"}},
		{"a tie goes to the newest", [][2]string{
			{`{"vendor":"initech"}`, `{"queue":"legal"}`},
			{`{"vendor":"initech"}`, `{"queue":"review"}`},
		}, `{"vendor":"initech"}`, result{`{"queue":"review"}`, 0.5, decisions.ModeManual, "exact"}},
	}
	for _, step := range steps {
		for _, r := range step.record {
			record(t, b, r[0], r[1])
		}
		if diff := cmp.Diff(step.want, resultOf(evaluate(t, b, step.input))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}
}

func TestEvaluateValidatesInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	if _, err := b.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		name  string
		input string
		want  []string
	}{
		{"missing", ``, []string{"input:missing"}},
		{"not an object", `[1]`, []string{"input:type_error"}},
		{"against input_schema", `{"amount":"lots"}`, []string{"input.amount:type_error", "input.vendor:missing"}},
	} {
		_, err := b.svc.Evaluate(ctx, tenant, "invoice-route", decisions.EvaluateIn{Input: json.RawMessage(test.input)})
		if diff := cmp.Diff(test.want, violations(err)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.name, diff)
		}
	}
	if _, err := b.svc.Evaluate(ctx, tenant, "nope", decisions.EvaluateIn{Input: json.RawMessage(`{}`)}); !errors.Is(err, errs.NotFound) {
		t.Errorf("unknown decision: %v, want not found", err)
	}
}

// fakeCaller answers every call with a fixed result; it stands in for a
// third-party provider bound to decision.evaluate.
type fakeCaller struct{ result string }

func (f fakeCaller) Call(context.Context, capability.Call) (json.RawMessage, error) {
	return json.RawMessage(f.result), nil
}

func TestEvaluateSettlesProviderResults(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, result string
		want         result
	}{
		{"output outside output_schema is dropped", `{"output":{"queue":"nowhere"},"confidence":0.99,"mode":"auto","rule_id":"m"}`,
			result{"null", 0, decisions.ModeManual, decisions.RuleInvalidOutput}},
		{"mode follows the decision's thresholds", `{"output":{"queue":"ap"},"confidence":0.7,"mode":"auto","rule_id":"m"}`,
			result{`{"queue":"ap"}`, 0.7, decisions.ModeSuggest, "m"}},
		{"confidence clamped", `{"output":{"queue":"ap"},"confidence":3,"mode":"manual"}`,
			result{`{"queue":"ap"}`, 1, decisions.ModeAuto, decisions.RuleNone}},
		{"null output is manual", `{"output":null,"confidence":1,"mode":"auto","rule_id":"m"}`,
			result{"null", 1, decisions.ModeManual, "m"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fakeCaller{test.result})
			if _, err := b.svc.Create(context.Background(), tenant, "u1", routeDecision()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, resultOf(evaluate(t, b, `{"vendor":"acme"}`))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFeedback(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	if _, err := b.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		t.Fatal(err)
	}
	record(t, b, `{"vendor":"acme"}`, `{"queue":"ap"}`)
	proposed := evaluate(t, b, `{"vendor":"acme"}`) // {"queue":"ap"}, exact
	wrong := evaluate(t, b, `{"vendor":"acme"}`)
	unknown := evaluate(t, b, `{"vendor":"globex"}`) // no proposal
	lost := evaluate(t, b, `{"vendor":"acme","amount":1}`)

	feedback := func(items ...decisions.FeedbackItem) (*decisions.Agreement, error) {
		return b.svc.Feedback(ctx, tenant, "u2", "invoice-route", decisions.FeedbackIn{Results: items})
	}
	// Every bad item is reported, and nothing applies.
	_, err := feedback(
		decisions.FeedbackItem{RuleID: proposed.CaseID, Verdict: "agree"},
		decisions.FeedbackItem{RuleID: "dcs_nope", Verdict: "agree"},
		decisions.FeedbackItem{RuleID: unknown.CaseID, Verdict: "agree"},
		decisions.FeedbackItem{RuleID: wrong.CaseID, Verdict: "agree", Outcome: json.RawMessage(`{"queue":"legal"}`)},
		decisions.FeedbackItem{RuleID: lost.CaseID, Verdict: "disagree", Outcome: json.RawMessage(`{"queue":"moon"}`)},
	)
	want := []string{"results.4.outcome.queue:enum"}
	if diff := cmp.Diff(want, violations(err)); diff != "" {
		t.Errorf("outcome against output_schema (-want +got):\n%s", diff)
	}
	_, err = feedback(
		decisions.FeedbackItem{RuleID: proposed.CaseID, Verdict: "agree"},
		decisions.FeedbackItem{RuleID: "dcs_nope", Verdict: "agree"},
		decisions.FeedbackItem{RuleID: unknown.CaseID, Verdict: "agree"},
		decisions.FeedbackItem{RuleID: wrong.CaseID, Verdict: "agree", Outcome: json.RawMessage(`{"queue":"legal"}`)},
		decisions.FeedbackItem{RuleID: lost.CaseID, Verdict: "disagree", Outcome: json.RawMessage(`{"queue":"ap"}`)},
	)
	want = []string{"results.1.rule_id:value_error", "results.2.verdict:value_error",
		"results.3.outcome:value_error", "results.4.outcome:value_error"}
	if diff := cmp.Diff(want, violations(err)); diff != "" {
		t.Errorf("bad items (-want +got):\n%s", diff)
	}
	c, err := b.svc.Case(ctx, tenant, "invoice-route", proposed.CaseID)
	if err != nil || c.Status != decisions.CasePending {
		t.Fatalf("case after a refused request: %+v, %v; want it pending", c, err)
	}

	note := "legal handles acme now"
	ag, err := feedback(
		decisions.FeedbackItem{RuleID: proposed.CaseID, Verdict: "agree"},
		decisions.FeedbackItem{RuleID: wrong.CaseID, Verdict: "disagree", Note: &note, Outcome: json.RawMessage(`{"queue":"legal"}`)},
		decisions.FeedbackItem{RuleID: unknown.CaseID, Verdict: "disagree"},
	)
	if err != nil {
		t.Fatal(err)
	}
	half, third := 0.5, 1.0/3
	wantAg := &decisions.Agreement{Overall: &third, Items: 3, ByRule: []decisions.RuleAgreement{
		{RuleID: proposed.RuleID, Agree: 1, Disagree: 1, Rate: half},
		{RuleID: decisions.RuleNone, Agree: 0, Disagree: 1, Rate: 0},
	}}
	if proposed.RuleID > decisions.RuleNone {
		wantAg.ByRule[0], wantAg.ByRule[1] = wantAg.ByRule[1], wantAg.ByRule[0]
	}
	if diff := cmp.Diff(wantAg, ag); diff != "" {
		t.Errorf("agreement (-want +got):\n%s", diff)
	}
	got, err := b.svc.Agreement(ctx, tenant, "invoice-route")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantAg, got); diff != "" {
		t.Errorf("GET agreement (-want +got):\n%s", diff)
	}

	c, err = b.svc.Case(ctx, tenant, "invoice-route", wrong.CaseID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != decisions.CaseCorrected || string(c.Outcome) != `{"queue":"legal"}` || *c.Note != note || *c.DecidedBy != "u2" {
		t.Errorf("corrected case = %+v", c)
	}
	// The correction counts: ap (recorded, agreed) 2, legal 1.
	if diff := cmp.Diff(result{`{"queue":"ap"}`, 2.0 / 3, decisions.ModeSuggest, "exact"}, resultOf(evaluate(t, b, `{"vendor":"acme"}`))); diff != "" {
		t.Errorf("after feedback (-want +got):\n%s", diff)
	}
	// A judged case cannot be judged again.
	if _, err := feedback(decisions.FeedbackItem{RuleID: proposed.CaseID, Verdict: "disagree"}); !errors.Is(err, errs.Conflict) {
		t.Errorf("judging twice: %v, want a conflict", err)
	}
}

func TestFeedbackBounds(t *testing.T) {
	t.Parallel()
	item := func(i int) decisions.FeedbackItem {
		return decisions.FeedbackItem{RuleID: fmt.Sprintf("dcs_%d", i), Verdict: "agree"}
	}
	items := func(n int) []decisions.FeedbackItem {
		out := make([]decisions.FeedbackItem, n)
		for i := range out {
			out[i] = item(i)
		}
		return out
	}
	note := func(n int) *string { s := strings.Repeat("n", n); return &s }
	for _, test := range []struct {
		name string
		in   decisions.FeedbackIn
		want []string
	}{
		{"1 item", decisions.FeedbackIn{Results: items(1)}, nil},
		{"200 items", decisions.FeedbackIn{Results: items(200)}, nil},
		{"0 items", decisions.FeedbackIn{}, []string{"results:too_short"}},
		{"201 items", decisions.FeedbackIn{Results: items(201)}, []string{"results:too_long"}},
		{"rule_id 80", decisions.FeedbackIn{Results: []decisions.FeedbackItem{{RuleID: strings.Repeat("r", 80), Verdict: "agree"}}}, nil},
		{"rule_id 81 and empty", decisions.FeedbackIn{Results: []decisions.FeedbackItem{
			{RuleID: strings.Repeat("r", 81), Verdict: "agree"}, {RuleID: "", Verdict: "disagree"}}},
			[]string{"results.0.rule_id:string_too_long", "results.1.rule_id:string_too_short"}},
		{"note 2000", decisions.FeedbackIn{Results: []decisions.FeedbackItem{{RuleID: "r", Verdict: "agree", Note: note(2000)}}}, nil},
		{"note 2001, bad verdict, twice", decisions.FeedbackIn{Results: []decisions.FeedbackItem{
			{RuleID: "r", Verdict: "agree", Note: note(2001)}, {RuleID: "r", Verdict: "maybe"}}},
			[]string{"results.0.note:string_too_long", "results.1.rule_id:value_error", "results.1.verdict:enum"}},
	} {
		if diff := cmp.Diff(test.want, violations(errs.Validation(test.in.Validate()...))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", test.name, diff)
		}
	}
}

func TestLedgerAndAgreementRate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	var gen ids.Generator
	put := func(scope, rule string, agreed bool) {
		t.Helper()
		err := b.st.Update(ctx, func(tx store.Txn) error {
			return decisions.RecordVerdict(tx, tenant, &gen, &decisions.Verdict{Scope: scope, RuleID: rule, Agreed: agreed, At: b.clock.Now()})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rate := func() *float64 {
		t.Helper()
		r, err := b.svc.AgreementRate(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := rate(); r != nil {
		t.Errorf("rate with no verdicts = %v, want nil", *r)
	}
	p := decisions.ProcessScope("prc_1")
	put(p, "pay", true)
	put(p, "pay", false)
	put(p, "send", true)
	b.clock.Advance(20 * 24 * time.Hour)
	put(decisions.ProcessScope("prc_2"), "pay", true)
	if got, want := *rate(), 0.75; got != want {
		t.Errorf("rate = %v, want %v", got, want)
	}
	// The 30th day (today and the 29 before) counts, the 31st does not: the
	// first three fall out.
	b.clock.Advance(9 * 24 * time.Hour)
	if got, want := *rate(), 0.75; got != want {
		t.Errorf("rate on the 30th day = %v, want %v", got, want)
	}
	b.clock.Advance(24 * time.Hour)
	if got, want := *rate(), 1.0; got != want {
		t.Errorf("rate on the 31st day = %v, want %v", got, want)
	}

	err := b.st.View(ctx, func(r store.Reader) error {
		seq, err := decisions.LastSeq(r, tenant, p)
		if err != nil || seq != 3 {
			t.Errorf("LastSeq = %d, %v; want 3", seq, err)
		}
		recent, err := decisions.RecentVerdicts(r, tenant, p, 1, 10)
		if err != nil {
			return err
		}
		var got []string
		for _, v := range recent {
			got = append(got, fmt.Sprintf("%d %s %v", v.Seq, v.RuleID, v.Agreed))
		}
		if diff := cmp.Diff([]string{"3 send true", "2 pay false"}, got); diff != "" {
			t.Errorf("recent after 1 (-want +got):\n%s", diff)
		}
		ag, err := decisions.Summarize(r, tenant, p)
		if err != nil {
			return err
		}
		two := 2.0 / 3
		want := &decisions.Agreement{Overall: &two, Items: 3, ByRule: []decisions.RuleAgreement{
			{RuleID: "pay", Agree: 1, Disagree: 1, Rate: 0.5}, {RuleID: "send", Agree: 1, Rate: 1},
		}}
		if diff := cmp.Diff(want, ag); diff != "" {
			t.Errorf("summary (-want +got):\n%s", diff)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestProvider(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	p := b.svc.Provider()
	if info := p.Info(); info.ID != decisions.ProviderID || info.Kind != capability.KindBuiltin ||
		!cmp.Equal(info.Capabilities, []string{capability.DecisionEvaluate}) {
		t.Errorf("info = %+v", info)
	}
	call := func(capID, args string) (json.RawMessage, error) {
		return p.Call(ctx, capability.Call{Tenant: tenant, Capability: capID, Args: json.RawMessage(args)})
	}
	if _, err := call("email.send", `{}`); !errors.Is(err, errs.Invalid) {
		t.Errorf("other capability: %v, want invalid", err)
	}
	if _, err := call(capability.DecisionEvaluate, `{"name":"nope","input":{}}`); !errors.Is(err, errs.NotFound) {
		t.Errorf("unknown decision: %v, want not found", err)
	}
	if _, err := b.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		t.Fatal(err)
	}
	record(t, b, `{"vendor":"acme"}`, `{"queue":"ap"}`)
	out, err := call(capability.DecisionEvaluate, `{"name":"invoice-route","input":{"vendor":"acme"}}`)
	if err != nil {
		t.Fatal(err)
	}
	var res decisions.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"queue":"ap"}` || res.Confidence != 1 || res.Mode != decisions.ModeAuto || res.Cases != 1 {
		t.Errorf("result = %s", out)
	}
	// Another tenant does not see t1's cases or decision.
	if _, err := p.Call(ctx, capability.Call{Tenant: "t2", Capability: capability.DecisionEvaluate,
		Args: json.RawMessage(`{"name":"invoice-route","input":{"vendor":"acme"}}`)}); !errors.Is(err, errs.NotFound) {
		t.Errorf("other tenant: %v, want not found", err)
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	for _, test := range []struct{ in, want string }{
		{`{"b":1,"a":[1.0, 2.50, "x<y"]}`, `{"a":[1,2.5,"x<y"],"b":1}`},
		{`1e2`, `100`},
		{`12345678901234567890`, `12345678901234567890`},
		{` {"z" : {"y":true, "x":null}} `, `{"z":{"x":null,"y":true}}`},
	} {
		got, err := decisions.Canonical(json.RawMessage(test.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != test.want {
			t.Errorf("Canonical(%s) = %s, want %s", test.in, got, test.want)
		}
	}
}
