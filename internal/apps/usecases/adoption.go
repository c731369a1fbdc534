package usecases

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/bas-platform/bas/store"
)

// Adoption statuses (interface.md section 3): the progression, then the
// alternatives.
const (
	StatusInterested = "interested"
	StatusPlanned    = "planned"
	StatusPiloting   = "piloting"
	StatusLive       = "live"
	StatusPaused     = "paused"
	StatusRetired    = "retired"
	StatusDeclined   = "declined"
)

// Statuses lists the adoption statuses.
var Statuses = []string{StatusInterested, StatusPlanned, StatusPiloting, StatusLive, StatusPaused, StatusRetired, StatusDeclined}

// Active reports whether status counts as active (piloting, live).
func Active(status string) bool { return status == StatusPiloting || status == StatusLive }

// Bounds of AdoptionIn and DepartmentsIn (interface.md section 8).
const (
	MaxDepartments = 14
	MaxNotes       = 4000
	MaxUserID      = 80
)

// Adoption is a workspace's take-up of a use case.
type Adoption struct {
	UseCaseID string `json:"use_case_id"`
	Status    string `json:"status"`
	// OwnerUserID is the member who owns the use case.
	OwnerUserID *string `json:"owner_user_id"`
	// Risk is the workspace's rating, never looser than the catalog tier
	// (rule 6); null keeps the tier.
	Risk        *string   `json:"risk"`
	Departments []string  `json:"departments"`
	Notes       *string   `json:"notes"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	UpdatedBy   string    `json:"updated_by"`
}

var adoptions = &store.Collection[Adoption]{
	Name:     "uc-adoption",
	ID:       func(a *Adoption) string { return a.UseCaseID },
	NotFound: "adoption not found",
	Indexes: []store.Index[Adoption]{
		{Name: "updated", Values: func(a *Adoption) [][]any { return [][]any{{a.UpdatedAt.UnixNano()}} }},
		{Name: "status", Values: func(a *Adoption) [][]any { return [][]any{{a.Status, a.UpdatedAt.UnixNano()}} }},
	},
}

// AdoptionIn changes an adoption (interface.md 2.7). Every field is
// optional; an absent or null field keeps its value. ClearOwner and
// ClearRisk clear the owner and the rating.
type AdoptionIn struct {
	Status      *string  `json:"status,omitempty" jsonschema:"enum=interested,enum=planned,enum=piloting,enum=live,enum=paused,enum=retired,enum=declined"`
	OwnerUserID *string  `json:"owner_user_id,omitempty" jsonschema:"minLength=1,maxLength=80"`
	ClearOwner  bool     `json:"clear_owner,omitempty"`
	Risk        *string  `json:"risk,omitempty" jsonschema:"enum=low,enum=medium,enum=high"`
	ClearRisk   bool     `json:"clear_risk,omitempty"`
	Departments []string `json:"departments,omitempty" jsonschema:"maxItems=14"`
	Notes       *string  `json:"notes,omitempty" jsonschema:"maxLength=4000"`
}

var adoptionSchema = sync.OnceValue(func() *schema.Validator {
	return schema.MustCompile(schema.Open(schema.Reflect(&AdoptionIn{})))
})

// DecodeAdoption reads an AdoptionIn from a JSON body and reports every
// violation at once: malformed JSON, wrong types and bounds. null is the
// same as absent. Unknown fields are ignored. Violations are located at the
// body's field names (["status"]); one of the body as a whole (JSON that is
// not an object) has an empty location. The HTTP API puts them under "body".
func DecodeAdoption(raw []byte) (AdoptionIn, error) {
	var in AdoptionIn
	doc, err := decodeObject(raw)
	if err != nil {
		return in, err
	}
	for k, v := range doc {
		if v == nil {
			delete(doc, k)
		}
	}
	vs := adoptionSchema().Validate(doc)
	b, _ := json.Marshal(doc)
	if len(vs) == 0 {
		if err := json.Unmarshal(b, &in); err != nil {
			vs = append(vs, errs.Violation{Loc: []any{}, Msg: err.Error(), Type: "type_error"})
		}
	}
	if len(vs) == 0 {
		vs = in.Check()
	}
	return in, errs.Validation(dedupe(vs)...)
}

// Check reports every violation of in's bounds and combinations, located
// at in's field names (["risk"]); the HTTP API puts them under "body" (what
// the catalog and the members decide is SetAdoption's).
func (in AdoptionIn) Check() []errs.Violation {
	var vs []errs.Violation
	if in.Status != nil && !slices.Contains(Statuses, *in.Status) {
		vs = append(vs, errs.Violation{Loc: []any{"status"}, Msg: "must be one of: interested, planned, piloting, live, paused, retired, declined", Type: "enum"})
	}
	if in.Risk != nil && !slices.Contains(RiskTiers, *in.Risk) {
		vs = append(vs, errs.Violation{Loc: []any{"risk"}, Msg: "must be one of: low, medium, high", Type: "enum"})
	}
	if in.OwnerUserID != nil {
		switch n := utf8.RuneCountInString(*in.OwnerUserID); {
		case n == 0:
			vs = append(vs, errs.Violation{Loc: []any{"owner_user_id"}, Msg: "must have at least 1 character", Type: "string_too_short"})
		case n > MaxUserID:
			vs = append(vs, errs.Violation{Loc: []any{"owner_user_id"}, Msg: "must have at most 80 characters", Type: "string_too_long"})
		}
	}
	if len(in.Departments) > MaxDepartments {
		vs = append(vs, errs.Violation{Loc: []any{"departments"}, Msg: "must have at most 14 items", Type: "too_long"})
	}
	if in.Notes != nil && utf8.RuneCountInString(*in.Notes) > MaxNotes {
		vs = append(vs, errs.Violation{Loc: []any{"notes"}, Msg: "must have at most 4000 characters", Type: "string_too_long"})
	}
	if in.OwnerUserID != nil && in.ClearOwner {
		vs = append(vs, errs.Violation{Loc: []any{"clear_owner"}, Msg: "give owner_user_id or clear_owner, not both", Type: "value_error"})
	}
	if in.Risk != nil && in.ClearRisk {
		vs = append(vs, errs.Violation{Loc: []any{"clear_risk"}, Msg: "give risk or clear_risk, not both", Type: "value_error"})
	}
	return vs
}

// dedupe drops a second violation at a location already reported.
func dedupe(vs []errs.Violation) []errs.Violation {
	seen := map[string]bool{}
	out := vs[:0]
	for _, v := range vs {
		k, _ := json.Marshal(v.Loc)
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, v)
		}
	}
	return out
}

// decodeObject decodes a JSON body that must be an object (empty means {}).
func decodeObject(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, errs.Validation(errs.Violation{Loc: []any{}, Msg: "is not valid JSON", Type: "json_invalid"})
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, errs.Validation(errs.Violation{Loc: []any{}, Msg: "must be an object", Type: "type_error"})
	}
	return m, nil
}

// atLeast reports whether risk a is at least as strict as b.
func atLeast(a, b string) bool { return slices.Index(RiskTiers, a) >= slices.Index(RiskTiers, b) }

// ProfileIn is the workspace profile (PUT /v1/use-cases/profile): every
// tag checked against the taxonomy. The PUT replaces the whole profile;
// absent or null lists are empty, an absent or null size is none.
type ProfileIn struct {
	Industries  []string `json:"industries,omitempty" jsonschema:"maxItems=20"`
	Size        *string  `json:"size,omitempty" jsonschema:"maxLength=80"`
	Systems     []string `json:"systems,omitempty" jsonschema:"maxItems=60"`
	Regulations []string `json:"regulations,omitempty" jsonschema:"maxItems=30"`
}

// Profile is the workspace's tags as stored on the workspace record.
type Profile struct {
	Industries  []string `json:"industries"`
	Size        *string  `json:"size"`
	Systems     []string `json:"systems"`
	Regulations []string `json:"regulations"`
}

var profileSchema = sync.OnceValue(func() *schema.Validator {
	return schema.MustCompile(schema.Open(schema.Reflect(&ProfileIn{})))
})

// DecodeProfile reads a ProfileIn from a JSON body and reports every
// violation of its JSON types and bounds at once (null is the same as
// absent); the tags are checked by SetProfile. Violations are located as
// DecodeAdoption locates them.
func DecodeProfile(raw []byte) (ProfileIn, error) {
	var in ProfileIn
	doc, err := decodeObject(raw)
	if err != nil {
		return in, err
	}
	for k, v := range doc {
		if v == nil {
			delete(doc, k)
		}
	}
	if vs := profileSchema().Validate(doc); len(vs) > 0 {
		return in, errs.Validation(vs...)
	}
	b, _ := json.Marshal(doc)
	if err := json.Unmarshal(b, &in); err != nil {
		return in, errs.Validation(errs.Violation{Loc: []any{}, Msg: err.Error(), Type: "type_error"})
	}
	return in, nil
}

// DepartmentsIn sets a person's departments (interface.md 2.7).
type DepartmentsIn struct {
	Departments []string `json:"departments" jsonschema:"required,maxItems=14"`
}
