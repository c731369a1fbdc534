package httpapi_test

// HTTP tests of the documents app: types, uploads of real text, CSV and
// PDF files, extraction and validation with evidence, review, versions,
// downloads, feedback, limits, permissions, and a process triggered by
// docs.document.validated.

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/go-pdf/fpdf"
	"github.com/google/go-cmp/cmp"
)

// docView is a DocumentOut, as far as the tests look.
type docView struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	TypeID      string `json:"type_id"`
	TypeName    string `json:"type_name"`
	Status      string `json:"status"`
	Version     int    `json:"version"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	Extracted   map[string]struct {
		Value any    `json:"value"`
		Text  string `json:"text"`
		Page  *int   `json:"page"`
		Start *int   `json:"start"`
		End   *int   `json:"end"`
	} `json:"extracted"`
	Validation *struct {
		Status string `json:"status"`
		Issues []struct {
			RuleID   string         `json:"rule_id"`
			Field    *string        `json:"field"`
			Severity string         `json:"severity"`
			Message  string         `json:"message"`
			Evidence map[string]any `json:"evidence"`
		} `json:"issues"`
	} `json:"validation"`
	Review  map[string]any `json:"review"`
	DueAt   *string        `json:"due_at"`
	History []struct {
		Action string  `json:"action"`
		By     *string `json:"by"`
		Note   *string `json:"note"`
	} `json:"history"`
	Actions  []map[string]any `json:"actions"`
	Priority string           `json:"priority"`
	Queue    *string          `json:"queue"`
	Tags     []string         `json:"tags"`
}

func (d docView) value(key string) any { return d.Extracted[key].Value }

func (d docView) rules() []string {
	var out []string
	if d.Validation != nil {
		for _, is := range d.Validation.Issues {
			out = append(out, is.RuleID)
		}
	}
	return out
}

func (d docView) actions() []string {
	var out []string
	for _, h := range d.History {
		out = append(out, h.Action)
	}
	return out
}

// multipartBody builds an upload form: fields are name, value pairs.
func multipartBody(t testing.TB, filename string, file []byte, fields ...string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(file)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

// upload posts a multipart form to path.
func (s *testServer) upload(t *testing.T, token, path, filename string, file []byte, fields ...string) *testResponse {
	t.Helper()
	body, ct := multipartBody(t, filename, file, fields...)
	return s.do(t, "POST", path, token, body, "Content-Type", ct)
}

func (s *testServer) uploadDoc(t *testing.T, token, typeID, filename string, file []byte, fields ...string) docView {
	t.Helper()
	var d docView
	r := s.upload(t, token, "/v1/docs/documents", filename, file, append([]string{"type_id", typeID}, fields...)...).want(t, http.StatusCreated)
	r.decode(t, &d)
	if got, want := r.Header.Get("Location"), "/api/v1/docs/documents/"+d.ID; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	return d
}

// invoiceText is a supplier invoice as plain text.
func invoiceText(number, total, due string) []byte {
	return []byte(fmt.Sprintf("INVOICE\nSupplier: ACME Supplies Ltd\nInvoice number: %s\nInvoice date: 1 Feb 2024\n"+
		"Due date: %s\nCurrency: EUR\n\nDescription\tQty\tUnit price\tAmount\nWidgets\t10\t50.00\t500.00\n"+
		"Gadgets\t2\t250.00\t500.00\n\nSubtotal: 1,000.00\nTax rate: 20%%\nTax: 200.00\nTotal: %s\n", number, due, total))
}

// invoicePDF is the same invoice as a one-page PDF with a text layer.
func invoicePDF(t *testing.T, number, total string) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.AddPage()
	p.SetFont("Helvetica", "", 11)
	y := 20.0
	for _, l := range strings.Split(string(invoiceText(number, total, "2024-03-02")), "\n") {
		if strings.Contains(l, "\t") {
			p.SetXY(20, y-5)
			for _, c := range strings.Split(l, "\t") {
				p.CellFormat(40, 7, c, "", 0, "L", false, 0, "")
			}
		} else if l != "" {
			p.Text(20, y, l)
		}
		y += 7
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func invoiceCSV(number, total string) []byte {
	return []byte("Supplier,ACME Supplies Ltd\nInvoice number," + number + "\nInvoice date,2024-02-01\nDue date,2024-03-02\n" +
		"Currency,EUR\nSubtotal,\"1,000.00\"\nTax rate,20%\nTax,200.00\nTotal,\"" + total + "\"\n")
}

func (s *testServer) invoiceType(t *testing.T, token string) string {
	t.Helper()
	var typ struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		RuleCount int    `json:"rule_count"`
	}
	r := s.do(t, "POST", "/v1/docs/types/from-template", token, `{"template_id": "supplier_invoice"}`).want(t, http.StatusCreated)
	r.decode(t, &typ)
	if typ.Name != "Supplier invoice" || typ.RuleCount != 18 || r.Header.Get("Location") != "/api/v1/docs/types/"+typ.ID {
		t.Fatalf("type %+v, Location %q", typ, r.Header.Get("Location"))
	}
	return typ.ID
}

func TestDocsHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)

	// Three formats, one set of values.
	wantValues := map[string]any{"supplier": "ACME Supplies Ltd", "issue_date": "2024-02-01", "due_date": "2024-03-02",
		"currency": "EUR", "subtotal": float64(100000), "tax_rate": float64(20), "tax": float64(20000), "total": float64(120000)}
	var pdfDoc docView
	for i, f := range []struct {
		name string
		data []byte
		ct   string
	}{
		{"a.txt", invoiceText("INV-1", "1,200.00", "2024-03-02"), "text/plain; charset=utf-8"},
		{"b.csv", invoiceCSV("INV-2", "1,200.00"), "text/csv; charset=utf-8"},
		{"c.pdf", invoicePDF(t, "INV-3", "1,200.00"), "application/pdf"},
	} {
		d := s.uploadDoc(t, admin, typeID, f.name, f.data, "title", "Invoice "+f.name, "tags", "acme, feb", "priority", "high")
		got := map[string]any{}
		for k := range wantValues {
			got[k] = d.value(k)
		}
		if diff := cmp.Diff(wantValues, got); diff != "" {
			t.Errorf("%s: values mismatch (-want +got):\n%s", f.name, diff)
		}
		if d.value("invoice_number") != fmt.Sprintf("INV-%d", i+1) || d.Status != "validated" || d.ContentType != f.ct ||
			d.Title != "Invoice "+f.name || d.Priority != "high" || !cmp.Equal(d.Tags, []string{"acme", "feb"}) {
			t.Errorf("%s: %+v", f.name, d)
		}
		if f.name == "c.pdf" {
			pdfDoc = d
		}
	}
	if e := pdfDoc.Extracted["total"]; e.Text != "1,200.00" || *e.Page != 1 || *e.End-*e.Start != 8 {
		t.Errorf("pdf total evidence %+v", e)
	}

	// An invoice that does not add up goes to review, with evidence.
	var bad docView
	s.upload(t, admin, "/v1/docs/documents", "bad.txt", invoiceText("INV-4", "1,250.00", "2024-01-15"), "type_id", typeID, "queue", "ap").
		want(t, http.StatusCreated).decode(t, &bad)
	if diff := cmp.Diff([]string{"sum:total", "dates:due_date"}, bad.rules()); diff != "" {
		t.Errorf("issues mismatch (-want +got):\n%s", diff)
	}
	ev := bad.Validation.Issues[0].Evidence
	if bad.Status != "needs_review" || ev["text"] != "1,250.00" || ev["page"] != float64(1) || ev["values"].(map[string]any)["sum_of_lines"] != float64(100000) {
		t.Errorf("review: %s, evidence %v", bad.Status, ev)
	}
	if bad.DueAt == nil || *bad.DueAt != testStart.AddDate(0, 0, 2).Format(time.RFC3339) || *bad.Queue != "ap" {
		t.Errorf("due_at %v queue %v", bad.DueAt, bad.Queue)
	}
	path := "/v1/docs/documents/" + bad.ID
	if got := s.do(t, "POST", path+"/approve", admin, nil).want(t, http.StatusConflict).detail(t); !strings.Contains(got, "2 validation errors") {
		t.Errorf("approve detail %q", got)
	}
	s.do(t, "POST", path+"/reject", admin, `{}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", path+"/fields", admin, `{"fields": {"total": "lots"}}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", path+"/fields", admin, `{"fields": "x"}`).want(t, http.StatusUnprocessableEntity)
	var fixed docView
	s.do(t, "PATCH", path+"/fields", admin, `{"fields": {"total": "1.200,00", "due_date": "03/02/2024"}, "note": "checked with ACME"}`).
		want(t, http.StatusOK).decode(t, &fixed)
	if fixed.Status != "validated" || len(fixed.rules()) != 0 || fixed.value("total") != float64(120000) || fixed.value("due_date") != "2024-03-02" {
		t.Errorf("after fields: %s %v %v", fixed.Status, fixed.rules(), fixed.Extracted["total"])
	}
	var approved docView
	s.do(t, "POST", path+"/approve", admin, `{"note": "pay"}`).want(t, http.StatusOK).decode(t, &approved)
	if approved.Status != "approved" || approved.DueAt != nil || approved.Review["decided_by"] == nil {
		t.Errorf("approved %+v", approved)
	}
	s.do(t, "POST", path+"/approve", admin, nil).want(t, http.StatusConflict)
	s.do(t, "POST", path+"/reject", admin, `{"note": "late"}`).want(t, http.StatusConflict)
	s.do(t, "POST", path+"/fields", admin, `{"fields": {}}`).want(t, http.StatusConflict)

	// A new version restarts the cycle and keeps the history.
	v2 := invoicePDF(t, "INV-4", "1,200.00")
	var d2 docView
	r := s.upload(t, admin, path+"/versions", "bad-v2.pdf", v2).want(t, http.StatusCreated)
	r.decode(t, &d2)
	wantHist := []string{"received", "extracted", "validated", "fields_corrected", "validated", "approved", "received", "extracted", "validated"}
	if d2.Version != 2 || d2.Status != "validated" || d2.Filename != "bad-v2.pdf" || !cmp.Equal(d2.actions(), wantHist) {
		t.Errorf("v2: %d %s %s %v", d2.Version, d2.Status, d2.Filename, d2.actions())
	}
	for v, want := range map[string][]byte{"1": invoiceText("INV-4", "1,250.00", "2024-01-15"), "2": v2, "": v2} {
		q := ""
		if v != "" {
			q = "?version=" + v
		}
		resp := s.do(t, "GET", path+"/file"+q, admin, nil).want(t, http.StatusOK)
		if !bytes.Equal(resp.Body, want) {
			t.Errorf("version %q: download differs", v)
		}
		if v == "1" && (resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("Content-Disposition") != `attachment; filename=bad.txt`) {
			t.Errorf("headers %v", resp.Header)
		}
	}
	s.do(t, "GET", path+"/file?version=3", admin, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", path+"/file?version=x", admin, nil).want(t, http.StatusUnprocessableEntity)
	s.do(t, "GET", path+"/file?version=0", admin, nil).want(t, http.StatusUnprocessableEntity)

	// Feedback and agreement.
	var ag struct {
		Overall *float64 `json:"overall"`
		Items   int      `json:"items"`
		ByRule  []struct {
			RuleID string  `json:"rule_id"`
			Rate   float64 `json:"rate"`
		} `json:"by_rule"`
	}
	s.do(t, "POST", path+"/feedback", admin, `{"results": [{"rule_id": "sum:total", "verdict": "agree"}, {"rule_id": "dates:due_date", "verdict": "disagree", "note": "ACME uses US dates"}]}`).
		want(t, http.StatusOK).decode(t, &ag)
	if ag.Items != 2 || *ag.Overall != 0.5 || len(ag.ByRule) != 2 || ag.ByRule[0].RuleID != "dates:due_date" {
		t.Errorf("agreement %+v", ag)
	}
	s.do(t, "GET", "/v1/docs/types/"+typeID+"/agreement", admin, nil).want(t, http.StatusOK).decode(t, &ag)
	if ag.Items != 2 {
		t.Errorf("GET agreement %+v", ag)
	}
	s.do(t, "POST", path+"/feedback", admin, `{"results": []}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", path+"/feedback", admin, `{"results": [{"rule_id": "x:y", "verdict": "agree"}]}`).want(t, http.StatusUnprocessableEntity)

	// Lists from indexes, newest first, filtered.
	if got := s.listIDs(t, admin, "/v1/docs/documents?queue=ap"); !cmp.Equal(got, []string{bad.ID}) {
		t.Errorf("queue=ap: %v", got)
	}
	if got := s.listIDs(t, admin, "/v1/docs/documents?status=validated&type_id="+typeID+"&limit=1"); len(got) != 4 || !slices.Contains(got, bad.ID) {
		t.Errorf("validated: %v", got)
	}
	s.do(t, "GET", "/v1/docs/documents?status=lost", admin, nil).want(t, http.StatusUnprocessableEntity)

	// Types and templates.
	var tpls []struct {
		ID string `json:"id"`
	}
	s.do(t, "GET", "/v1/docs/type-templates", admin, nil).want(t, http.StatusOK).decode(t, &tpls)
	if len(tpls) != 6 {
		t.Errorf("%d templates", len(tpls))
	}
	s.do(t, "DELETE", "/v1/docs/types/"+typeID, admin, nil).want(t, http.StatusConflict)
	var made struct {
		ID          string  `json:"id"`
		Description *string `json:"description"`
		RuleCount   int     `json:"rule_count"`
		Workflow    struct {
			AutoApprove   bool   `json:"auto_approve"`
			OnError       string `json:"on_error"`
			OnWarning     string `json:"on_warning"`
			ReviewSLADays int    `json:"review_sla_days"`
		} `json:"workflow"`
	}
	s.do(t, "POST", "/v1/docs/types", admin, `{"name": "Credit note", "fields": [{"key": "number", "label": "Credit note number", "required": true}, {"key": "amount", "label": "Amount", "type": "money"}]}`).
		want(t, http.StatusCreated).decode(t, &made)
	if made.RuleCount != 2 || made.Workflow.OnError != "review" || made.Workflow.OnWarning != "review" || made.Workflow.ReviewSLADays != 2 || made.Workflow.AutoApprove {
		t.Errorf("created %+v", made)
	}
	s.do(t, "POST", "/v1/docs/types", admin, `{"name": "credit note"}`).want(t, http.StatusConflict)
	s.do(t, "PATCH", "/v1/docs/types/"+made.ID, admin, `{"description": "Refunds", "workflow": {"review_sla_days": 400}}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "PATCH", "/v1/docs/types/dtp_nope", admin, `{"workflow": {"review_sla_days": 400}}`).want(t, http.StatusNotFound)
	s.do(t, "PATCH", "/v1/docs/types/"+made.ID, admin, `{"description": "Refunds", "workflow": {"auto_approve": true}}`).want(t, http.StatusOK).decode(t, &made)
	if *made.Description != "Refunds" || !made.Workflow.AutoApprove || made.Workflow.ReviewSLADays != 2 {
		t.Errorf("patched %+v", made)
	}
	s.do(t, "DELETE", "/v1/docs/types/"+made.ID, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/docs/types/"+made.ID, admin, nil).want(t, http.StatusNotFound)
	s.do(t, "POST", "/v1/docs/types/from-template", admin, `{"template_id": "nope"}`).want(t, http.StatusUnprocessableEntity)

	// Another workspace sees none of it.
	other := s.devLogin(t, `{"tenant_id": "other", "user_id": "eve"}`).Token
	s.do(t, "GET", path, other, nil).want(t, http.StatusNotFound)
	s.do(t, "GET", path+"/file", other, nil).want(t, http.StatusNotFound)
	s.do(t, "POST", path+"/approve", other, nil).want(t, http.StatusNotFound)
	s.upload(t, other, "/v1/docs/documents", "a.txt", invoiceText("X", "1", "2024-03-02"), "type_id", typeID).want(t, http.StatusUnprocessableEntity)
	if got := s.listIDs(t, other, "/v1/docs/documents"); len(got) != 0 {
		t.Errorf("other tenant lists %v", got)
	}
}

func TestDocsHTTPUploadsRefused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true, MaxUploadBytes: 4096})
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)
	for _, test := range []struct {
		name   string
		file   []byte
		fname  string
		fields []string
		status int
		want   string
	}{
		{name: "too large", fname: "big.txt", file: bytes.Repeat([]byte("a"), 4097), fields: []string{"type_id", typeID}, status: 413},
		{name: "image", fname: "scan.png", file: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), fields: []string{"type_id", typeID}, status: 422, want: "files of type image/png cannot be read"},
		{name: "zip", fname: "a.zip", file: []byte("PK\x03\x04\x14\x00\x00\x00"), fields: []string{"type_id", typeID}, status: 422, want: "application/zip"},
		{name: "broken pdf", fname: "a.pdf", file: []byte("%PDF-1.4\n1 0 obj <<"), fields: []string{"type_id", typeID}, status: 422, want: "the PDF cannot be read"},
		{name: "nothing", status: 422, want: `"loc":["body","type_id"]`},
		{name: "unknown type", fname: "a.txt", file: []byte("Total: 1"), fields: []string{"type_id", "dtp_nope"}, status: 422, want: "no document type dtp_nope"},
	} {
		r := s.upload(t, admin, "/v1/docs/documents", test.fname, test.file, test.fields...)
		if r.Status != test.status || !strings.Contains(string(r.Body), test.want) {
			t.Errorf("%s: %d %s, want %d containing %q", test.name, r.Status, r.Body, test.status, test.want)
		}
	}
	// Missing type_id and file are reported together.
	r := s.upload(t, admin, "/v1/docs/documents", "", nil, "title", "x").want(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `["body","type_id"]`) || !strings.Contains(string(r.Body), `["body","file"]`) {
		t.Errorf("violations %s", r.Body)
	}
	// A JSON body is no upload.
	s.do(t, "POST", "/v1/docs/documents", admin, `{"type_id": "x"}`).want(t, http.StatusUnprocessableEntity)
	// The JSON limit (1 MiB) does not apply to uploads: a 3 KiB file under
	// a 4 KiB upload limit passes, and one a little larger than 4 KiB
	// as a new version is a 413.
	d := s.uploadDoc(t, admin, typeID, "ok.txt", invoiceText("INV-9", "1,200.00", "2024-03-02"))
	s.upload(t, admin, "/v1/docs/documents/"+d.ID+"/versions", "big.txt", bytes.Repeat([]byte("b"), 5000)).want(t, http.StatusRequestEntityTooLarge)
	s.upload(t, admin, "/v1/docs/documents/doc_nope/versions", "a.txt", []byte("x")).want(t, http.StatusNotFound)
}

