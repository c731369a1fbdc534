package docs

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/bas-platform/bas/internal/extract"
)

// Document statuses (api.md section 5).
const (
	StatusReceived    = "received"
	StatusExtracted   = "extracted"
	StatusValidated   = "validated"
	StatusNeedsReview = "needs_review"
	StatusApproved    = "approved"
	StatusRejected    = "rejected"
)

// Priorities of a document.
const (
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
	PriorityUrgent = "urgent"
)

// Priorities lists the priorities, lowest first.
func Priorities() []string {
	return []string{PriorityLow, PriorityNormal, PriorityHigh, PriorityUrgent}
}

// Sources of a field value.
const (
	SourceExtraction = "extraction"
	SourceCorrection = "correction"
)

// FieldValue is one extracted (or corrected) value with its evidence.
type FieldValue struct {
	// Value is parsed by the field's type: money as integer cents, number
	// as a JSON number, date as "YYYY-MM-DD", text, email and enum as
	// strings; a list for a repeat field.
	Value any `json:"value"`
	// Text is the characters the value came from.
	Text string `json:"text"`
	// Page, Start and End locate Text (code-point offsets in the page's
	// text); null for a value a person entered.
	Page  *int `json:"page"`
	Start *int `json:"start"`
	End   *int `json:"end"`
	// Items is every match of a repeat field.
	Items []FieldValue `json:"items,omitempty"`
	// Source is extraction or correction.
	Source string `json:"source"`
	// CorrectedBy is who entered a corrected value.
	CorrectedBy *string `json:"corrected_by,omitempty"`
}

// UnmarshalJSON keeps integers integers (money stays int64 cents).
func (fv *FieldValue) UnmarshalJSON(b []byte) error {
	type plain FieldValue
	var v struct {
		plain
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*fv = FieldValue(v.plain)
	fv.Value = nil
	if len(v.Value) > 0 {
		d := json.NewDecoder(bytes.NewReader(v.Value))
		d.UseNumber()
		var x any
		if err := d.Decode(&x); err != nil {
			return err
		}
		fv.Value = normalizeNumbers(x)
	}
	return nil
}

func normalizeNumbers(x any) any {
	switch v := x.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case []any:
		for i := range v {
			v[i] = normalizeNumbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalizeNumbers(v[k])
		}
	}
	return x
}

func fromExtract(v extract.Value) FieldValue {
	fv := FieldValue{Value: v.Value, Text: v.Text, Page: ptr(v.Page), Start: ptr(v.Start), End: ptr(v.End), Source: SourceExtraction}
	for _, it := range v.Items {
		fv.Items = append(fv.Items, fromExtract(it))
	}
	return fv
}

// HistoryEntry is one action on a document (interface.md HistoryEntry).
type HistoryEntry struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	// By is who acted; null for the system (extraction, validation,
	// automatic approval, a process).
	By   *string `json:"by"`
	Note *string `json:"note"`
	// Version is the document version the action concerned.
	Version int `json:"version"`
}

// Review is where a document stands with the people who decide it.
type Review struct {
	// Status is pending, approved or rejected.
	Status string `json:"status"`
	// Reason is why a person must look: errors, warnings or approval (a
	// clean document of a type without auto_approve); "auto" when no
	// person was needed.
	Reason    string     `json:"reason"`
	Queue     *string    `json:"queue"`
	EnteredAt *time.Time `json:"entered_at"`
	DueAt     *time.Time `json:"due_at"`
	DecidedAt *time.Time `json:"decided_at"`
	DecidedBy *string    `json:"decided_by"`
	Note      *string    `json:"note"`
}

// Action is something a caller can do with a document now.
type Action struct {
	Name    string  `json:"name"`
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Allowed bool    `json:"allowed"`
	Reason  *string `json:"reason"`
}

