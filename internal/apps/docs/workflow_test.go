package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want kind %v", err, kind)
	}
}

func TestUploadExtractsInvoice(t *testing.T) {
	t.Parallel()
	inv := goodInvoice()
	want := map[string]any{
		"supplier": "ACME Supplies Ltd", "invoice_number": "INV-2024-001", "issue_date": "2024-02-01",
		"due_date": "2024-03-02", "currency": "EUR", "subtotal": int64(100000), "tax_rate": float64(20),
		"tax": int64(20000), "total": int64(120000), "line_amounts": []any{int64(50000), int64(50000)},
	}
	for _, test := range []struct {
		name, file, contentType string
		data                    func(t *testing.T) []byte
	}{
		{name: "text", file: "invoice.txt", contentType: "text/plain; charset=utf-8", data: func(*testing.T) []byte { return inv.text() }},
		{name: "csv", file: "invoice.csv", contentType: "text/csv; charset=utf-8", data: func(*testing.T) []byte { return inv.csv() }},
		{name: "pdf", file: "invoice.pdf", contentType: "application/pdf", data: func(t *testing.T) []byte { return inv.pdf(t) }},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			typ := b.invoiceType(t, nil)
			data := test.data(t)
			d, err := b.svc.Upload(b.ctx, b.tenant, "usr_1", UploadIn{TypeID: typ.ID, Filename: test.file, Data: data, Tags: []string{"q1", " q1 ", "acme"}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, values(d)); diff != "" {
				t.Errorf("extracted mismatch (-want +got):\n%s", diff)
			}
			if d.Status != StatusValidated || d.Validation.Status != ValidationPassed || len(d.Validation.Issues) != 0 {
				t.Errorf("status %s, validation %+v; want validated and passed", d.Status, d.Validation)
			}
			if d.ContentType != test.contentType || d.Filename != test.file || d.SizeBytes != int64(len(data)) || d.Version != 1 {
				t.Errorf("file = %s %s %d v%d", d.Filename, d.ContentType, d.SizeBytes, d.Version)
			}
			if d.Title != "invoice" || d.Priority != PriorityNormal || !cmp.Equal(d.Tags, []string{"q1", "acme"}) {
				t.Errorf("title %q priority %q tags %v", d.Title, d.Priority, d.Tags)
			}
			if diff := cmp.Diff([]string{"received", "extracted", "validated"}, historyActions(d)); diff != "" {
				t.Errorf("history mismatch (-want +got):\n%s", diff)
			}
			if d.Review == nil || d.Review.Reason != "approval" || d.DueAt == nil || !d.DueAt.Equal(t0.AddDate(0, 0, 2)) {
				t.Errorf("review %+v due %v; want pending approval due in 2 days", d.Review, d.DueAt)
			}
			// Every value cites text that is really on its page.
			for k, v := range d.Extracted {
				if v.Page == nil || *v.Page != 1 || *v.End <= *v.Start || v.Text == "" || v.Source != SourceExtraction {
					t.Errorf("%s: evidence %+v", k, v)
				}
			}
			evs := b.sink.events(t)
			if diff := cmp.Diff([]string{EventReceived, EventExtracted, EventValidated}, b.sink.names(t)); diff != "" {
				t.Fatalf("events mismatch (-want +got):\n%s", diff)
			}
			last := evs[2].Data
			fields := last["fields"].(map[string]any)
			if last["id"] != d.ID || last["status"] != StatusValidated || last["type_name"] != "Supplier invoice" ||
				fields["total"] != float64(120000) || fields["issue_date"] != "2024-02-01" || evs[2].Tenant != b.tenant {
				t.Errorf("validated event data = %v", last)
			}
			if v := last["validation"].(map[string]any); v["status"] != ValidationPassed {
				t.Errorf("validated event validation = %v", v)
			}
			if got := evs[0].Data["fields"].(map[string]any); len(got) != 0 {
				t.Errorf("received event has fields %v, want none yet", got)
			}
			var buf bytes.Buffer
			f, err := b.svc.File(b.ctx, b.tenant, d.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Copy(b.ctx, &buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
				t.Errorf("download differs from upload (err %v)", err)
			}
		})
	}
}

// offsets returns the code-point offsets of the first s in text.
func offsets(t *testing.T, text []byte, s string) (int, int) {
	t.Helper()
	i := strings.Index(string(text), s)
	if i < 0 {
		t.Fatalf("%q not in the text", s)
	}
	start := len([]rune(string(text[:i])))
	return start, start + len([]rune(s))
}

