package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/extract"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Get returns one document.
func (s *Service) Get(ctx context.Context, tenant, id string) (*Document, error) {
	var out *Document
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := docs.Get(r, tenant, id)
		if err != nil {
			return err
		}
		out = rec.out(typeName(r, tenant, rec.TypeID))
		return nil
	})
	return out, err
}

// typeName returns the current name of a type ("" when it is gone, which
// keeps the name the document stored).
func typeName(r store.Reader, tenant, id string) string {
	t, err := types.Get(r, tenant, id)
	if err != nil {
		return ""
	}
	return t.Name
}

// Filter selects documents in List; empty fields select everything.
type Filter struct {
	Status string
	TypeID string
	Queue  string
}

// Statuses lists the document statuses in workflow order.
func Statuses() []string {
	return []string{StatusReceived, StatusExtracted, StatusValidated, StatusNeedsReview, StatusApproved, StatusRejected}
}

// Validate reports a status that does not exist (located under "query").
func (f Filter) Validate() []errs.Violation {
	if f.Status != "" && !slices.Contains(Statuses(), f.Status) {
		return []errs.Violation{{Loc: []any{"query", "status"}, Msg: "must be one of " + strings.Join(Statuses(), ", "), Type: "enum"}}
	}
	return nil
}

// List returns a page of documents, newest first, filtered by status, type
// and queue; every combination is served by its own index.
func (s *Service) List(ctx context.Context, tenant string, f Filter, p store.Page) ([]*Document, string, error) {
	if err := errs.Validation(f.Validate()...); err != nil {
		return nil, "", err
	}
	index := ""
	var values []any
	if f.Status != "" {
		index += "s"
		values = append(values, f.Status)
	}
	if f.TypeID != "" {
		index += "t"
		values = append(values, f.TypeID)
	}
	if f.Queue != "" {
		index += "q"
		values = append(values, f.Queue)
	}
	var out []*Document
	var next string
	err := s.st.View(ctx, func(r store.Reader) error {
		var recs []*record
		var err error
		if index == "" {
			recs, next, err = docs.List(r, tenant, p)
		} else {
			recs, next, err = docs.ListBy(r, tenant, index, values, p)
		}
		if err != nil {
			return err
		}
		names := map[string]string{}
		out = make([]*Document, len(recs))
		for i, rec := range recs {
			n, ok := names[rec.TypeID]
			if !ok {
				n = typeName(r, tenant, rec.TypeID)
				names[rec.TypeID] = n
			}
			out[i] = rec.out(n)
		}
		return nil
	})
	return out, next, err
}

// load reads a document and its type in a transaction.
func load(r store.Reader, tenant, id string) (*record, *DocType, error) {
	rec, err := docs.Get(r, tenant, id)
	if err != nil {
		return nil, nil, err
	}
	t, err := types.Get(r, tenant, rec.TypeID)
	if errors.Is(err, errs.NotFound) {
		return nil, nil, errs.Conflictf("the document's type no longer exists")
	}
	return rec, t, err
}

