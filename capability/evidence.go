package capability

import "encoding/json"

// Evidence is what a finding of a check cites (an issue of a validate
// step, of a document's validation): the one record every check that
// cites evidence writes.
//
// A check that reads a record by path (a validate step's rule) names the
// path in Field and says what it found there: Present, Found (null when
// the record has none), and the operand it compared with in Expected. A
// check of a document's text cites the text found (Text, its Page and its
// code-point offsets Start and End), or what it searched for (Searched),
// or other documents (Documents). Values are the other values compared,
// by name. Field, Present and Found are written whenever Field is set;
// every other field when it is set.
type Evidence struct {
	// Field is the checked path of a record.
	Field string `json:"field,omitempty"`
	// Present is false when the record has no value at Field.
	Present bool `json:"present,omitempty"`
	// Found is the value at Field (null when missing).
	Found any `json:"found,omitempty"`
	// Expected is the operand the value was compared with, when there is
	// one.
	Expected any `json:"expected,omitempty"`
	// Text is the text found, on Page (from 1) between the code-point
	// offsets Start and End.
	Text  *string `json:"text,omitempty"`
	Page  *int    `json:"page,omitempty"`
	Start *int    `json:"start,omitempty"`
	End   *int    `json:"end,omitempty"`
	// Searched are the labels or patterns looked for, for a value not
	// found.
	Searched []string `json:"searched,omitempty"`
	// Values are the other values compared, by name (sum_equals' addends
	// and "sum", a value_field's value, a difference).
	Values map[string]any `json:"values,omitempty"`
	// Documents are the other documents cited (duplicates).
	Documents []string `json:"documents,omitempty"`
}

// MarshalJSON writes the evidence as its doc says: Field, Present and
// Found whenever Field is set, every other field when it is set.
func (e Evidence) MarshalJSON() ([]byte, error) {
	type plain Evidence
	if e.Field == "" {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		Field   string `json:"field"`
		Present bool   `json:"present"`
		Found   any    `json:"found"`
		plain
	}{e.Field, e.Present, e.Found, plain(e)})
}

// Issue is one finding of a check (a failed rule of a validate step, a
// finding of a document's validation): the one record every check that
// reports findings writes, whatever app runs the check.
//
// RuleID names the rule that failed, stable across runs
// ("required:invoice_number", "sum_equals:total"). Field is the path or
// key of the value the finding is about, null when the finding is about
// the whole record (a document with no text). Severity is "error" or
// "warning". Message says what is wrong in words a person acts on, and
// Evidence cites what the finding is based on. Every field is written,
// Field as null when it is nil.
type Issue struct {
	// RuleID is the id of the rule that found the issue.
	RuleID string `json:"rule_id"`
	// Field is the path or key of the value at fault; nil when the issue
	// is about the whole record.
	Field *string `json:"field"`
	// Severity is "error" or "warning".
	Severity string `json:"severity"`
	// Message describes the issue.
	Message string `json:"message"`
	// Evidence is what the issue cites.
	Evidence Evidence `json:"evidence"`
}

// IssueField returns the Field of an issue about the value at path: nil
// (the whole record) when path is empty.
func IssueField(path string) *string {
	if path == "" {
		return nil
	}
	return &path
}