func TestValidationIssuesWithEvidence(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name   string
		change func(*invoice)
		// want builds the expected issues from the uploaded text.
		want func(t *testing.T, text []byte) []Issue
	}{
		{
			name:   "total is not the sum of the lines",
			change: func(i *invoice) { i.Total = "1,250.00" },
			want: func(t *testing.T, text []byte) []Issue {
				s, e := offsets(t, text, "1,250.00")
				return []Issue{{
					RuleID: "sum:total", Field: ptr("total"), Severity: SeverityError,
					Message: "Total 1250.00 does not equal the sum of the 2 lines 1000.00 (or 1200.00 with tax)",
					Evidence: Evidence{Text: ptr("1,250.00"), Page: ptr(1), Start: &s, End: &e, Values: map[string]any{
						"total": int64(125000), "lines": []int64{50000, 50000}, "sum_of_lines": int64(100000),
						"tax": int64(20000), "sum_of_lines_plus_tax": int64(120000), "difference": int64(5000),
					}},
				}}
			},
		},
		{
			name:   "tax does not match the rate",
			change: func(i *invoice) { i.Rate = "19%" },
			want: func(t *testing.T, text []byte) []Issue {
				s, e := offsets(t, text, "200.00\n")
				e--
				return []Issue{{
					RuleID: "tax:tax", Field: ptr("tax"), Severity: SeverityError,
					Message: "Tax 200.00 is not 19% of 1000.00 (expected 190.00)",
					Evidence: Evidence{Text: ptr("200.00"), Page: ptr(1), Start: &s, End: &e, Values: map[string]any{
						"tax": int64(20000), "subtotal": int64(100000), "tax_rate": float64(19), "expected_tax": int64(19000), "difference": int64(1000),
					}},
				}}
			},
		},
		{
			name:   "due date before the invoice date",
			change: func(i *invoice) { i.Due = "01/15/2024" },
			want: func(t *testing.T, text []byte) []Issue {
				s, e := offsets(t, text, "01/15/2024")
				return []Issue{{
					RuleID: "dates:due_date", Field: ptr("due_date"), Severity: SeverityError,
					Message:  "Due date 2024-01-15 is before invoice date 2024-02-01",
					Evidence: Evidence{Text: ptr("01/15/2024"), Page: ptr(1), Start: &s, End: &e, Values: map[string]any{"issue_date": "2024-02-01", "due_date": "2024-01-15"}},
				}}
			},
		},
		{
			name:   "required field missing",
			change: func(i *invoice) { i.Number = "" },
			want: func(t *testing.T, text []byte) []Issue {
				return []Issue{{
					RuleID: "required:invoice_number", Field: ptr("invoice_number"), Severity: SeverityError,
					Message: "Invoice number is required but was not found",
					Evidence: Evidence{Searched: []string{"label Invoice number", "label Invoice No.", "label Invoice #", "label Invoice ID", "label Rechnungsnummer"},
						Values: map[string]any{"pages_searched": 1}},
				}}
			},
		},
		{
			name:   "unknown currency and unreadable total",
			change: func(i *invoice) { i.Currency = "Doubloons"; i.Total = "twelve hundred" },
			want: func(t *testing.T, text []byte) []Issue {
				cs, ce := offsets(t, text, "Doubloons")
				ts, te := offsets(t, text, "twelve hundred")
				return []Issue{
					{
						RuleID: "option:currency", Field: ptr("currency"), Severity: SeverityError,
						Message:  `Currency: "Doubloons" is not one of the options ` + strings.Join(currencies, ", "),
						Evidence: Evidence{Text: ptr("Doubloons"), Page: ptr(1), Start: &cs, End: &ce, Values: map[string]any{"options": currencies}},
					},
					{
						RuleID: "type:total", Field: ptr("total"), Severity: SeverityError,
						Message:  `Total: "twelve hundred" has no digits`,
						Evidence: Evidence{Text: ptr("twelve hundred"), Page: ptr(1), Start: &ts, End: &te, Values: map[string]any{"expected_type": "money"}},
					},
				}
			},
		},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			typ := b.invoiceType(t, nil)
			inv := goodInvoice()
			test.change(&inv)
			text := inv.text()
			if inv.Number == "" {
				text = bytes.Replace(text, []byte("Invoice number: \n"), nil, 1)
			}
			d, err := b.svc.Upload(b.ctx, b.tenant, "usr_1", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: text})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want(t, text), d.Validation.Issues); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
			if d.Status != StatusNeedsReview || d.Validation.Status != ValidationErrors || d.Review.Reason != "errors" {
				t.Errorf("status %s / %s / %s, want needs_review with errors", d.Status, d.Validation.Status, d.Review.Reason)
			}
		})
	}
}