// change runs fn on a document in one transaction, stores nothing itself
// (fn stores), then tells the event sink.
func (s *Service) change(ctx context.Context, tenant, id string, fn func(tx store.Txn, r *record, t *DocType) error) (*Document, error) {
	var out *Document
	err := s.st.Update(ctx, func(tx store.Txn) error {
		r, t, err := load(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := fn(tx, r, t); err != nil {
			return err
		}
		out = r.out(t.Name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.events.Kick()
	return out, nil
}

func decidedConflict(r *record) error {
	return errs.Conflictf("document already %s", r.Status)
}

// ApproveIn is the optional body of approve.
type ApproveIn struct {
	Note *string `json:"note,omitempty" jsonschema:"nullable,maxLength=2000"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in ApproveIn) Validate() []errs.Violation {
	if in.Note != nil && utf8.RuneCountInString(*in.Note) > MaxNoteLen {
		return []errs.Violation{{Loc: []any{"note"}, Msg: fmt.Sprintf("must be at most %d characters", MaxNoteLen), Type: "string_too_long"}}
	}
	return nil
}

// RejectIn is the body of reject: why, for the supplier or the uploader.
type RejectIn struct {
	Note string `json:"note" jsonschema:"required,minLength=1,maxLength=2000"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in RejectIn) Validate() []errs.Violation {
	switch n := utf8.RuneCountInString(strings.TrimSpace(in.Note)); {
	case n == 0:
		return []errs.Violation{{Loc: []any{"note"}, Msg: "a rejection needs a note saying why", Type: "missing"}}
	case n > MaxNoteLen:
		return []errs.Violation{{Loc: []any{"note"}, Msg: fmt.Sprintf("must be at most %d characters", MaxNoteLen), Type: "string_too_long"}}
	}
	return nil
}

// Approve approves a validated document or one in review. A document
// with validation errors cannot be approved (a conflict: correct the
// fields first), nor can a decided one.
func (s *Service) Approve(ctx context.Context, tenant, actor, id string, in ApproveIn) (*Document, error) {
	return s.change(ctx, tenant, id, func(tx store.Txn, r *record, _ *DocType) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if err := canDecide(r); err != nil {
			return err
		}
		if r.Validation != nil && r.Validation.Errors > 0 {
			return errs.Conflictf("document has %d validation errors; correct the fields before approving", r.Validation.Errors)
		}
		note := ""
		if in.Note != nil {
			note = strings.TrimSpace(*in.Note)
		}
		return s.decide(tx, tenant, r, s.now(), StatusApproved, actor, note, "")
	})
}

// Reject rejects a validated document or one in review; the note saying
// why is required.
func (s *Service) Reject(ctx context.Context, tenant, actor, id string, in RejectIn) (*Document, error) {
	return s.change(ctx, tenant, id, func(tx store.Txn, r *record, _ *DocType) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if err := canDecide(r); err != nil {
			return err
		}
		return s.decide(tx, tenant, r, s.now(), StatusRejected, actor, strings.TrimSpace(in.Note), "")
	})
}

func canDecide(r *record) error {
	switch r.Status {
	case StatusApproved, StatusRejected:
		return decidedConflict(r)
	case StatusValidated, StatusNeedsReview:
		return nil
	}
	return errs.Conflictf("document not yet validated")
}

// FieldsIn corrects extracted values (interface.md FieldsIn). Each key is
// a field of the document's type; the value is given as text (parsed by
// the field's type, as extraction would: "1.234,56", "1 Feb 2024"), as a
// JSON number (money in integer cents, number as is), or null to clear
// it; a repeat field takes a list. An empty object re-validates only.
type FieldsIn struct {
	Fields map[string]json.RawMessage `json:"fields" jsonschema:"required"`
	// Note (an extension) is kept in the history.
	Note *string `json:"note,omitempty" jsonschema:"nullable,maxLength=2000"`
}

// NoExtraProperties makes a field the correction does not take a 422.
func (FieldsIn) NoExtraProperties() {}

// Validate reports what can be checked without the document's type.
func (in FieldsIn) Validate() []errs.Violation {
	var vs []errs.Violation
	if in.Fields == nil {
		vs = append(vs, errs.Violation{Loc: []any{"fields"}, Msg: "is required", Type: "missing"})
	}
	if in.Note != nil && utf8.RuneCountInString(*in.Note) > MaxNoteLen {
		vs = append(vs, errs.Violation{Loc: []any{"note"}, Msg: fmt.Sprintf("must be at most %d characters", MaxNoteLen), Type: "string_too_long"})
	}
	return vs
}

// parseCorrection turns one corrected JSON value into a field value.
func parseCorrection(f DocField, raw json.RawMessage, loc []any) (any, string, []errs.Violation) {
	bad := func(typ, msg string) (any, string, []errs.Violation) {
		return nil, "", []errs.Violation{{Loc: loc, Msg: msg, Type: typ}}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return bad("json_invalid", "is not valid JSON")
	}
	if x == nil {
		return nil, "", nil
	}
	if f.Repeat {
		list, ok := x.([]any)
		if !ok {
			list = []any{x}
		}
		var vals []any
		var texts []string
		var vs []errs.Violation
		for i, item := range list {
			b, _ := json.Marshal(item)
			v, text, ivs := parseCorrection(DocField{Key: f.Key, Label: f.Label, Type: f.Type, Options: f.Options}, b, append(slices.Clone(loc), i))
			vs = append(vs, ivs...)
			if v != nil {
				vals = append(vals, v)
				texts = append(texts, text)
			}
		}
		if len(vs) > 0 {
			return nil, "", vs
		}
		return vals, strings.Join(texts, "; "), nil
	}
	switch v := x.(type) {
	case string:
		val, err := extract.ParseValue(f.fieldType(), f.Options, v)
		if err != nil {
			typ := "value_error"
			if f.fieldType() == extract.TypeEnum {
				typ = "enum"
			}
			return bad(typ, err.Error())
		}
		return val, strings.TrimSpace(v), nil
	case json.Number:
		switch f.fieldType() {
		case extract.TypeMoney:
			c, err := v.Int64()
			if err != nil {
				return bad("type_error", "money is integer cents (or text such as \"1,234.56\")")
			}
			return c, money(c), nil
		case extract.TypeNumber:
			n, err := v.Float64()
			if err != nil {
				return bad("type_error", "is not a number")
			}
			return n, v.String(), nil
		}
		return bad("type_error", fmt.Sprintf("a %s field takes text", f.fieldType()))
	}
	return bad("type_error", "must be text, a number or null")
}

// CorrectFields sets field values by hand and validates the document
// again (see FieldsIn). A decided document is a conflict: upload a new
// version instead. After a correction the workflow applies as after
// extraction, except that on_error reject does not (a person is
// reviewing): a document still in error stays in review.
func (s *Service) CorrectFields(ctx context.Context, tenant, actor, id string, in FieldsIn) (*Document, error) {
	return s.change(ctx, tenant, id, func(tx store.Txn, r *record, t *DocType) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if r.Status == StatusApproved || r.Status == StatusRejected {
			return errs.Conflictf("document already %s; upload a new version to change it", r.Status)
		}
		keys := make([]string, 0, len(in.Fields))
		for k := range in.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vs []errs.Violation
		type change struct {
			key  string
			val  any
			text string
		}
		var changes []change
		for _, k := range keys {
			loc := []any{"fields", k}
			f, ok := t.field(k)
			if !ok {
				vs = append(vs, errs.Violation{Loc: loc, Msg: "is not a field of the document's type", Type: "extra_forbidden"})
				continue
			}
			val, text, fvs := parseCorrection(f, in.Fields[k], loc)
			vs = append(vs, fvs...)
			changes = append(changes, change{k, val, text})
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		now := s.now()
		if r.Extracted == nil {
			r.Extracted = map[string]FieldValue{}
		}
		for _, c := range changes {
			delete(r.Problems, c.key)
			if c.val == nil {
				delete(r.Extracted, c.key)
				continue
			}
			r.Extracted[c.key] = FieldValue{Value: c.val, Text: c.text, Source: SourceCorrection, CorrectedBy: actorPtr(actor)}
		}
		note := "re-validated"
		if len(keys) > 0 {
			note = "corrected " + strings.Join(keys, ", ")
		}
		if in.Note != nil && strings.TrimSpace(*in.Note) != "" {
			note += ": " + strings.TrimSpace(*in.Note)
		}
		r.addHistory(now, "fields_corrected", actorPtr(actor), note)
		return s.validate(tx, tenant, r, t, now, true)
	})
}

// Revalidate validates a document again with its type's current rules
// (document.validate). A decided document keeps its validation. When the
// outcome is what was stored, nothing is written and no event is emitted,
// so a process reacting to docs.document.validated that calls
// document.validate does not loop.
func (s *Service) Revalidate(ctx context.Context, tenant, id string) (*Document, error) {
	return s.change(ctx, tenant, id, func(tx store.Txn, r *record, t *DocType) error {
		if r.Status == StatusApproved || r.Status == StatusRejected {
			return nil
		}
		probe := *r
		dups, err := s.peekDuplicates(tx, tenant, &probe, t)
		if err != nil {
			return err
		}
		v := check(checkInput{typ: t, values: r.Extracted, problems: r.Problems, pages: r.Pages, noText: r.NoText, duplicates: dups})
		if r.Validation != nil && sameIssues(r.Validation.Issues, v.Issues) {
			return nil
		}
		return s.validate(tx, tenant, r, t, s.now(), false)
	})
}

// peekDuplicates is trackDuplicates without writing.
func (s *Service) peekDuplicates(tx store.Txn, tenant string, r *record, t *DocType) ([]string, error) {
	sup, num, ok := duplicateKey(t, r.Extracted)
	if !ok {
		return nil, nil
	}
	list, err := readDup(tx, dupKey(tenant, sup, num))
	if err != nil {
		return nil, err
	}
	return others(list, r.ID), nil
}

func sameIssues(a, b []Issue) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// File is one stored version of a document's file.
type File struct {
	Version
	s      *Service
	tenant string
	sv     storedVersion
}

// Copy writes the file's bytes to w.
func (f *File) Copy(ctx context.Context, w io.Writer) error {
	return f.s.writeFile(ctx, f.tenant, f.sv, w)
}

// File returns version n of a document's file (0 means the current one).
func (s *Service) File(ctx context.Context, tenant, id string, n int) (*File, error) {
	var out *File
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := docs.Get(r, tenant, id)
		if err != nil {
			return err
		}
		v := rec.current()
		if n != 0 {
			var ok bool
			if v, ok = rec.version(n); !ok {
				return errs.NotFoundf("version %d not found; the document has versions 1 to %d", n, rec.Version)
			}
		}
		out = &File{Version: v.Version, s: s, tenant: tenant, sv: v}
		return nil
	})
	return out, err
}