// Version is one uploaded file of a document.
type Version struct {
	Version     int       `json:"version"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	SHA256      string    `json:"sha256"`
	Pages       int       `json:"pages"`
	UploadedAt  time.Time `json:"uploaded_at"`
	UploadedBy  *string   `json:"uploaded_by"`
}

// Document is a document (interface.md DocumentOut, with the extensions
// versions and problems).
type Document struct {
	ID          string                `json:"id"`
	Title       string                `json:"title"`
	TypeID      string                `json:"type_id"`
	TypeName    string                `json:"type_name"`
	Status      string                `json:"status"`
	Version     int                   `json:"version"`
	Filename    string                `json:"filename"`
	ContentType string                `json:"content_type"`
	SizeBytes   int64                 `json:"size_bytes"`
	Extracted   map[string]FieldValue `json:"extracted"`
	Validation  *Validation           `json:"validation"`
	Review      *Review               `json:"review"`
	DueAt       *time.Time            `json:"due_at"`
	CreatedAt   time.Time             `json:"created_at"`
	UpdatedAt   time.Time             `json:"updated_at"`
	Actions     []Action              `json:"actions"`
	History     []HistoryEntry        `json:"history"`
	Priority    string                `json:"priority"`
	Queue       *string               `json:"queue"`
	Tags        []string              `json:"tags"`
	Versions    []Version             `json:"versions"`
}

// record is a document as stored.
type record struct {
	ID          string                     `json:"id"`
	Title       string                     `json:"title"`
	TypeID      string                     `json:"type_id"`
	TypeName    string                     `json:"type_name"`
	Status      string                     `json:"status"`
	Version     int                        `json:"version"`
	Extracted   map[string]FieldValue      `json:"extracted"`
	Problems    map[string]extract.Problem `json:"problems,omitempty"`
	Pages       int                        `json:"pages"`
	NoText      bool                       `json:"no_text,omitempty"`
	Validation  *Validation                `json:"validation"`
	Review      *Review                    `json:"review"`
	DueAt       *time.Time                 `json:"due_at"`
	CreatedAt   time.Time                  `json:"created_at"`
	UpdatedAt   time.Time                  `json:"updated_at"`
	History     []HistoryEntry             `json:"history"`
	Priority    string                     `json:"priority"`
	Queue       *string                    `json:"queue"`
	Tags        []string                   `json:"tags"`
	Versions    []storedVersion            `json:"versions"`
	DupSupplier string                     `json:"dup_supplier,omitempty"`
	DupNumber   string                     `json:"dup_number,omitempty"`
}

// storedVersion is a Version with where its bytes are.
type storedVersion struct {
	Version
	FileID string `json:"file_id"`
	Chunks int    `json:"chunks"`
}

func (r *record) current() storedVersion { return r.Versions[len(r.Versions)-1] }

func (r *record) version(n int) (storedVersion, bool) {
	for _, v := range r.Versions {
		if v.Version.Version == n {
			return v, true
		}
	}
	return storedVersion{}, false
}

func (r *record) addHistory(at time.Time, action string, by *string, note string) {
	var n *string
	if note != "" {
		n = &note
	}
	r.History = append(r.History, HistoryEntry{At: at, Action: action, By: by, Note: n, Version: r.Version})
}

// flatFields is the extracted values as field -> value (events, the
// capability results).
func (r *record) flatFields() map[string]any {
	out := make(map[string]any, len(r.Extracted))
	for k, v := range r.Extracted {
		out[k] = v.Value
	}
	return out
}

// out renders the record as a Document for callers; typeName is the
// type's current name ("" keeps the stored one).
func (r *record) out(typeName string) *Document {
	cur := r.current()
	d := &Document{
		ID: r.ID, Title: r.Title, TypeID: r.TypeID, TypeName: r.TypeName, Status: r.Status,
		Version: r.Version, Filename: cur.Filename, ContentType: cur.ContentType, SizeBytes: cur.SizeBytes,
		Extracted: r.Extracted, Validation: r.Validation, Review: r.Review, DueAt: r.DueAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, History: r.History, Priority: r.Priority,
		Queue: r.Queue, Tags: r.Tags,
	}
	if typeName != "" {
		d.TypeName = typeName
	}
	if d.Extracted == nil {
		d.Extracted = map[string]FieldValue{}
	}
	if d.History == nil {
		d.History = []HistoryEntry{}
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	for _, v := range r.Versions {
		d.Versions = append(d.Versions, v.Version)
	}
	d.Actions = r.actions()
	return d
}

// actions lists what can be done with the document in its status.
func (r *record) actions() []Action {
	base := "/v1/docs/documents/" + r.ID
	no := func(reason string) *string { return &reason }
	decided := r.Status == StatusApproved || r.Status == StatusRejected
	inReview := r.Status == StatusValidated || r.Status == StatusNeedsReview
	approve := Action{Name: "approve", Method: "POST", Path: base + "/approve", Allowed: inReview}
	reject := Action{Name: "reject", Method: "POST", Path: base + "/reject", Allowed: inReview}
	fields := Action{Name: "correct_fields", Method: "POST", Path: base + "/fields", Allowed: !decided}
	switch {
	case decided:
		approve.Reason = no("document already " + r.Status)
		reject.Reason = no("document already " + r.Status)
		fields.Reason = no("document already " + r.Status + "; upload a new version")
	case !inReview:
		approve.Reason = no("document not yet validated")
		reject.Reason = no("document not yet validated")
	case r.Validation != nil && r.Validation.Errors > 0:
		approve.Allowed = false
		approve.Reason = no("validation errors remain; correct the fields first")
	}
	return []Action{
		approve, reject, fields,
		{Name: "upload_version", Method: "POST", Path: base + "/versions", Allowed: true},
		{Name: "feedback", Method: "POST", Path: base + "/feedback", Allowed: r.Validation != nil},
		{Name: "download", Method: "GET", Path: base + "/file", Allowed: true},
	}
}
