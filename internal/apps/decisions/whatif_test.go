package decisions_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// confidenceCaller answers with the confidence its input's "c" field asks.
type confidenceCaller struct{}

func (confidenceCaller) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	var in struct {
		Input struct {
			C float64 `json:"c"`
		} `json:"input"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return nil, err
	}
	out, err := json.Marshal(map[string]any{"output": map[string]any{"queue": "ap"}, "confidence": in.Input.C, "rule_id": "m"})
	return out, err
}

// TestWhatIfThresholds lowers the auto threshold over cases people judged:
// the report counts the cases the decision would then decide alone and how
// often people agreed with them, and lists those they did not.
func TestWhatIfThresholds(t *testing.T) {
	t.Parallel()
	b := setup(t, confidenceCaller{})
	ctx := context.Background()
	if _, err := b.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		t.Fatal(err)
	}
	judge := map[float64]decisions.FeedbackItem{
		0.95: {Verdict: "agree"}, 0.85: {Verdict: "agree"}, 0.8: {Verdict: "disagree", Outcome: json.RawMessage(`{"queue":"legal"}`)},
		0.7: {Verdict: "agree"}, 0.5: {Verdict: "disagree"},
	}
	var corrected string
	for _, c := range []float64{0.95, 0.85, 0.8, 0.7, 0.5, 0.99} {
		raw, _ := json.Marshal(map[string]any{"vendor": "acme", "c": c})
		ev := evaluate(t, b, string(raw))
		item, ok := judge[c]
		if !ok {
			continue // left pending
		}
		if c == 0.8 {
			corrected = ev.CaseID
		}
		item.RuleID = ev.CaseID
		if _, err := b.svc.Feedback(ctx, tenant, "u2", "invoice-route", decisions.FeedbackIn{Results: []decisions.FeedbackItem{item}}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := b.svc.WhatIf(ctx, tenant, "invoice-route", decisions.WhatIfIn{Thresholds: decisions.Thresholds{Auto: f64(0.75)}})
	if err != nil {
		t.Fatal(err)
	}
	want := &decisions.WhatIfReport{
		Decision: "invoice-route", Thresholds: decisions.Thresholds{Auto: f64(0.75), Suggest: f64(0.6)}, Cases: 5,
		Modes:        map[string]int{"auto": 3, "suggest": 1, "manual": 1},
		CurrentModes: map[string]int{"auto": 1, "suggest": 3, "manual": 1},
		Compared:     3, Agreed: 2, AgreementRate: f64(2.0 / 3),
		Rules: []decisions.WhatIfRule{{RuleID: "m", Compared: 3, Agreed: 2, AgreementRate: f64(2.0 / 3)}},
		Differences: []decisions.WhatIfCase{{CaseID: corrected, RuleID: "m", Confidence: 0.8, Mode: "suggest",
			Proposed: json.RawMessage(`{"queue":"ap"}`), Status: decisions.CaseCorrected, Outcome: json.RawMessage(`{"queue":"legal"}`)}},
		DifferenceCount: 1,
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	// Limit keeps the newest cases.
	rep, err = b.svc.WhatIf(ctx, tenant, "invoice-route", decisions.WhatIfIn{Thresholds: decisions.Thresholds{Auto: f64(0.75)}, Limit: 2})
	if err != nil || rep.Cases != 1 {
		t.Errorf("limit 2: %d cases, %v", rep.Cases, err)
	}

	for _, c := range []struct {
		name string
		in   decisions.WhatIfIn
		want []string
	}{
		{"limit above", decisions.WhatIfIn{Limit: decisions.MaxWhatIfLimit + 1}, []string{"limit:value_error"}},
		{"auto above 1", decisions.WhatIfIn{Thresholds: decisions.Thresholds{Auto: f64(1.01)}}, []string{"thresholds.auto:value_error"}},
		{"suggest above auto", decisions.WhatIfIn{Thresholds: decisions.Thresholds{Auto: f64(0.5)}}, []string{"thresholds.suggest:value_error"}},
	} {
		_, err := b.svc.WhatIf(ctx, tenant, "invoice-route", c.in)
		if diff := cmp.Diff(c.want, violations(err)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	for _, in := range []decisions.WhatIfIn{{Limit: decisions.MaxWhatIfLimit}, {Thresholds: decisions.Thresholds{Auto: f64(1), Suggest: f64(0)}}} {
		if _, err := b.svc.WhatIf(ctx, tenant, "invoice-route", in); err != nil {
			t.Errorf("%+v: %v", in, err)
		}
	}
	// A decision nobody judged: every mode counted, at 0.
	other := routeDecision()
	other.Name = "unjudged"
	if _, err := b.svc.Create(ctx, tenant, "u1", other); err != nil {
		t.Fatal(err)
	}
	rep, err = b.svc.WhatIf(ctx, tenant, "unjudged", decisions.WhatIfIn{})
	if err != nil {
		t.Fatal(err)
	}
	none := map[string]int{"auto": 0, "suggest": 0, "manual": 0}
	if diff := cmp.Diff([]map[string]int{none, none}, []map[string]int{rep.Modes, rep.CurrentModes}); diff != "" {
		t.Errorf("modes with no case (-want +got):\n%s", diff)
	}
	if _, err := b.svc.WhatIf(ctx, "t2", "invoice-route", decisions.WhatIfIn{}); !errors.Is(err, errs.NotFound) {
		t.Errorf("another tenant's decision: %v", err)
	}
}
