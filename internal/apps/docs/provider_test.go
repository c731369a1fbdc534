package docs

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/google/go-cmp/cmp"
)

func TestProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	inv := goodInvoice()
	inv.Total = "1,250.00"
	d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: inv.text()})
	if err != nil {
		t.Fatal(err)
	}
	p := b.svc.Provider()
	info := p.Info()
	if info.ID != "builtin.docs" || info.Kind != capability.KindBuiltin || len(info.Capabilities) != 4 {
		t.Errorf("info %+v", info)
	}
	var builtin capability.App
	for _, a := range capability.BuiltinApps() {
		if a.ID == "docs" {
			builtin = a
		}
	}
	if diff := cmp.Diff(builtin, App()); diff != "" {
		t.Errorf("App() differs from the built-in docs app (-builtin +App):\n%s", diff)
	}
	call := func(tenant, capID string, args any) (json.RawMessage, error) {
		raw, _ := json.Marshal(args)
		return p.Call(b.ctx, capability.Call{Tenant: tenant, Capability: capID, Args: raw, IdempotencyKey: "run/step/1"})
	}
	out, err := call(b.tenant, capability.DocumentExtract, capability.DocumentArgs{DocumentID: d.ID})
	if err != nil {
		t.Fatal(err)
	}
	var ex capability.DocumentExtractResult
	if err := json.Unmarshal(out, &ex); err != nil {
		t.Fatal(err)
	}
	if ex.DocumentID != d.ID || ex.Fields["total"] != float64(125000) || ex.Extracted["total"].Text != "1,250.00" || ex.Extracted["total"].Page != 1 {
		t.Errorf("extract result %+v", ex)
	}
	before := len(b.sink.events(t))
	out, err = call(b.tenant, capability.DocumentValidate, capability.DocumentArgs{DocumentID: d.ID})
	if err != nil {
		t.Fatal(err)
	}
	var va capability.DocumentValidateResult
	if err := json.Unmarshal(out, &va); err != nil {
		t.Fatal(err)
	}
	if va.Status != StatusNeedsReview || va.Validation.Status != ValidationErrors || va.Validation.Issues[0].RuleID != "sum:total" || va.Validation.Issues[0].Evidence == nil {
		t.Errorf("validate result %+v", va)
	}
	if after := len(b.sink.events(t)); after != before {
		t.Errorf("an unchanged re-validation emitted %d events", after-before)
	}
	// Approval is refused while errors remain; the process sees a conflict.
	_, err = call(b.tenant, capability.DocumentApprove, capability.DocumentApproveArgs{DocumentID: d.ID})
	wantKind(t, err, errs.Conflict)
	// After the type's rules change, document.validate re-validates.
	if _, err := b.svc.UpdateType(b.ctx, b.tenant, typ.ID, DocTypePatch{Fields: ptr(typ.Fields[:9])}); err != nil {
		t.Fatal(err)
	}
	out, err = call(b.tenant, capability.DocumentValidate, capability.DocumentArgs{DocumentID: d.ID})
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(out, &va)
	if va.Status != StatusNeedsReview || va.Validation.Issues[0].RuleID != "sum:total" {
		t.Errorf("after the type changed: %+v", va)
	}
	out, err = call(b.tenant, capability.DocumentReject, capability.DocumentRejectArgs{DocumentID: d.ID, Reason: "wrong total"})
	if err != nil {
		t.Fatal(err)
	}
	var st capability.DocumentStatusResult
	_ = json.Unmarshal(out, &st)
	if st.Status != StatusRejected {
		t.Errorf("reject result %+v", st)
	}
	// A retried reject is done, not a conflict.
	if _, err := call(b.tenant, capability.DocumentReject, capability.DocumentRejectArgs{DocumentID: d.ID, Reason: "wrong total"}); err != nil {
		t.Errorf("retried reject: %v", err)
	}
	got, _ := b.svc.Get(b.ctx, b.tenant, d.ID)
	if h := got.History[len(got.History)-1]; h.Action != "rejected" || h.By != nil || *h.Note != "wrong total" {
		t.Errorf("history %+v", h)
	}
	// Another tenant cannot reach the document.
	_, err = call("tnt_other", capability.DocumentExtract, capability.DocumentArgs{DocumentID: d.ID})
	wantKind(t, err, errs.NotFound)
	_, err = call(b.tenant, "document.shred", capability.DocumentArgs{DocumentID: d.ID})
	wantKind(t, err, errs.Invalid)

	// document.approve on a clean document.
	clean, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "c.csv", Data: goodInvoice().csv()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second call is a retry
		out, err = call(b.tenant, capability.DocumentApprove, capability.DocumentApproveArgs{DocumentID: clean.ID, Note: "three-way match ok"})
		if err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(out, &st)
		if st.Status != StatusApproved {
			t.Errorf("approve result %+v", st)
		}
	}
}

func TestCheckRules(t *testing.T) {
	t.Parallel()
	tpl, _ := Template("supplier_invoice")
	typ := &DocType{Fields: tpl.Fields}
	vals := func(kv ...any) map[string]FieldValue {
		m := map[string]FieldValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = FieldValue{Value: kv[i+1], Text: "t", Page: ptr(1), Start: ptr(0), End: ptr(1)}
		}
		return m
	}
	base := []any{"supplier", "S", "invoice_number", "1", "issue_date", "2024-02-01", "total", int64(12000)}
	for _, test := range []struct {
		name string
		kv   []any
		want []string
	}{
		{name: "minimal", kv: base},
		{name: "lines equal total", kv: append(base, "line_amounts", []any{int64(5000), int64(7000)})},
		{name: "lines within a cent", kv: append(base, "line_amounts", []any{int64(5000), int64(7001)})},
		{name: "lines two cents off", kv: append(base, "line_amounts", []any{int64(5000), int64(7002)}), want: []string{"sum:total"}},
		{name: "net lines plus tax", kv: append(base, "line_amounts", []any{int64(10000)}, "tax", int64(2000))},
		{name: "subtotal plus tax", kv: append(base, "subtotal", int64(10000), "tax", int64(2000))},
		{name: "subtotal plus tax off", kv: append(base, "subtotal", int64(10000), "tax", int64(1000)), want: []string{"sum:total"}},
		{name: "subtotal is not the lines", kv: append(base, "subtotal", int64(10000), "tax", int64(2000), "line_amounts", []any{int64(9000), int64(1000), int64(2000)}), want: []string{"sum:subtotal"}},
		{name: "tax rounds", kv: append(base, "subtotal", int64(10001), "tax", int64(1999), "tax_rate", float64(20))},
		{name: "tax from total", kv: append(base, "tax", int64(2000), "tax_rate", float64(20))},
		{name: "tax wrong", kv: append(base, "tax", int64(2000), "tax_rate", float64(7)), want: []string{"tax:tax"}},
		{name: "due same day", kv: append(base, "due_date", "2024-02-01")},
		{name: "due before", kv: append(base, "due_date", "2024-01-31"), want: []string{"dates:due_date"}},
	} {
		got := check(checkInput{typ: typ, values: vals(test.kv...), pages: 1})
		var ids []string
		for _, is := range got.Issues {
			ids = append(ids, is.RuleID)
		}
		if diff := cmp.Diff(test.want, ids); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", test.name, diff)
		}
	}
}
