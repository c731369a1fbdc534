package process

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bas-platform/bas/store"
)

func BenchmarkValidate(b *testing.B) {
	cfg := ValidateConfig{Rules: []ValidateRule{
		{Field: "invoice_number", Check: CheckRequired},
		{Field: "total", Check: CheckSumEquals, Fields: []string{"subtotal", "tax"}, ToleranceCents: 1},
		{Field: "currency", Check: CheckIn, Value: []any{"EUR", "USD"}},
		{Field: "issued", Check: CheckBefore, ValueField: "due"},
		{Field: "invoice_number", Check: CheckMatches, Value: `^INV-\d+$`},
	}}
	rec := invoiceRecord()
	for b.Loop() {
		Validate(cfg, rec)
	}
}

func BenchmarkRoute(b *testing.B) {
	cfg := RouteConfig{Default: RouteTarget{Queue: "general"}}
	for i := range 10 {
		cfg.Rules = append(cfg.Rules, RouteRule{When: map[string]any{"amount_cents": map[string]any{"gte": 1000 * (10 - i)}, "country": "DE"}, Queue: fmt.Sprint("q", i)})
	}
	data := map[string]any{"amount_cents": 1500, "country": "DE"}
	for b.Loop() {
		Route(cfg, data)
	}
}

func BenchmarkConsolidate1000(b *testing.B) {
	var left, right []any
	for i := range 1000 {
		left = append(left, map[string]any{"po": fmt.Sprint("PO-", i), "total": 10000 + i})
		right = append(right, map[string]any{"number": fmt.Sprint("po-", 999-i), "total": 10000 + 999 - i})
	}
	pct := 1.0
	cfg := ConsolidateConfig{Keys: []KeyPair{{Left: "po", Right: "number"}}, Tolerances: []Tolerance{{Left: "total", Right: "total", Percent: &pct}}}
	for b.Loop() {
		Consolidate(cfg, left, right)
	}
}

func BenchmarkAnalyse10000(b *testing.B) {
	values := make([]any, 10000)
	for i := range values {
		values[i] = map[string]any{"amount": float64(i % 97)}
	}
	for b.Loop() {
		if _, err := Analyse(AnalyseConfig{Field: "amount", IQR: true}, values); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeIn50Steps(b *testing.B) {
	body, _ := json.Marshal(obj{"name": "big", "trigger": obj{"type": "manual"}, "steps": steps(50)})
	for b.Loop() {
		if _, err := DecodeIn(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreate(b *testing.B) {
	bundle := setup(b)
	in := manualIn("bench", payStep(Controls{RequireApproval: true}))
	for b.Loop() {
		if _, err := bundle.svc.Create(context.Background(), "t1", "usr", in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkByEvent(b *testing.B) {
	bundle := setup(b)
	for i := range 200 {
		in := manualIn(fmt.Sprint("p", i))
		in.Trigger = Trigger{Type: TriggerEvent, Event: fmt.Sprint("app.event", i%20)}
		if _, err := bundle.svc.Create(context.Background(), "t1", "usr", in); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		err := bundle.st.View(context.Background(), func(r store.Reader) error {
			defs, err := bundle.svc.ByEvent(r, "t1", "app.event7")
			if len(defs) != 10 {
				b.Fatalf("%d processes", len(defs))
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
