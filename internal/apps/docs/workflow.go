package docs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Event names.
const (
	EventReceived  = "docs.document.received"
	EventExtracted = "docs.document.extracted"
	EventValidated = "docs.document.validated"
	EventApproved  = "docs.document.approved"
	EventRejected  = "docs.document.rejected"
)

// Events lists the events the app emits, in workflow order.
func Events() []string {
	return []string{EventReceived, EventExtracted, EventValidated, EventApproved, EventRejected}
}

// Bounds of uploads and review input.
const (
	MaxTitleLen    = 200
	MaxFilenameLen = 255
	MaxTags        = 20
	MaxTagLen      = 40
	MaxNoteLen     = 2000
)

// UploadIn is a file to file as a new document.
type UploadIn struct {
	// TypeID is the document type. Required.
	TypeID string
	// Title defaults to the file name without its extension.
	Title string
	// Filename is the uploaded file's name.
	Filename string
	// Data is the file. Required, at most MaxUploadBytes.
	Data []byte
	// Priority is low, normal (the default), high or urgent.
	Priority string
	// Queue is the review queue; defaults to the type's workflow queue.
	Queue *string
	// Tags label the document (at most 20, each 1 to 40 characters).
	Tags []string
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in UploadIn) Validate() []errs.Violation {
	var vs []errs.Violation
	add := func(typ, msg string, loc ...any) {
		vs = append(vs, errs.Violation{Loc: loc, Msg: msg, Type: typ})
	}
	if strings.TrimSpace(in.TypeID) == "" {
		add("missing", "is required", "type_id")
	}
	if in.Data == nil {
		add("missing", "is required", "file")
	} else if len(in.Data) == 0 {
		add("value_error", "the file is empty", "file")
	}
	if utf8.RuneCountInString(in.Title) > MaxTitleLen {
		add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxTitleLen), "title")
	}
	if utf8.RuneCountInString(in.Filename) > MaxFilenameLen {
		add("string_too_long", fmt.Sprintf("the file name must be at most %d characters", MaxFilenameLen), "file")
	}
	if in.Priority != "" && !slices.Contains(Priorities(), in.Priority) {
		add("enum", "must be one of "+strings.Join(Priorities(), ", "), "priority")
	}
	if in.Queue != nil && utf8.RuneCountInString(*in.Queue) > MaxQueueLen {
		add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxQueueLen), "queue")
	}
	if len(in.Tags) > MaxTags {
		add("too_long", fmt.Sprintf("must have at most %d items", MaxTags), "tags")
	}
	for i, t := range in.Tags {
		if n := utf8.RuneCountInString(strings.TrimSpace(t)); n == 0 || n > MaxTagLen {
			add("value_error", fmt.Sprintf("a tag must be 1 to %d characters", MaxTagLen), "tags", i)
		}
	}
	return vs
}

// VersionIn is a new file for an existing document.
type VersionIn struct {
	Filename string
	Data     []byte
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in VersionIn) Validate() []errs.Violation {
	return UploadIn{TypeID: "-", Filename: in.Filename, Data: in.Data}.Validate()
}

// prepared is a file read and extracted, before anything is stored.
type prepared struct {
	filename, contentType string
	data                  []byte
	pages                 []extract.Page
	values                map[string]extract.Value
	problems              []extract.Problem
}

