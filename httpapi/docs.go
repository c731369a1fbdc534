package httpapi

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/docs"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// The documents app (api.md section 5, docs row). Reading needs docs.read;
// types, uploads and new versions need docs.write; deciding a document
// (approve, reject), correcting its fields and giving feedback on its
// rules need docs.review: a correction can clear the errors that stop an
// approval, so it belongs to the people who review.
func (h *Handler) registerDocsRoutes() {
	app := access.AppDocs
	read, write, review := access.PermDocsRead, access.PermDocsWrite, access.PermDocsReview
	h.handle("GET", "/v1/docs/types", app, read, h.handleDocTypesList).List(docs.DocType{})
	h.handle("POST", "/v1/docs/types", app, write, h.handleDocTypeCreate).In(docs.DocTypeIn{}).Out(201, docs.DocType{})
	h.handle("POST", "/v1/docs/types/from-template", app, write, h.handleDocTypeFromTemplate).In(docs.DraftIn{}).Out(201, docs.DocType{})
	h.handle("GET", "/v1/docs/types/:id", app, read, h.handleDocTypeGet).Out(200, docs.DocType{})
	h.handle("PATCH", "/v1/docs/types/:id", app, write, h.handleDocTypeUpdate).In(docs.DocTypePatch{}).Out(200, docs.DocType{})
	h.handle("DELETE", "/v1/docs/types/:id", app, write, h.handleDocTypeDelete).Out(204, nil)
	h.handle("GET", "/v1/docs/types/:id/agreement", app, read, h.handleDocTypeAgreement).Out(200, docs.Agreement{})
	h.handle("GET", "/v1/docs/type-templates", app, read, h.handleDocTypeTemplates).Out(200, []docs.TypeTemplate{})
	h.handle("GET", "/v1/docs/documents", app, read, h.handleDocumentsList).List(docs.Document{}).Query("status", "type_id", "queue")
	h.handle("POST", "/v1/docs/documents", app, write, h.handleDocumentUpload).Upload("file", "type_id", "title", "priority", "queue", "tags").Out(201, docs.Document{})
	h.handle("GET", "/v1/docs/documents/:id", app, read, h.handleDocumentGet).Out(200, docs.Document{})
	h.handle("POST", "/v1/docs/documents/:id/versions", app, write, h.handleDocumentVersion).Upload("file").Out(201, docs.Document{})
	h.handle("GET", "/v1/docs/documents/:id/file", app, read, h.handleDocumentFile).Query("version").File(200, "*/*")
	h.handle("POST", "/v1/docs/documents/:id/fields", app, review, h.handleDocumentFields).In(docs.FieldsIn{}).Out(200, docs.Document{})
	h.handle("PATCH", "/v1/docs/documents/:id/fields", app, review, h.handleDocumentFields).In(docs.FieldsIn{}).Out(200, docs.Document{})
	h.handle("POST", "/v1/docs/documents/:id/approve", app, review, h.handleDocumentApprove).In(docs.ApproveIn{}).Out(200, docs.Document{})
	h.handle("POST", "/v1/docs/documents/:id/reject", app, review, h.handleDocumentReject).In(docs.RejectIn{}).Out(200, docs.Document{})
	h.handle("POST", "/v1/docs/documents/:id/feedback", app, review, h.handleDocumentFeedback).In(docs.FeedbackIn{}).Out(200, docs.Agreement{})
}

