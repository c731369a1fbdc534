package docs

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/go-pdf/fpdf"
	"github.com/google/go-cmp/cmp"
)

func TestWorkflowOptions(t *testing.T) {
	t.Parallel()
	broken := goodInvoice()
	broken.Total = "1,250.00"
	for _, test := range []struct {
		name       string
		wf         WorkflowIn
		data       func(b *bundle) []byte
		dup        bool
		wantStatus string
		wantEvents []string
		wantDue    *time.Time
	}{
		{
			name: "auto approve a clean document", wf: WorkflowIn{AutoApprove: ptr(true)},
			data: func(*bundle) []byte { return goodInvoice().text() }, wantStatus: StatusApproved,
			wantEvents: []string{EventReceived, EventExtracted, EventValidated, EventApproved},
		},
		{
			name: "auto approve leaves errors for review", wf: WorkflowIn{AutoApprove: ptr(true), ReviewSLADays: ptr(5)},
			data: func(*bundle) []byte { return broken.text() }, wantStatus: StatusNeedsReview,
			wantEvents: []string{EventReceived, EventExtracted, EventValidated}, wantDue: ptr(t0.AddDate(0, 0, 5)),
		},
		{
			name: "reject on error", wf: WorkflowIn{OnError: ptr(OnErrorReject)},
			data: func(*bundle) []byte { return broken.text() }, wantStatus: StatusRejected,
			wantEvents: []string{EventReceived, EventExtracted, EventValidated, EventRejected},
		},
		{
			name: "warnings go to review", dup: true,
			data: func(*bundle) []byte { return goodInvoice().text() }, wantStatus: StatusNeedsReview,
			wantEvents: []string{EventReceived, EventExtracted, EventValidated}, wantDue: ptr(t0.AddDate(0, 0, 2)),
		},
		{
			name: "warnings accepted", wf: WorkflowIn{OnWarning: ptr(OnWarningAccept), AutoApprove: ptr(true)}, dup: true,
			data: func(*bundle) []byte { return goodInvoice().text() }, wantStatus: StatusApproved,
			wantEvents: []string{EventReceived, EventExtracted, EventValidated, EventApproved},
		},
		{
			name: "review due after the sla", wf: WorkflowIn{ReviewSLADays: ptr(0)},
			data: func(*bundle) []byte { return goodInvoice().text() }, wantStatus: StatusValidated,
			wantEvents: []string{EventReceived, EventExtracted, EventValidated}, wantDue: ptr(t0),
		},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			wf := test.wf
			typ := b.invoiceType(t, func(p *DocTypePatch) { p.Workflow = &wf })
			if test.dup {
				other, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "supplier_invoice", Name: ptr("Other")})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: other.ID, Filename: "first.txt", Data: goodInvoice().text()}); err != nil {
					t.Fatal(err)
				}
			}
			d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: test.data(b)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != test.wantStatus {
				t.Errorf("status = %s, want %s (issues %v)", d.Status, test.wantStatus, ruleIDs(d))
			}
			names := b.sink.names(t)
			if diff := cmp.Diff(test.wantEvents, names[len(names)-len(test.wantEvents):]); diff != "" {
				t.Errorf("events mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(test.wantDue, d.DueAt); diff != "" {
				t.Errorf("due_at mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	broken := goodInvoice()
	broken.Tax = "150.00"
	v1 := broken.text()
	d, err := b.svc.Upload(b.ctx, b.tenant, "usr_1", UploadIn{TypeID: typ.ID, Title: "ACME February", Filename: "feb.txt", Data: v1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusNeedsReview {
		t.Fatalf("v1 status %s", d.Status)
	}
	b.clock.Advance(24 * time.Hour)
	v2 := goodInvoice().pdf(t)
	d, err = b.svc.AddVersion(b.ctx, b.tenant, "usr_2", d.ID, VersionIn{Filename: "feb-fixed.pdf", Data: v2})
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 2 || d.Status != StatusValidated || d.Filename != "feb-fixed.pdf" || d.ContentType != "application/pdf" || d.Title != "ACME February" {
		t.Errorf("v2: version %d status %s file %s %s", d.Version, d.Status, d.Filename, d.ContentType)
	}
	if !d.Review.EnteredAt.Equal(t0.Add(24 * time.Hour)) {
		t.Errorf("a new version opens a new review; entered %v", d.Review.EnteredAt)
	}
	want := []string{"received", "extracted", "validated", "received", "extracted", "validated"}
	if diff := cmp.Diff(want, historyActions(d)); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
	if d.History[3].Version != 2 || *d.History[3].By != "usr_2" || d.History[0].Version != 1 {
		t.Errorf("history versions %+v", d.History)
	}
	if len(d.Versions) != 2 || d.Versions[0].Filename != "feb.txt" || d.Versions[1].SizeBytes != int64(len(v2)) || *d.Versions[1].UploadedBy != "usr_2" {
		t.Errorf("versions %+v", d.Versions)
	}
	for n, wantData := range map[int][]byte{1: v1, 2: v2, 0: v2} {
		f, err := b.svc.File(b.ctx, b.tenant, d.ID, n)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := f.Copy(b.ctx, &buf); err != nil || !bytes.Equal(buf.Bytes(), wantData) {
			t.Errorf("version %d: download differs (err %v)", n, err)
		}
	}
	_, err = b.svc.File(b.ctx, b.tenant, d.ID, 3)
	wantKind(t, err, errs.NotFound)
	// An approved document may be re-submitted; the cycle starts again.
	if _, err := b.svc.Approve(b.ctx, b.tenant, "r", d.ID, ApproveIn{}); err != nil {
		t.Fatal(err)
	}
	d, err = b.svc.AddVersion(b.ctx, b.tenant, "usr_2", d.ID, VersionIn{Filename: "again.txt", Data: goodInvoice().text()})
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 3 || d.Status != StatusValidated || d.Review.Status != "pending" {
		t.Errorf("v3: %d %s %+v", d.Version, d.Status, d.Review)
	}
	_, err = b.svc.AddVersion(b.ctx, b.tenant, "u", "doc_missing", VersionIn{Filename: "x.txt", Data: []byte("x")})
	wantKind(t, err, errs.NotFound)
}

func TestUploadRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	small := NewService(Config{Store: b.st, Clock: b.clock, MaxUploadBytes: 100})
	good := goodInvoice().pdf(t)
	for _, test := range []struct {
		name string
		svc  *Service
		in   UploadIn
		kind error
		want []errs.Violation
	}{
		{name: "too large", svc: small, in: UploadIn{TypeID: typ.ID, Filename: "big.txt", Data: bytes.Repeat([]byte("x"), 101)}, kind: errs.TooLarge},
		{name: "image", in: UploadIn{TypeID: typ.ID, Filename: "scan.png", Data: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")}, kind: errs.Invalid,
			want: []errs.Violation{{Loc: []any{"file"}, Msg: "files of type image/png cannot be read; upload a PDF with a text layer, a CSV or a plain text file", Type: "value_error"}}},
		{name: "damaged pdf", in: UploadIn{TypeID: typ.ID, Filename: "x.pdf", Data: good[:len(good)/2]}, kind: errs.Invalid},
		{name: "nothing given", in: UploadIn{Priority: "asap", Tags: []string{""}}, kind: errs.Invalid, want: []errs.Violation{
			{Loc: []any{"type_id"}, Msg: "is required", Type: "missing"},
			{Loc: []any{"file"}, Msg: "is required", Type: "missing"},
			{Loc: []any{"priority"}, Msg: "must be one of low, normal, high, urgent", Type: "enum"},
			{Loc: []any{"tags", 0}, Msg: "a tag must be 1 to 40 characters", Type: "value_error"},
		}},
		{name: "empty file", in: UploadIn{TypeID: typ.ID, Filename: "e.txt", Data: []byte{}}, kind: errs.Invalid,
			want: []errs.Violation{{Loc: []any{"file"}, Msg: "the file is empty", Type: "value_error"}}},
		{name: "unknown type", in: UploadIn{TypeID: "dtp_nope", Filename: "i.txt", Data: []byte("x")}, kind: errs.Invalid,
			want: []errs.Violation{{Loc: []any{"type_id"}, Msg: "no document type dtp_nope", Type: "value_error"}}},
	} {
		svc := test.svc
		if svc == nil {
			svc = b.svc
		}
		_, err := svc.Upload(b.ctx, b.tenant, "u", test.in)
		if !errorsIs(err, test.kind) {
			t.Errorf("%s: err = %v, want %v", test.name, err, test.kind)
			continue
		}
		if test.want != nil {
			if diff := cmp.Diff(test.want, errs.Violations(err)); diff != "" {
				t.Errorf("%s: violations mismatch (-want +got):\n%s", test.name, diff)
			}
		}
	}
	// Nothing refused left a document, a file or a pending upload behind.
	docsLeft, _, err := b.svc.List(b.ctx, b.tenant, Filter{}, store.Page{})
	if err != nil || len(docsLeft) != 0 {
		t.Errorf("documents after refused uploads: %d (%v)", len(docsLeft), err)
	}
	if n := countKeys(t, b.st, store.Key(b.tenant, spaceFile)) + countKeys(t, b.st, store.Key(store.System, spacePending)); n != 0 {
		t.Errorf("%d file keys left", n)
	}
}

func countKeys(t *testing.T, st store.Store, prefix []byte) int {
	t.Helper()
	n := 0
	if err := st.View(context.Background(), func(r store.Reader) error {
		return r.Scan(store.ScanOptions{Prefix: prefix, KeysOnly: true}, func(_, _ []byte) error { n++; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestScannedPDFHasNoText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	p := fpdf.New("P", "mm", "A4", "")
	p.AddPage()
	p.Rect(20, 20, 100, 50, "F") // a picture, no text
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "scan.pdf", Data: buf.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	ids := ruleIDs(d)
	if len(ids) == 0 || ids[0] != "text:document" || d.Status != StatusNeedsReview {
		t.Errorf("issues %v status %s; want text:document first", ids, d.Status)
	}
}

func TestDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	first, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "a.txt", Data: goodInvoice().text()})
	if err != nil {
		t.Fatal(err)
	}
	// Same supplier and number, written differently.
	inv := goodInvoice()
	inv.Supplier, inv.Number = "acme supplies ltd.", "inv 2024 001"
	second, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "b.csv", Data: inv.csv()})
	if err != nil {
		t.Fatal(err)
	}
	if got := ruleIDs(second); !cmp.Equal(got, []string{"duplicate:invoice_number"}) || second.Validation.Issues[0].Severity != SeverityWarning {
		t.Fatalf("second: issues %v", got)
	}
	if ev := second.Validation.Issues[0].Evidence; !cmp.Equal(ev.Documents, []string{first.ID}) || *ev.Text != "inv 2024 001" {
		t.Errorf("evidence %+v", ev)
	}
	// A correction of the number clears the warning; the first document
	// was never a duplicate of anything.
	second, err = b.svc.CorrectFields(b.ctx, b.tenant, "r", second.ID, FieldsIn{Fields: raw(map[string]string{"invoice_number": `"INV-2024-002"`})})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Validation.Issues) != 0 || second.Status != StatusValidated {
		t.Errorf("after correction: %v %s", ruleIDs(second), second.Status)
	}
	// A rejected document is no duplicate.
	if _, err := b.svc.Reject(b.ctx, b.tenant, "r", first.ID, RejectIn{Note: "sent twice"}); err != nil {
		t.Fatal(err)
	}
	third, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "c.txt", Data: goodInvoice().text()})
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Validation.Issues) != 0 {
		t.Errorf("third: %v", ruleIDs(third))
	}
	// Another tenant's documents never count.
	other := b.invoiceTypeIn(t, "tnt_b")
	d, err := b.svc.Upload(b.ctx, "tnt_b", "u", UploadIn{TypeID: other.ID, Filename: "a.txt", Data: goodInvoice().text()})
	if err != nil || len(d.Validation.Issues) != 0 {
		t.Errorf("other tenant: %v %v", err, ruleIDs(d))
	}
}