func TestDocsHTTPPermissions(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)
	d := s.uploadDoc(t, admin, typeID, "a.txt", invoiceText("INV-1", "1,200.00", "2024-03-02"))
	member := s.newKey(t, admin, `{"name": "member", "roles": ["member"]}`).Secret
	viewer := s.newKey(t, admin, `{"name": "viewer", "roles": ["viewer"]}`).Secret
	approver := s.newKey(t, admin, `{"name": "approver", "roles": ["approver"]}`).Secret
	crmOnly := s.newKey(t, admin, `{"name": "crm", "apps": ["crm"]}`).Secret
	path := "/v1/docs/documents/" + d.ID
	s.do(t, "GET", path, viewer, nil).want(t, http.StatusOK)
	s.upload(t, viewer, "/v1/docs/documents", "a.txt", []byte("x"), "type_id", typeID).want(t, http.StatusForbidden)
	s.do(t, "POST", "/v1/docs/types", viewer, `{"name": "x"}`).want(t, http.StatusForbidden)
	s.uploadDoc(t, member, typeID, "b.txt", invoiceText("INV-2", "1,200.00", "2024-03-02"))
	if got := s.do(t, "POST", path+"/approve", member, nil).want(t, http.StatusForbidden).detail(t); got != "missing permission docs.review" {
		t.Errorf("detail %q", got)
	}
	s.do(t, "POST", path+"/fields", member, `{"fields": {}}`).want(t, http.StatusForbidden)
	s.do(t, "POST", path+"/feedback", member, `{"results": [{"rule_id": "sum:total", "verdict": "agree"}]}`).want(t, http.StatusForbidden)
	s.do(t, "GET", path, crmOnly, nil).want(t, http.StatusForbidden)
	s.do(t, "POST", path+"/approve", approver, nil).want(t, http.StatusOK)
	s.do(t, "GET", path, "", nil).want(t, http.StatusUnauthorized)
}

