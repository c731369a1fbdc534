package docs

import (
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/store"
	"github.com/google/go-cmp/cmp"
)

func TestCreateTypeValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := string(make([]byte, 161))
	_, err := b.svc.CreateType(b.ctx, b.tenant, DocTypeIn{
		Name: "  ",
		Fields: []DocField{
			{Key: "Bad Key", Label: "x"},
			{Key: "a", Label: ""},
			{Key: "a", Label: "Dup", Type: "colour"},
			{Key: "c", Label: "C", Type: extract.TypeEnum},
			{Key: "d", Label: "D", Extract: &extract.Rule{Method: extract.MethodRegex, Pattern: "(", Label: "no"}},
			{Key: "e", Label: "E", Extract: &extract.Rule{Method: extract.MethodLabel, Pattern: "x", Aliases: []string{"--"}}},
			{Key: "f", Label: "F", Extract: &extract.Rule{Method: "ocr"}},
			{Key: "g", Label: "G", Extract: &extract.Rule{Method: extract.MethodRegex, Pattern: "(a)", Group: ptr(3)}},
		},
		Workflow: &WorkflowIn{OnError: ptr("ignore"), OnWarning: ptr("shrug"), ReviewSLADays: ptr(-1)},
	})
	want := []errs.Violation{
		{Loc: []any{"name"}, Msg: "must be at least 1 character", Type: "string_too_short"},
		{Loc: []any{"fields", 0, "key"}, Msg: "must be lowercase letters, digits and '_', starting with a letter, at most 40 characters", Type: "string_pattern_mismatch"},
		{Loc: []any{"fields", 1, "label"}, Msg: "must be at least 1 character", Type: "string_too_short"},
		{Loc: []any{"fields", 2, "key"}, Msg: `the key "a" is used by another field`, Type: "value_error"},
		{Loc: []any{"fields", 2, "type"}, Msg: "must be one of text, number, money, date, email, enum", Type: "enum"},
		{Loc: []any{"fields", 3, "options"}, Msg: "an enum field needs options", Type: "missing"},
		{Loc: []any{"fields", 4, "extract", "label"}, Msg: "a regex rule takes no label", Type: "extra_forbidden"},
		{Loc: []any{"fields", 4, "extract", "pattern"}, Msg: "is not a valid RE2 pattern: missing closing ): `(`", Type: "value_error"},
		{Loc: []any{"fields", 5, "extract", "pattern"}, Msg: "a label rule takes no pattern", Type: "extra_forbidden"},
		{Loc: []any{"fields", 5, "extract", "aliases", 0}, Msg: "an alias needs a letter or digit", Type: "value_error"},
		{Loc: []any{"fields", 6, "extract", "method"}, Msg: "must be one of label, regex", Type: "enum"},
		{Loc: []any{"fields", 7, "extract", "group"}, Msg: "the pattern has 1 groups", Type: "value_error"},
		{Loc: []any{"workflow", "on_error"}, Msg: "must be one of review, reject", Type: "enum"},
		{Loc: []any{"workflow", "on_warning"}, Msg: "must be one of review, accept", Type: "enum"},
		{Loc: []any{"workflow", "review_sla_days"}, Msg: "must be at least 0", Type: "greater_than_equal"},
	}
	if diff := cmp.Diff(want, errs.Violations(err)); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
	_, err = b.svc.CreateType(b.ctx, b.tenant, DocTypeIn{Name: long})
	wantKind(t, err, errs.Invalid)
}

func TestTypeLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ, err := b.svc.CreateType(b.ctx, b.tenant, DocTypeIn{Name: "Credit note", Fields: []DocField{
		{Key: "number", Label: "Credit note number", Required: true},
		{Key: "total", Label: "Total", Type: extract.TypeMoney, Required: true},
		{Key: "reason", Label: "Reason"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantWF := Workflow{OnError: "review", OnWarning: "review", ReviewSLADays: 2}
	if typ.RuleCount != 3 || typ.Workflow != wantWF || typ.Description != nil || typ.Fields[2].Type != extract.TypeText {
		t.Errorf("created %+v", typ)
	}
	_, err = b.svc.CreateType(b.ctx, b.tenant, DocTypeIn{Name: "credit NOTE"})
	wantKind(t, err, errs.Conflict)

	// PATCH: workflow keys merge; null clears the description.
	var p DocTypePatch
	if err := json.Unmarshal([]byte(`{"description": "From suppliers", "workflow": {"auto_approve": true, "review_sla_days": 4}}`), &p); err != nil {
		t.Fatal(err)
	}
	typ, err = b.svc.UpdateType(b.ctx, b.tenant, typ.ID, p)
	if err != nil {
		t.Fatal(err)
	}
	if *typ.Description != "From suppliers" || typ.Workflow != (Workflow{AutoApprove: true, OnError: "review", OnWarning: "review", ReviewSLADays: 4}) {
		t.Errorf("patched %+v", typ)
	}
	p = DocTypePatch{}
	if err := json.Unmarshal([]byte(`{"description": null, "fields": null, "workflow": {"on_error": "reject"}}`), &p); err != nil {
		t.Fatal(err)
	}
	typ, err = b.svc.UpdateType(b.ctx, b.tenant, typ.ID, p)
	if err != nil {
		t.Fatal(err)
	}
	if typ.Description != nil || len(typ.Fields) != 0 || typ.RuleCount != 0 || typ.Workflow.OnError != "reject" || !typ.Workflow.AutoApprove {
		t.Errorf("patched with nulls %+v", typ)
	}
	_, err = b.svc.UpdateType(b.ctx, b.tenant, "dtp_missing", DocTypePatch{Name: ptr("")})
	wantKind(t, err, errs.NotFound) // looked up before the body is checked
	_, err = b.svc.UpdateType(b.ctx, b.tenant, typ.ID, DocTypePatch{Name: ptr("")})
	wantKind(t, err, errs.Invalid)

	list, _, err := b.svc.ListTypes(b.ctx, b.tenant, store.Page{})
	if err != nil || len(list) != 1 {
		t.Fatalf("list %d %v", len(list), err)
	}
	// A type with documents cannot be deleted; without, it can, once.
	inv := b.invoiceType(t, nil)
	if _, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: inv.ID, Filename: "i.txt", Data: goodInvoice().text()}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, b.svc.DeleteType(b.ctx, b.tenant, inv.ID), errs.Conflict)
	if err := b.svc.DeleteType(b.ctx, b.tenant, typ.ID); err != nil {
		t.Fatal(err)
	}
	wantKind(t, b.svc.DeleteType(b.ctx, b.tenant, typ.ID), errs.NotFound)
	_, err = b.svc.GetType(b.ctx, "tnt_other", inv.ID)
	wantKind(t, err, errs.NotFound)
}

func TestTemplates(t *testing.T) {
	t.Parallel()
	var got []string
	for _, tpl := range Templates() {
		got = append(got, tpl.ID)
		if vs := validateFields(tpl.Fields, "fields"); len(vs) > 0 {
			t.Errorf("template %s has bad fields: %v", tpl.ID, vs)
		}
		if tpl.RuleCount != len(Rules(tpl.Fields)) || tpl.RuleCount == 0 {
			t.Errorf("template %s rule_count %d", tpl.ID, tpl.RuleCount)
		}
	}
	if diff := cmp.Diff([]string{"supplier_invoice", "receipt", "purchase_order", "contract", "bank_statement", "supplier_tax_form"}, got); diff != "" {
		t.Errorf("templates mismatch (-want +got):\n%s", diff)
	}
	inv, _ := Template("supplier_invoice")
	var ids []string
	for _, r := range inv.Rules {
		ids = append(ids, r.RuleID)
	}
	want := []string{
		"required:supplier", "required:invoice_number", "required:issue_date", "type:issue_date", "type:due_date",
		"option:currency", "type:subtotal", "type:tax_rate", "type:tax", "required:total", "type:total",
		"type:line_amounts", "type:supplier_email", "sum:total", "sum:subtotal", "tax:tax", "dates:due_date",
		"duplicate:invoice_number",
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("invoice rules mismatch (-want +got):\n%s", diff)
	}

	b := setup(t)
	first, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "receipt"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "receipt"})
	if err != nil {
		t.Fatal(err)
	}
	named, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "receipt", Name: ptr("Travel receipts")})
	if err != nil {
		t.Fatal(err)
	}
	if first.Name != "Receipt" || second.Name != "Receipt (2)" || named.Name != "Travel receipts" || *named.TemplateID != "receipt" || !named.Workflow.AutoApprove {
		t.Errorf("names %q %q %q", first.Name, second.Name, named.Name)
	}
	_, err = b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "receipt", Name: ptr("travel RECEIPTS")})
	wantKind(t, err, errs.Conflict)
	_, err = b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "payslip"})
	if diff := cmp.Diff([]errs.Violation{{Loc: []any{"template_id"}, Msg: `no document type template "payslip"; see GET /v1/docs/type-templates`, Type: "value_error"}}, errs.Violations(err)); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
}

