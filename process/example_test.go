package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// A process is created at version 1; editing its steps makes version 2,
// while renaming it does not.
func ExampleService() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: logger})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	svc := process.NewService(process.Config{Store: st, Logger: logger})

	d, err := svc.Create(ctx, "acme", "usr_alice", process.ProcessIn{
		Name:    "Supplier invoice",
		Trigger: process.Trigger{Type: process.TriggerEvent, Event: "docs.document.validated"},
		Steps: []process.Step{{Key: "review", Type: process.StepHumanTask,
			Config: json.RawMessage(`{"title": "Review ${trigger.data.document_id}"}`)}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("created version", d.Version)

	name := "Supplier invoices"
	d, _, _ = svc.Update(ctx, "acme", "usr_bob", d.ID, process.ProcessPatch{Name: &name})
	fmt.Println("renamed, version", d.Version)

	d, _, _ = svc.Update(ctx, "acme", "usr_bob", d.ID, process.ProcessPatch{Steps: []process.Step{
		{Key: "wait", Type: process.StepWait, Config: json.RawMessage(`{"duration": "48h"}`)},
	}})
	fmt.Println("steps edited, version", d.Version)

	vs, _, _ := svc.Versions(ctx, "acme", d.ID, store.Page{})
	for _, v := range vs {
		fmt.Println("version", v.Version, "by", v.CreatedBy, "first step", v.Steps[0].Key)
	}

	// Every violation is reported at once.
	_, err = svc.Create(ctx, "acme", "usr_alice", process.ProcessIn{
		Name:    "Broken",
		Trigger: process.Trigger{Type: process.TriggerManual},
		Steps:   []process.Step{{Key: "Pay", Type: process.StepExecute}},
	})
	for _, v := range errs.Violations(err) {
		fmt.Println(v)
	}
	// Output:
	// created version 1
	// renamed, version 1
	// steps edited, version 2
	// version 1 by usr_alice first step review
	// version 2 by usr_bob first step wait
	// steps.0.key: must match the pattern ^[a-z][a-z0-9_]{0,39}$
	// steps.0.capability: an execute step needs the capability it calls
}

// Validate checks a record against rules; every issue cites its evidence.
func ExampleValidate() {
	out := process.Validate(process.ValidateConfig{Rules: []process.ValidateRule{
		{Field: "invoice_number", Check: process.CheckRequired},
		{Field: "total", Check: process.CheckSumEquals, Fields: []string{"subtotal", "tax"}, ToleranceCents: 1},
		{Field: "currency", Check: process.CheckIn, Value: []any{"EUR", "USD"}, Severity: process.SeverityWarning},
	}}, map[string]any{"total": 12000, "subtotal": 10000, "tax": 1900, "currency": "CHF"})
	fmt.Println(out.Status)
	for _, i := range out.Issues {
		ev, _ := json.Marshal(i.Evidence)
		fmt.Printf("%s %s: %s %s\n", i.Severity, i.RuleID, i.Message, ev)
	}
	// Output:
	// errors
	// error required:invoice_number: invoice_number is required {"field":"invoice_number","present":false,"found":null}
	// error sum_equals:total: total must equal the sum of subtotal + tax (11900), found 12000 {"field":"total","present":true,"found":12000,"expected":11900,"values":{"subtotal":10000,"sum":11900,"tax":1900}}
	// warning in:currency: currency must be one of ["EUR","USD"], found CHF {"field":"currency","present":true,"found":"CHF","expected":["EUR","USD"]}
}

// Consolidate matches an invoice with a purchase order by number, totals
// within 1%.
func ExampleConsolidate() {
	pct := 1.0
	out := process.Consolidate(process.ConsolidateConfig{
		Keys:       []process.KeyPair{{Left: "po_number", Right: "number"}},
		Tolerances: []process.Tolerance{{Left: "total", Right: "total", Percent: &pct}},
	},
		map[string]any{"po_number": "PO-7", "total": 10090},
		[]any{map[string]any{"number": "po-7", "total": 10000}, map[string]any{"number": "PO-8", "total": 500}})
	fmt.Println("matched:", out.Matched)
	for _, d := range out.Matches[0].Differences {
		fmt.Println(d.Field, d.Left, d.Right, d.Delta, d.WithinTolerance)
	}
	fmt.Println("unmatched right:", out.UnmatchedRight[0].Reason)
	// Output:
	// matched: true
	// total 10090 10000 90 true
	// unmatched right: no left item has po_number = PO-8
}

// Widening tells why an edit loosens a control (rule 5).
func ExampleWidening() {
	limit, higher := int64(100000), int64(500000)
	old := []process.Step{{Key: "pay", Controls: process.Controls{RequireApproval: true, AmountCapCents: &limit}}}
	new := []process.Step{{Key: "pay", Controls: process.Controls{AmountCapCents: &higher}}}
	for _, reason := range process.Widening(old, new) {
		fmt.Println(reason)
	}
	// Output:
	// step pay no longer requires approval
	// step pay: amount cap is raised from 100000 to 500000 cents
}