func (b *bundle) invoiceTypeIn(t *testing.T, tenant string) *DocType {
	t.Helper()
	typ, err := b.svc.CreateFromTemplate(b.ctx, tenant, DraftIn{TemplateID: "supplier_invoice"})
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestFeedbackAgreement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	inv := goodInvoice()
	inv.Total = "1,250.00"
	d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: inv.text()})
	if err != nil {
		t.Fatal(err)
	}
	ag, err := b.svc.Agreement(b.ctx, b.tenant, typ.ID)
	if err != nil || ag.Overall != nil || ag.Items != 0 || len(ag.ByRule) != 0 {
		t.Fatalf("empty agreement = %+v, %v", ag, err)
	}
	_, err = b.svc.Feedback(b.ctx, b.tenant, "usr_a", d.ID, FeedbackIn{Results: []FeedbackItemIn{
		{RuleID: "sum:total", Verdict: "maybe"}, {RuleID: "made:up", Verdict: VerdictAgree}, {RuleID: strings.Repeat("x", 81), Verdict: VerdictAgree},
	}})
	if diff := cmp.Diff([]errs.Violation{
		{Loc: []any{"results", 0, "verdict"}, Msg: "must be one of agree, disagree", Type: "enum"},
		{Loc: []any{"results", 2, "rule_id"}, Msg: "must be at most 80 characters", Type: "string_too_long"},
	}, errs.Violations(err)); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
	_, err = b.svc.Feedback(b.ctx, b.tenant, "usr_a", d.ID, FeedbackIn{Results: []FeedbackItemIn{{RuleID: "made:up", Verdict: VerdictAgree}}})
	wantKind(t, err, errs.Invalid)
	_, err = b.svc.Feedback(b.ctx, b.tenant, "usr_a", d.ID, FeedbackIn{})
	wantKind(t, err, errs.Invalid)

	_, err = b.svc.Feedback(b.ctx, b.tenant, "usr_a", d.ID, FeedbackIn{Results: []FeedbackItemIn{
		{RuleID: "sum:total", Verdict: VerdictAgree}, {RuleID: "tax:tax", Verdict: VerdictAgree},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// usr_b disagrees on sum:total; usr_a changes their mind on tax:tax
	// (a second verdict replaces the first).
	if _, err = b.svc.Feedback(b.ctx, b.tenant, "usr_b", d.ID, FeedbackIn{Results: []FeedbackItemIn{{RuleID: "sum:total", Verdict: VerdictDisagree, Note: ptr("rounding")}}}); err != nil {
		t.Fatal(err)
	}
	ag, err = b.svc.Feedback(b.ctx, b.tenant, "usr_a", d.ID, FeedbackIn{Results: []FeedbackItemIn{{RuleID: "tax:tax", Verdict: VerdictDisagree}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Agreement{Overall: ptr(1.0 / 3), Items: 3, ByRule: []RuleAgreement{
		{RuleID: "sum:total", Agree: 1, Disagree: 1, Rate: 0.5},
		{RuleID: "tax:tax", Agree: 0, Disagree: 1, Rate: 0},
	}}
	if diff := cmp.Diff(want, ag); diff != "" {
		t.Errorf("agreement mismatch (-want +got):\n%s", diff)
	}
	got, _ := b.svc.Get(b.ctx, b.tenant, d.ID)
	if h := got.History[len(got.History)-1]; h.Action != "feedback" || *h.Note != "0 agree, 1 disagree" {
		t.Errorf("last history %+v", h)
	}
	_, err = b.svc.Agreement(b.ctx, b.tenant, "dtp_missing")
	wantKind(t, err, errs.NotFound)
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inv := b.invoiceType(t, nil)
	rcp, err := b.svc.CreateFromTemplate(b.ctx, b.tenant, DraftIn{TemplateID: "receipt"})
	if err != nil {
		t.Fatal(err)
	}
	up := func(typ, queue string, data []byte) string {
		t.Helper()
		b.clock.Advance(time.Millisecond)
		in := UploadIn{TypeID: typ, Filename: "f.txt", Data: data}
		if queue != "" {
			in.Queue = &queue
		}
		d, err := b.svc.Upload(b.ctx, b.tenant, "u", in)
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	broken := goodInvoice()
	broken.Total = "1"
	a := up(inv.ID, "ap", goodInvoice().text())                                      // validated
	c := up(inv.ID, "ap", broken.text())                                             // needs_review
	d := up(inv.ID, "", broken.text())                                               // needs_review
	e := up(rcp.ID, "ap", []byte("Merchant: Cafe\nDate: 2024-02-01\nTotal: 4.50\n")) // approved (auto)
	for _, test := range []struct {
		f    Filter
		want []string
	}{
		{f: Filter{}, want: []string{e, d, c, a}},
		{f: Filter{Status: StatusNeedsReview}, want: []string{d, c}},
		{f: Filter{TypeID: inv.ID}, want: []string{d, c, a}},
		{f: Filter{Queue: "ap"}, want: []string{e, c, a}},
		{f: Filter{Status: StatusNeedsReview, Queue: "ap"}, want: []string{c}},
		{f: Filter{TypeID: rcp.ID, Queue: "ap"}, want: []string{e}},
		{f: Filter{Status: StatusApproved, TypeID: rcp.ID, Queue: "ap"}, want: []string{e}},
		{f: Filter{Status: StatusRejected}, want: nil},
	} {
		got, _, err := b.svc.List(b.ctx, b.tenant, test.f, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range got {
			ids = append(ids, x.ID)
		}
		if diff := cmp.Diff(test.want, ids); diff != "" {
			t.Errorf("%+v mismatch (-want +got):\n%s", test.f, diff)
		}
	}
	page1, next, err := b.svc.List(b.ctx, b.tenant, Filter{}, store.Page{Limit: 3})
	if err != nil || len(page1) != 3 || next == "" {
		t.Fatalf("page 1: %d %q %v", len(page1), next, err)
	}
	page2, next, err := b.svc.List(b.ctx, b.tenant, Filter{}, store.Page{Limit: 3, Cursor: next})
	if err != nil || len(page2) != 1 || page2[0].ID != a || next != "" {
		t.Errorf("page 2: %v %q %v", page2, next, err)
	}
	_, _, err = b.svc.List(b.ctx, b.tenant, Filter{Status: "lost"}, store.Page{})
	wantKind(t, err, errs.Invalid)
	if got, _, _ := b.svc.List(b.ctx, "tnt_other", Filter{}, store.Page{}); len(got) != 0 {
		t.Errorf("another tenant sees %d documents", len(got))
	}
	_, err = b.svc.Get(b.ctx, "tnt_other", a)
	wantKind(t, err, errs.NotFound)
}

func TestLargeFilesAreChunked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	typ := b.invoiceType(t, nil)
	data := append(goodInvoice().text(), bytes.Repeat([]byte("Notes: nothing to see here.\n"), 45_000)...)
	d, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "long.txt", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	wantChunks := (len(data) + ChunkSize - 1) / ChunkSize
	if n := countKeys(t, b.st, store.Key(b.tenant, spaceFile)); n != wantChunks || wantChunks < 5 {
		t.Errorf("%d chunk keys, want %d", n, wantChunks)
	}
	f, err := b.svc.File(b.ctx, b.tenant, d.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Copy(b.ctx, &buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Errorf("download differs (err %v)", err)
	}
	if f.SHA256 == "" || f.SizeBytes != int64(len(data)) {
		t.Errorf("file %+v", f.Version)
	}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// An upload that stored its chunks but never became a document.
	if _, _, err := b.svc.putFile(b.ctx, b.tenant, "fil_orphan", bytes.Repeat([]byte("x"), 3*ChunkSize)); err != nil {
		t.Fatal(err)
	}
	typ := b.invoiceType(t, nil)
	if _, err := b.svc.Upload(b.ctx, b.tenant, "u", UploadIn{TypeID: typ.ID, Filename: "i.txt", Data: goodInvoice().text()}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.svc.Sweep(b.ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("early sweep: %d %v", n, err)
	}
	b.clock.Advance(2 * time.Hour)
	if n, err := b.svc.Sweep(b.ctx, time.Hour); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if n := countKeys(t, b.st, store.Key(b.tenant, spaceFile)); n != 1 {
		t.Errorf("%d chunk keys left, want the document's 1", n)
	}
}