func TestStatusWalk(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	inv := goodInvoice()
	inv.Total = "1,250.00"
	text := inv.text()
	d, err := b.svc.Upload(b.ctx, b.tenant, "usr_up", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: text, Queue: ptr("ap-team"), Priority: PriorityHigh})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusNeedsReview || *d.Queue != "ap-team" || *d.Review.Queue != "ap-team" || d.Priority != PriorityHigh {
		t.Fatalf("after upload: %s queue %v", d.Status, d.Queue)
	}
	entered := *d.Review.EnteredAt

	// Approving with errors is refused; rejecting needs a note.
	_, err = b.svc.Approve(b.ctx, b.tenant, "usr_rev", d.ID, ApproveIn{})
	wantKind(t, err, errs.Conflict)
	_, err = b.svc.Reject(b.ctx, b.tenant, "usr_rev", d.ID, RejectIn{Note: "  "})
	wantKind(t, err, errs.Invalid)

	// A correction that does not parse is a 422 naming the field.
	_, err = b.svc.CorrectFields(b.ctx, b.tenant, "usr_rev", d.ID, FieldsIn{Fields: raw(map[string]string{
		"total": `"lots"`, "nope": `1`, "issue_date": `5`,
	})})
	wantKind(t, err, errs.Invalid)
	if diff := cmp.Diff([]errs.Violation{
		{Loc: []any{"fields", "issue_date"}, Msg: "a date field takes text", Type: "type_error"},
		{Loc: []any{"fields", "nope"}, Msg: "is not a field of the document's type", Type: "extra_forbidden"},
		{Loc: []any{"fields", "total"}, Msg: `"lots" has no digits`, Type: "value_error"},
	}, errs.Violations(err)); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}

	// The reviewer corrects the total (in cents) and the document is clean.
	b.clock.Advance(time.Hour)
	d, err = b.svc.CorrectFields(b.ctx, b.tenant, "usr_rev", d.ID, FieldsIn{Fields: raw(map[string]string{"total": `120000`}), Note: ptr("typo on the invoice")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusValidated || d.Validation.Status != ValidationPassed {
		t.Fatalf("after correction: %s %+v", d.Status, d.Validation)
	}
	if tv := d.Extracted["total"]; tv.Value != int64(120000) || tv.Source != SourceCorrection || *tv.CorrectedBy != "usr_rev" || tv.Page != nil || tv.Text != "1200.00" {
		t.Errorf("corrected total = %+v", tv)
	}
	if !d.Review.EnteredAt.Equal(entered) {
		t.Errorf("review entered %v, want kept %v", d.Review.EnteredAt, entered)
	}
	b.clock.Advance(time.Hour)
	d, err = b.svc.Approve(b.ctx, b.tenant, "usr_rev", d.ID, ApproveIn{Note: ptr("ok to pay")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusApproved || d.DueAt != nil || d.Review.Status != StatusApproved || *d.Review.DecidedBy != "usr_rev" || *d.Review.Note != "ok to pay" {
		t.Errorf("after approve: %s due %v review %+v", d.Status, d.DueAt, d.Review)
	}
	wantHist := []HistoryEntry{
		{At: t0, Action: "received", By: ptr("usr_up"), Note: ptr(fmt.Sprintf("version 1: i.txt (text/plain, %d bytes, 1 pages)", len(text))), Version: 1},
		{At: t0, Action: "extracted", Note: ptr("10 of 11 fields found"), Version: 1},
		{At: t0, Action: "validated", Note: ptr("1 errors, 0 warnings: sum:total"), Version: 1},
		{At: t0.Add(time.Hour), Action: "fields_corrected", By: ptr("usr_rev"), Note: ptr("corrected total: typo on the invoice"), Version: 1},
		{At: t0.Add(time.Hour), Action: "validated", Note: ptr("passed"), Version: 1},
		{At: t0.Add(2 * time.Hour), Action: "approved", By: ptr("usr_rev"), Note: ptr("ok to pay"), Version: 1},
	}
	if diff := cmp.Diff(wantHist, d.History); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
	// Decided documents refuse further decisions and corrections.
	_, err = b.svc.Approve(b.ctx, b.tenant, "usr_rev", d.ID, ApproveIn{})
	wantKind(t, err, errs.Conflict)
	_, err = b.svc.Reject(b.ctx, b.tenant, "usr_rev", d.ID, RejectIn{Note: "late"})
	wantKind(t, err, errs.Conflict)
	_, err = b.svc.CorrectFields(b.ctx, b.tenant, "usr_rev", d.ID, FieldsIn{Fields: raw(nil)})
	wantKind(t, err, errs.Conflict)
	if diff := cmp.Diff([]string{EventReceived, EventExtracted, EventValidated, EventValidated, EventApproved}, b.sink.names(t)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	ev := b.sink.events(t)[4].Data
	if ev["by"] != "usr_rev" || ev["note"] != "ok to pay" || ev["status"] != StatusApproved {
		t.Errorf("approved event = %v", ev)
	}
	for _, a := range d.Actions {
		if (a.Name == "approve" || a.Name == "reject" || a.Name == "correct_fields") && a.Allowed {
			t.Errorf("action %s allowed on an approved document", a.Name)
		}
	}
}

func TestReject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: goodInvoice().text()})
	if err != nil {
		t.Fatal(err)
	}
	d, err = b.svc.Reject(b.ctx, b.tenant, "usr_rev", d.ID, RejectIn{Note: "not our supplier"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusRejected || *d.Review.Note != "not our supplier" || d.DueAt != nil {
		t.Errorf("after reject: %+v", d)
	}
	if names := b.sink.names(t); names[len(names)-1] != EventRejected {
		t.Errorf("last event %v", names)
	}
}

// raw builds FieldsIn values from JSON texts.
func raw(m map[string]string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out
}

func errorsIs(err, kind error) bool { return errors.Is(err, kind) }