// handleDocTypesList serves GET /v1/docs/types: a page, newest first.
func (h *Handler) handleDocTypesList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Docs().ListTypes(c.Context(), c.Tenant(), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleDocTypeCreate serves POST /v1/docs/types (DocTypeIn): 201.
func (h *Handler) handleDocTypeCreate(c *request) error {
	var in docs.DocTypeIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	t, err := h.ws.Docs().CreateType(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/docs/types/"+t.ID, t)
}

// handleDocTypeFromTemplate serves POST /v1/docs/types/from-template
// (DraftIn): 201 with the new type.
func (h *Handler) handleDocTypeFromTemplate(c *request) error {
	var in docs.DraftIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	t, err := h.ws.Docs().CreateFromTemplate(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/docs/types/"+t.ID, t)
}

// handleDocTypeGet serves GET /v1/docs/types/{id}.
func (h *Handler) handleDocTypeGet(c *request) error {
	t, err := h.ws.Docs().GetType(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// handleDocTypeUpdate serves PATCH /v1/docs/types/{id} (DocTypePatch).
func (h *Handler) handleDocTypeUpdate(c *request) error {
	if _, err := h.ws.Docs().GetType(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in docs.DocTypePatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	t, err := h.ws.Docs().UpdateType(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, t)
}

// handleDocTypeDelete serves DELETE /v1/docs/types/{id}: 204; a type
// documents use is a 409.
func (h *Handler) handleDocTypeDelete(c *request) error {
	if err := h.ws.Docs().DeleteType(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleDocTypeAgreement serves GET /v1/docs/types/{id}/agreement.
func (h *Handler) handleDocTypeAgreement(c *request) error {
	ag, err := h.ws.Docs().Agreement(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ag)
}

// handleDocTypeTemplates serves GET /v1/docs/type-templates: every
// template, in a fixed order (not paged).
func (h *Handler) handleDocTypeTemplates(c *request) error {
	return c.JSON(http.StatusOK, docs.Templates())
}

// handleDocumentsList serves GET /v1/docs/documents?status=&type_id=&queue=:
// a page, newest first.
func (h *Handler) handleDocumentsList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	f := docs.Filter{Status: q.Get("status"), TypeID: q.Get("type_id"), Queue: q.Get("queue")}
	if vs := queryTooLong(nil, "queue", f.Queue, docs.MaxQueueLen); len(vs) > 0 {
		return errs.Validation(vs...)
	}
	out, next, err := h.ws.Docs().List(c.Context(), c.Tenant(), f, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleDocumentGet serves GET /v1/docs/documents/{id}.
func (h *Handler) handleDocumentGet(c *request) error {
	d, err := h.ws.Docs().Get(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// handleDocumentUpload serves POST /v1/docs/documents: multipart form with
// file (required), type_id (required), title, and the extensions priority,
// queue and tags. 201 with the document, already extracted and validated.
func (h *Handler) handleDocumentUpload(c *request) error {
	form, err := h.readUpload(c)
	if err != nil {
		return err
	}
	in := docs.UploadIn{TypeID: form.value("type_id"), Title: form.value("title"), Filename: form.filename,
		Data: form.file, Priority: form.value("priority"), Tags: form.tags()}
	if q, ok := form.values["queue"]; ok {
		in.Queue = &q[0]
	}
	d, err := h.ws.Docs().Upload(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/docs/documents/"+d.ID, d)
}

// handleDocumentVersion serves POST /v1/docs/documents/{id}/versions:
// multipart form with file; 201 with the document at its new version.
func (h *Handler) handleDocumentVersion(c *request) error {
	if _, err := h.ws.Docs().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	form, err := h.readUpload(c)
	if err != nil {
		return err
	}
	d, err := h.ws.Docs().AddVersion(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"),
		docs.VersionIn{Filename: form.filename, Data: form.file})
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/docs/documents/"+d.ID, d)
}

// handleDocumentFile serves GET /v1/docs/documents/{id}/file?version=: the
// file of a version (default the current one) with its content type.
func (h *Handler) handleDocumentFile(c *request) error {
	n := 0
	if s := c.Query().Get("version"); s != "" {
		v, err := strconv.Atoi(s)
		switch {
		case err != nil:
			return errs.Invalidf([]any{"query", "version"}, "type_error", "must be an integer")
		case v < 1:
			return errs.Invalidf([]any{"query", "version"}, "greater_than_equal", "must be at least 1")
		}
		n = v
	}
	f, err := h.ws.Docs().File(c.Context(), c.Tenant(), c.Param("id"), n)
	if err != nil {
		return err
	}
	// Read the whole file first, so a store error is still a clean error
	// response rather than a cut-off body.
	var buf bytes.Buffer
	buf.Grow(int(f.SizeBytes))
	if err := f.Copy(c.Context(), &buf); err != nil {
		return err
	}
	hd := c.W.Header()
	hd.Set("Content-Type", f.ContentType)
	hd.Set("Content-Length", strconv.Itoa(buf.Len()))
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename}))
	hd.Set("X-Document-Version", strconv.Itoa(f.Version.Version))
	hd.Set("ETag", `"`+f.SHA256+`"`)
	hd.Set("X-Content-Type-Options", "nosniff")
	c.W.WriteHeader(http.StatusOK)
	_, _ = c.W.Write(buf.Bytes())
	return nil
}

// handleDocumentFields serves POST (or PATCH) /v1/docs/documents/{id}/fields
// (FieldsIn): corrected values, validated again; 200 with the document.
func (h *Handler) handleDocumentFields(c *request) error {
	if _, err := h.ws.Docs().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in docs.FieldsIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Docs().CorrectFields(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, d)
}

// handleDocumentApprove serves POST /v1/docs/documents/{id}/approve
// ({note}, optional): 200; 409 while validation errors remain or once
// decided.
func (h *Handler) handleDocumentApprove(c *request) error {
	if _, err := h.ws.Docs().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in docs.ApproveIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Docs().Approve(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, d)
}

// handleDocumentReject serves POST /v1/docs/documents/{id}/reject ({note},
// required): 200; 409 once decided.
func (h *Handler) handleDocumentReject(c *request) error {
	if _, err := h.ws.Docs().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in docs.RejectIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Docs().Reject(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, d)
}

// handleDocumentFeedback serves POST /v1/docs/documents/{id}/feedback
// (FeedbackIn): 200 with the Agreement of the document's type.
func (h *Handler) handleDocumentFeedback(c *request) error {
	if _, err := h.ws.Docs().Get(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in docs.FeedbackIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	ag, err := h.ws.Docs().Feedback(c.Context(), c.Tenant(), c.P.Actor(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, ag)
}

// ---- Multipart uploads ---------------------------------------------------

// Bounds of the non-file parts of an upload form.
const (
	maxFormValue  = 4 << 10
	maxFormParts  = 64
	formOverheads = 1 << 20
)

// uploadForm is a parsed upload: the file and the other form values.
type uploadForm struct {
	file     []byte
	filename string
	values   map[string][]string
}

func (f *uploadForm) value(name string) string {
	if v := f.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// tags reads "tags" given once per tag or comma-separated.
func (f *uploadForm) tags() []string {
	var out []string
	for _, v := range f.values["tags"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// readUpload reads a multipart/form-data body. The file may be up to
// MaxUploadBytes (413 beyond; the JSON body limit does not apply); other
// parts up to 4 KiB each. A body that is not multipart is a 422.
func (h *Handler) readUpload(c *request) (*uploadForm, error) {
	mt, params, err := mime.ParseMediaType(c.R.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, errs.Invalidf([]any{"body"}, "value_error",
			"send the file as multipart/form-data with a part named file")
	}
	limit := h.opts.MaxUploadBytes
	var src io.Reader
	if c.read { // the idempotency layer read the body already
		src = bytes.NewReader(c.body)
	} else {
		src = http.MaxBytesReader(c.W, c.R.Body, limit+formOverheads)
	}
	tooLarge := func() error {
		return errs.TooLargef("the upload exceeds the limit of %d bytes", limit)
	}
	malformed := func(err error) error {
		if errors.Is(err, io.ErrUnexpectedEOF) { // the body broke off
			return badRequestf("the request body could not be read: it ended early or broke off")
		}
		return errs.Invalidf([]any{"body"}, "value_error", "the multipart body is malformed")
	}
	form := &uploadForm{values: map[string][]string{}}
	mr := multipart.NewReader(src, params["boundary"])
	gotFile := false
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		if err != nil || parts >= maxFormParts {
			return nil, malformed(err)
		}
		name := p.FormName()
		if name == "file" && !gotFile {
			data, err := io.ReadAll(io.LimitReader(p, limit+1))
			if errors.As(err, &mbe) {
				return nil, tooLarge()
			}
			if err != nil {
				return nil, malformed(err)
			}
			if int64(len(data)) > limit {
				return nil, tooLarge()
			}
			form.file, form.filename, gotFile = data, p.FileName(), true
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxFormValue+1))
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		if err != nil {
			return nil, malformed(err)
		}
		if len(v) > maxFormValue {
			return nil, errs.Invalidf([]any{"body", name}, "string_too_long", "a form value may be at most %d bytes", maxFormValue)
		}
		form.values[name] = append(form.values[name], string(v))
	}
	if form.file == nil && gotFile {
		form.file = []byte{}
	}
	return form, nil
}