// TestDocsTriggerProcess: a process triggered by docs.document.validated
// with a filter on the extracted total starts for the right documents
// only, and its step reaches the document through document.extract.
func TestDocsTriggerProcess(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)
	proc := s.createProc(t, admin, `{
	  "name": "Large clean invoices", "function": "finance",
	  "trigger": {"type": "event", "event": "docs.document.validated",
	              "filter": {"status": "validated", "fields.total": {"gte": 100000}, "type_name": "Supplier invoice"}},
	  "steps": [{"key": "extract", "type": "execute", "capability": "document.extract",
	             "config": {"args": {"document_id": "${trigger.data.id}"}}}]
	}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	started := s.ws.Subscribe(ctx, bas.SubscribeParams{Tenant: s.tenantOf(t, admin), Names: []string{"process.run.started"}})
	// Not for these: too small, and not clean. (The clock moves between
	// uploads so the events' ids, and so their dispatch, are in order.)
	s.uploadDoc(t, admin, typeID, "small.txt", []byte("Supplier: ACME\nInvoice number: S-1\nInvoice date: 2024-02-01\nTotal: 99.00\n"))
	s.clock.Advance(time.Millisecond)
	s.uploadDoc(t, admin, typeID, "bad.txt", invoiceText("INV-8", "1,250.00", "2024-03-02"))
	s.clock.Advance(time.Millisecond)
	// For this one.
	big := s.uploadDoc(t, admin, typeID, "big.csv", invoiceCSV("INV-9", "1,200.00"))
	for n, err := range started {
		if err != nil {
			t.Fatalf("no run started for the large clean invoice: %v", err)
		}
		if n.Event.Data["process_id"] == proc.ID {
			break
		}
	}
	runs := s.listIDs(t, admin, "/v1/process-runs?process_id="+proc.ID)
	// Events are dispatched in order, so the two earlier documents were
	// already considered: one run in all.
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	// The workspace is supervised: the execute step waits for a person.
	run := s.awaitRun(t, admin, runs[0], "waiting", runStatusIs("waiting"))
	if st := run.step(t, "extract"); st.ApprovalID != nil {
		s.do(t, "POST", "/v1/approvals/"+*st.ApprovalID+"/approve", admin, `{}`).want(t, http.StatusOK)
	}
	run = s.awaitRun(t, admin, runs[0], "completed", runStatusIs("completed"))
	out, _ := run.step(t, "extract").Output.(map[string]any)
	fields, _ := out["fields"].(map[string]any)
	if out["document_id"] != big.ID || fields["total"] != float64(120000) || fields["invoice_number"] != "INV-9" {
		t.Errorf("extract step output %v", out)
	}
}

// TestDocsHTTPIdempotentUpload: an upload retried with the same
// Idempotency-Key files one document.
func TestDocsHTTPIdempotentUpload(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	typeID := s.invoiceType(t, admin)
	body, ct := multipartBody(t, "a.txt", invoiceText("INV-1", "1,200.00", "2024-03-02"), "type_id", typeID)
	var first, second docView
	s.do(t, "POST", "/v1/docs/documents", admin, body, "Content-Type", ct, "Idempotency-Key", "k1").want(t, http.StatusCreated).decode(t, &first)
	s.do(t, "POST", "/v1/docs/documents", admin, body, "Content-Type", ct, "Idempotency-Key", "k1").want(t, http.StatusCreated).decode(t, &second)
	if first.ID == "" || first.ID != second.ID {
		t.Errorf("retry filed %s and %s", first.ID, second.ID)
	}
	if got := s.listIDs(t, admin, "/v1/docs/documents"); len(got) != 1 {
		t.Errorf("%d documents", len(got))
	}
}