// prepare checks a file's size and type, reads its pages and extracts
// typ's fields. Unsupported or unreadable files, and files that reading
// would take past the extraction budget (extract.Budget's defaults:
// decompressed bytes per stream and per document, pages, time), are 422s
// on file (the HTTP API's body.file); reading stops when ctx is done.
func (s *Service) prepare(ctx context.Context, tenant, filename string, data []byte, typ *DocType) (*prepared, error) {
	if int64(len(data)) > s.max {
		return nil, errs.TooLargef("the file is %d bytes; the limit is %d bytes", len(data), s.max)
	}
	ct := extract.DetectContentType(filename, data)
	if !extract.Supported(ct) {
		return nil, errs.Invalidf([]any{"file"}, "value_error",
			"files of type %s cannot be read; upload a PDF with a text layer, a CSV or a plain text file", baseType(ct))
	}
	pages, err := extract.FromFile(ctx, ct, data, extract.Budget{})
	if err != nil {
		switch {
		case errors.Is(err, extract.ErrUnreadable):
			return nil, errs.Invalidf([]any{"file"}, "value_error", "%s", err.Error())
		case errors.Is(err, extract.ErrOverBudget):
			return nil, errs.Invalidf([]any{"file"}, "value_error", "the file is too costly to read: %s", err.Error())
		}
		return nil, err
	}
	x, err := s.extractor(tenant, typ)
	if err != nil {
		return nil, err
	}
	vals, problems := x.Extract(pages)
	return &prepared{filename: filename, contentType: ct, data: data, pages: pages, values: vals, problems: problems}, nil
}

func baseType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(t)
}

func extractFields(t *DocType) []extract.Field {
	out := make([]extract.Field, len(t.Fields))
	for i, f := range t.Fields {
		out[i] = f.toExtract()
	}
	return out
}

func actorPtr(actor string) *string {
	if actor == "" {
		return nil
	}
	return &actor
}

