package decisions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/internal/apps/decisions"
)

// BenchmarkEvaluate measures an evaluation through the built-in provider
// with 200 confirmed cases of the same input (all weighed), the case
// recorded.
func BenchmarkEvaluate(b *testing.B) {
	bd := setup(b, nil)
	ctx := context.Background()
	if _, err := bd.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		b.Fatal(err)
	}
	input := json.RawMessage(`{"vendor":"acme","amount":12.5}`)
	for i := range 200 {
		out := `{"queue":"ap"}`
		if i%4 == 0 {
			out = `{"queue":"review"}`
		}
		if _, err := bd.svc.RecordOutcome(ctx, tenant, "u1", "invoice-route",
			decisions.OutcomeIn{Input: input, Output: json.RawMessage(out)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		ev, err := bd.svc.Evaluate(ctx, tenant, "invoice-route", decisions.EvaluateIn{Input: input})
		if err != nil || ev.Mode != decisions.ModeSuggest {
			b.Fatal(ev, err)
		}
	}
}

// BenchmarkFeedback measures judging 100 cases in one request.
func BenchmarkFeedback(b *testing.B) {
	bd := setup(b, nil)
	ctx := context.Background()
	if _, err := bd.svc.Create(ctx, tenant, "u1", routeDecision()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		var in decisions.FeedbackIn
		for i := range 100 {
			ev, err := bd.svc.Evaluate(ctx, tenant, "invoice-route",
				decisions.EvaluateIn{Input: json.RawMessage(fmt.Sprintf(`{"vendor":"v%d"}`, i))})
			if err != nil {
				b.Fatal(err)
			}
			in.Results = append(in.Results, decisions.FeedbackItem{RuleID: ev.CaseID, Verdict: decisions.VerdictDisagree})
		}
		b.StartTimer()
		if _, err := bd.svc.Feedback(ctx, tenant, "u2", "invoice-route", in); err != nil {
			b.Fatal(err)
		}
	}
}