// TestTemplatesExtract runs each template over a document written the
// way such documents are, so the templates' rules are known to work.
func TestTemplatesExtract(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		template string
		text     string
		want     map[string]any
		issues   []string
	}{
		{
			template: "receipt",
			text:     "Corner Cafe\nMerchant: Corner Cafe\nReceipt #: 4411\nDate: 03/02/2024\nVAT: 0.75\nTotal: 4.50\nPaid by: card\n",
			want: map[string]any{"merchant": "Corner Cafe", "receipt_number": "4411", "issue_date": "2024-03-02",
				"tax": int64(75), "total": int64(450), "payment_method": "Card"},
		},
		{
			template: "purchase_order",
			text:     "PURCHASE ORDER\nP.O. Number: PO-7781\nSupplier: ACME Supplies Ltd\nOrder date: 2024-02-01\nDelivery date: 2024-01-20\n\nBolts\t100\t0.10\t10.00\nNuts\t100\t0.05\t5.00\n\nTotal: 15.00\n",
			want: map[string]any{"po_number": "PO-7781", "supplier": "ACME Supplies Ltd", "order_date": "2024-02-01",
				"delivery_date": "2024-01-20", "total": int64(1500), "line_amounts": []any{int64(1000), int64(500)}},
			issues: []string{"dates:delivery_date"},
		},
		{
			template: "contract",
			text:     "SERVICES AGREEMENT\nCounterparty: Globex Corp\nEffective date: 1 March 2024\nEnd date: 28 February 2025\nRenewal: automatic\nEither party may terminate with a notice period of 30 days.\nContract value: USD 120,000.00\nGoverning law: England and Wales\n",
			want: map[string]any{"counterparty": "Globex Corp", "effective_date": "2024-03-01", "end_date": "2025-02-28",
				"renewal": "Automatic", "notice_days": float64(30), "contract_value": int64(12000000), "governing_law": "England and Wales"},
		},
		{
			template: "bank_statement",
			text:     "Bank: First Bank\nIBAN: GB29 NWBK 6016 1331 9268 19\nPeriod start: 2024-01-01\nPeriod end: 2024-01-31\nOpening balance: 1,000.00\nTotal credits: 500.00\nTotal debits: 200.00\nClosing balance: 1,350.00\n",
			want: map[string]any{"bank": "First Bank", "account_number": "GB29 NWBK 6016 1331 9268 19", "period_start": "2024-01-01",
				"period_end": "2024-01-31", "opening_balance": int64(100000), "total_credits": int64(50000),
				"total_debits": int64(20000), "closing_balance": int64(135000)},
			issues: []string{"balance:closing_balance"},
		},
		{
			template: "supplier_tax_form",
			text:     "Request for Taxpayer Identification Number and Certification\nName: Jane Smith\nBusiness name: Smith Consulting LLC\nFederal tax classification: LLC\nAddress: 1 Main Street\nCity, state, and ZIP code: Springfield, IL 62701\nEIN: 12-3456789\nEmail: jane@smith.example\nDate signed: 02/01/2024\n",
			want: map[string]any{"legal_name": "Jane Smith", "business_name": "Smith Consulting LLC", "tax_classification": "LLC",
				"address": "1 Main Street", "city_state_zip": "Springfield, IL 62701", "tin": "12-3456789",
				"email": "jane@smith.example", "signature_date": "2024-02-01"},
		},
	} {
		t.Run(test.template, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			typ, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: test.template})
			if err != nil {
				t.Fatal(err)
			}
			d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "d.txt", Data: []byte(test.text)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, values(d)); diff != "" {
				t.Errorf("extracted mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(test.issues, ruleIDs(d)); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