// Upload files a new document: it stores the file, extracts the type's
// fields, validates them and routes the document by the type's workflow,
// all before it returns. Events received, extracted and validated (and
// approved or rejected when the workflow decides at once) are emitted in
// the transaction that stores the document. actor is who uploaded ("" for
// the system).
func (s *Service) Upload(ctx context.Context, tenant, actor string, in UploadIn) (*Document, error) {
	if int64(len(in.Data)) > s.max {
		return nil, errs.TooLargef("the file is %d bytes; the limit is %d bytes", len(in.Data), s.max)
	}
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	typ, err := s.GetType(ctx, tenant, in.TypeID)
	if errors.Is(err, errs.NotFound) {
		return nil, errs.Invalidf([]any{"type_id"}, "value_error", "no document type %s", in.TypeID)
	}
	if err != nil {
		return nil, err
	}
	p, err := s.prepare(ctx, tenant, in.Filename, in.Data, typ)
	if err != nil {
		return nil, err
	}
	file, err := s.stageFile(ctx, tenant, in.Data)
	if err != nil {
		return nil, err
	}
	now := s.now()
	title := strings.TrimSpace(in.Title)
	if title == "" {
		title = strings.TrimSuffix(path.Base(in.Filename), path.Ext(in.Filename))
		if title == "" || title == "." || title == "/" {
			title = "Untitled document"
		}
	}
	priority := in.Priority
	if priority == "" {
		priority = PriorityNormal
	}
	queue := typ.Workflow.Queue
	if in.Queue != nil && strings.TrimSpace(*in.Queue) != "" {
		queue = ptr(strings.TrimSpace(*in.Queue))
	}
	var tags []string
	for _, t := range in.Tags {
		if t = strings.TrimSpace(t); !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	rec := &record{
		ID: s.ids.New("doc", now), Title: title, TypeID: typ.ID, TypeName: typ.Name,
		CreatedAt: now, Priority: priority, Queue: queue, Tags: tags,
	}
	return s.fileVersion(ctx, tenant, actor, p, file, now, func(tx store.Txn) (*record, *DocType, error) {
		t, err := types.Get(tx, tenant, typ.ID)
		if err != nil {
			return nil, nil, err
		}
		r := *rec
		r.History = nil
		return &r, t, nil
	})
}

// AddVersion files a new version of a document: the file replaces the
// current one (earlier versions stay downloadable), and the document goes
// through received, extracted and validation again; its history is kept.
func (s *Service) AddVersion(ctx context.Context, tenant, actor, id string, in VersionIn) (*Document, error) {
	var rec *record
	var typ *DocType
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		if rec, err = docs.Get(r, tenant, id); err != nil {
			return err
		}
		typ, err = types.Get(r, tenant, rec.TypeID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if int64(len(in.Data)) > s.max {
		return nil, errs.TooLargef("the file is %d bytes; the limit is %d bytes", len(in.Data), s.max)
	}
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	p, err := s.prepare(ctx, tenant, in.Filename, in.Data, typ)
	if err != nil {
		return nil, err
	}
	file, err := s.stageFile(ctx, tenant, in.Data)
	if err != nil {
		return nil, err
	}
	return s.fileVersion(ctx, tenant, actor, p, file, s.now(), func(tx store.Txn) (*record, *DocType, error) {
		r, err := docs.Get(tx, tenant, id)
		if err != nil {
			return nil, nil, err
		}
		t, err := types.Get(tx, tenant, r.TypeID)
		if err != nil {
			return nil, nil, err
		}
		return r, t, nil
	})
}

// fileVersion stores a staged file as the next version of the document that
// load reads in the transaction (a new one for an upload), ingests it and
// commits the file with it. When the transaction fails the staged file is
// abandoned.
func (s *Service) fileVersion(ctx context.Context, tenant, actor string, p *prepared, file *staged, now time.Time,
	load func(tx store.Txn) (*record, *DocType, error)) (*Document, error) {
	var out *Document
	err := s.st.Update(ctx, func(tx store.Txn) error {
		r, t, err := load(tx)
		if err != nil {
			return err
		}
		if err := s.ingest(tx, tenant, actor, r, t, p, file, now); err != nil {
			return err
		}
		if err := file.commit(tx, tenant); err != nil {
			return err
		}
		out = r.out(t.Name)
		return nil
	})
	if err != nil {
		s.abandon(tenant, file)
		return nil, err
	}
	s.events.Kick()
	return out, nil
}

// ingest records a new version of r (the first for a new document) and
// walks it through received, extracted and validation, then stores it.
func (s *Service) ingest(tx store.Txn, tenant, actor string, r *record, t *DocType, p *prepared, file *staged, now time.Time) error {
	sum := sha256.Sum256(p.data)
	r.Version++
	r.Versions = append(r.Versions, storedVersion{
		Version: Version{
			Version: r.Version, Filename: p.filename, ContentType: p.contentType, SizeBytes: int64(len(p.data)),
			SHA256: hex.EncodeToString(sum[:]), Pages: len(p.pages), UploadedAt: now, UploadedBy: actorPtr(actor),
		},
		FileID: file.fileID, Chunks: file.chunks,
	})
	r.Status, r.TypeName, r.UpdatedAt = StatusReceived, t.Name, now
	r.Extracted, r.Problems, r.Validation, r.Review, r.DueAt = nil, nil, nil, nil, nil
	r.Pages = len(p.pages)
	r.addHistory(now, "received", actorPtr(actor), fmt.Sprintf("version %d: %s (%s, %d bytes, %d pages)",
		r.Version, displayName(p.filename), baseType(p.contentType), len(p.data), len(p.pages)))
	if err := s.emit(tx, tenant, EventReceived, r, nil); err != nil {
		return err
	}

	r.Extracted = make(map[string]FieldValue, len(p.values))
	for k, v := range p.values {
		r.Extracted[k] = fromExtract(v)
	}
	if len(p.problems) > 0 {
		r.Problems = make(map[string]extract.Problem, len(p.problems))
		for _, pr := range p.problems {
			r.Problems[pr.Field] = pr
		}
	}
	r.NoText = true
	for _, pg := range p.pages {
		if strings.TrimSpace(pg.Text) != "" {
			r.NoText = false
			break
		}
	}
	r.Status = StatusExtracted
	r.addHistory(now, "extracted", nil, fmt.Sprintf("%d of %d fields found", len(r.Extracted), len(t.Fields)))
	if err := s.emit(tx, tenant, EventExtracted, r, nil); err != nil {
		return err
	}
	return s.validate(tx, tenant, r, t, now, false)
}

func displayName(f string) string {
	if f == "" {
		return "unnamed file"
	}
	return f
}

// validate checks r's values, records the outcome and routes r by the
// workflow, then stores r. byPerson is true when a person's correction
// caused it: on_error reject does not apply then (a person is already
// looking), auto_approve does.
func (s *Service) validate(tx store.Txn, tenant string, r *record, t *DocType, now time.Time, byPerson bool) error {
	dups, err := s.trackDuplicates(tx, tenant, r, t)
	if err != nil {
		return err
	}
	v := check(checkInput{typ: t, values: r.Extracted, problems: r.Problems, pages: r.Pages, noText: r.NoText, duplicates: dups})
	r.Validation = &v
	r.UpdatedAt = now
	summary := "passed"
	if v.Errors+v.Warnings > 0 {
		summary = fmt.Sprintf("%d errors, %d warnings: %s", v.Errors, v.Warnings, strings.Join(v.ruleIDs(), ", "))
	}
	r.addHistory(now, "validated", nil, summary)
	wf := t.Workflow
	clean := v.Errors == 0 && (v.Warnings == 0 || wf.OnWarning == OnWarningAccept)
	switch {
	case clean:
		r.Status = StatusValidated
		s.enterReview(r, t, now, "approval")
	case v.Errors > 0:
		r.Status = StatusNeedsReview
		s.enterReview(r, t, now, "errors")
	default:
		r.Status = StatusNeedsReview
		s.enterReview(r, t, now, "warnings")
	}
	if err := s.emit(tx, tenant, EventValidated, r, nil); err != nil {
		return err
	}
	switch {
	case clean && wf.AutoApprove:
		return s.decide(tx, tenant, r, now, StatusApproved, "", "approved automatically: validation passed", "auto")
	case v.Errors > 0 && wf.OnError == OnErrorReject && !byPerson:
		return s.decide(tx, tenant, r, now, StatusRejected, "",
			fmt.Sprintf("rejected automatically: %d validation errors", v.Errors), "auto")
	}
	return docs.Put(tx, tenant, r)
}

// enterReview opens (or keeps open) r's review: a document already
// waiting keeps when it entered and its due time.
func (s *Service) enterReview(r *record, t *DocType, now time.Time, reason string) {
	if r.Review == nil || r.Review.Status != "pending" {
		due := now.AddDate(0, 0, t.Workflow.ReviewSLADays)
		r.Review = &Review{Status: "pending", EnteredAt: ptr(now), DueAt: &due}
	}
	r.Review.Reason = reason
	r.Review.Queue = r.Queue
	r.DueAt = r.Review.DueAt
}

// decide approves or rejects r, records it and emits the event.
func (s *Service) decide(tx store.Txn, tenant string, r *record, now time.Time, status, actor, note, reason string) error {
	r.Status = status
	if r.Review == nil {
		r.Review = &Review{EnteredAt: ptr(now)}
	}
	r.Review.Status = status
	if reason != "" {
		r.Review.Reason = reason
	}
	r.Review.DecidedAt = ptr(now)
	r.Review.DecidedBy = actorPtr(actor)
	r.Review.Note = nil
	if note != "" {
		r.Review.Note = ptr(note)
	}
	r.DueAt = nil
	r.UpdatedAt = now
	action := map[string]string{StatusApproved: "approved", StatusRejected: "rejected"}[status]
	r.addHistory(now, action, actorPtr(actor), note)
	name := EventApproved
	if status == StatusRejected {
		name = EventRejected
	}
	if err := s.emit(tx, tenant, name, r, map[string]any{"note": r.Review.Note, "by": r.Review.DecidedBy}); err != nil {
		return err
	}
	if status == StatusRejected {
		if err := markRejected(tx, tenant, r); err != nil {
			return err
		}
	}
	return docs.Put(tx, tenant, r)
}

// emit sends an event with r's current state.
func (s *Service) emit(tx store.Txn, tenant, name string, r *record, extra map[string]any) error {
	data := map[string]any{
		"id": r.ID, "document_id": r.ID, "type_id": r.TypeID, "type_name": r.TypeName, "status": r.Status,
		"title": r.Title, "version": r.Version, "filename": r.current().Filename,
		"content_type": r.current().ContentType, "priority": r.Priority, "queue": r.Queue,
		"tags": nonNilStrings(r.Tags), "fields": r.flatFields(),
	}
	if r.Validation != nil {
		data["validation"] = map[string]any{
			"status": r.Validation.Status, "errors": r.Validation.Errors, "warnings": r.Validation.Warnings,
			"rule_ids": r.Validation.ruleIDs(),
		}
	}
	for k, v := range extra {
		data[k] = v
	}
	return s.events.Emit(tx, tenant, name, data)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---- Duplicates ----------------------------------------------------------

// The duplicate register: one point key per normalized (supplier, number)
// listing the documents that have them, each with whether it is rejected.
// Reading a point key makes two concurrent uploads of the same invoice
// conflict, so the second one sees the first (a range scan would not),
// and finding duplicates costs one read, not one per document.
const spaceDup = "docdup"

// maxDupReport bounds the documents a duplicate warning names.
const maxDupReport = 20

func dupKey(tenant, supplier, number string) []byte {
	return store.Key(tenant, spaceDup, supplier, number)
}

// dupEntry is a document in the register.
type dupEntry struct {
	ID       string `json:"id"`
	Rejected bool   `json:"rejected,omitempty"`
}

func readDup(tx store.Reader, key []byte) ([]dupEntry, error) {
	b, err := tx.Get(key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []dupEntry
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, errors.Wrap(err, "decode duplicate register")
	}
	return out, nil
}

func writeDup(tx store.Txn, key []byte, list []dupEntry) error {
	if len(list) == 0 {
		return tx.Delete(key)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return errors.Wrap(err, "encode duplicate register")
	}
	return tx.Set(key, b)
}

// others returns the ids of the entries other than id that are not
// rejected, at most maxDupReport.
func others(list []dupEntry, id string) []string {
	var out []string
	for _, e := range list {
		if e.ID != id && !e.Rejected && len(out) < maxDupReport {
			out = append(out, e.ID)
		}
	}
	return out
}

// trackDuplicates moves r in the register to its current (supplier,
// number) and status, and returns the other documents that share them
// and are not rejected.
func (s *Service) trackDuplicates(tx store.Txn, tenant string, r *record, t *DocType) ([]string, error) {
	sup, num, ok := duplicateKey(t, r.Extracted)
	if r.DupSupplier != "" && (!ok || sup != r.DupSupplier || num != r.DupNumber) {
		key := dupKey(tenant, r.DupSupplier, r.DupNumber)
		list, err := readDup(tx, key)
		if err != nil {
			return nil, err
		}
		if err := writeDup(tx, key, slices.DeleteFunc(list, func(e dupEntry) bool { return e.ID == r.ID })); err != nil {
			return nil, err
		}
		r.DupSupplier, r.DupNumber = "", ""
	}
	if !ok {
		return nil, nil
	}
	key := dupKey(tenant, sup, num)
	list, err := readDup(tx, key)
	if err != nil {
		return nil, err
	}
	rejected := r.Status == StatusRejected
	i := slices.IndexFunc(list, func(e dupEntry) bool { return e.ID == r.ID })
	switch {
	case i < 0:
		list = append(list, dupEntry{ID: r.ID, Rejected: rejected})
	case list[i].Rejected != rejected:
		list[i].Rejected = rejected
	default:
		i = -2 // unchanged
	}
	if i != -2 {
		if err := writeDup(tx, key, list); err != nil {
			return nil, err
		}
	}
	r.DupSupplier, r.DupNumber = sup, num
	return others(list, r.ID), nil
}

// markRejected records in the register that r was rejected.
func markRejected(tx store.Txn, tenant string, r *record) error {
	if r.DupSupplier == "" {
		return nil
	}
	key := dupKey(tenant, r.DupSupplier, r.DupNumber)
	list, err := readDup(tx, key)
	if err != nil {
		return err
	}
	for i := range list {
		if list[i].ID == r.ID {
			list[i].Rejected = true
		}
	}
	return writeDup(tx, key, list)
}
