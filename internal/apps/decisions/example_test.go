package decisions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/bas-platform/bas/internal/apps/decisions"
	"github.com/bas-platform/bas/store/badgerstore"
)

// A decision that learns from recorded outcomes.
func Example() {
	ctx := context.Background()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	svc := decisions.New(decisions.Config{Store: st})

	if _, err := svc.Create(ctx, "t1", "u1", decisions.Decision{
		Name:        "refund",
		Description: "Refund a returned order?",
		InputSchema: json.RawMessage(`{"type": "object", "required": ["reason"]}`),
	}); err != nil {
		panic(err)
	}
	for _, out := range []string{`"yes"`, `"yes"`, `"yes"`, `"no"`} {
		if _, err := svc.RecordOutcome(ctx, "t1", "u1", "refund", decisions.OutcomeIn{
			Input: json.RawMessage(`{"reason": "damaged", "order": 1}`), Output: json.RawMessage(out),
		}); err != nil {
			panic(err)
		}
	}
	// Another order with the same reason matches on the required field.
	ev, err := svc.Evaluate(ctx, "t1", "refund", decisions.EvaluateIn{Input: json.RawMessage(`{"reason": "damaged", "order": 2}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(ev.Output), ev.Confidence, ev.Mode)
	// Output: "yes" 0.75 suggest
}
