package docs

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/feedback"
	"github.com/bas-platform/bas/store"
)

// The bounds of a what-if's Limit.
const (
	DefaultWhatIfLimit   = 100
	MaxWhatIfLimit       = 1000
	MaxWhatIfDifferences = 100
)

// Outcomes of a what-if: what a person or the candidate type did with a
// document.
const (
	WhatIfApproved = "approved"
	WhatIfRejected = "rejected"
	// WhatIfReview: the candidate would have left the document to a person.
	WhatIfReview = "review"
)

// WhatIfIn asks how a changed document type would have decided the
// type's documents people decided (POST /v1/docs/types/{id}/what-if). The
// candidate is the type with Fields (when given) and Workflow applied, as
// a PATCH would make it. Fields or Workflow given as null clear them, as in
// a PATCH: no fields, the default workflow; left out, the candidate keeps
// the type's own.
type WhatIfIn struct {
	Fields   *[]DocField `json:"fields,omitempty" jsonschema:"nullable,maxItems=100"`
	Workflow *WorkflowIn `json:"workflow,omitempty" jsonschema:"nullable"`
	// Since keeps the documents received at or after it.
	Since *time.Time `json:"since,omitempty"`
	// Limit bounds the documents looked at, newest first (1..1000,
	// default 100).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000"`
	// Clear names the keys set to null, "fields" and "workflow": as in a
	// DocTypePatch, the candidate has no fields, or the default workflow.
	// UnmarshalJSON fills it.
	Clear []string `json:"-"`
}

// UnmarshalJSON decodes the body and records which keys are null.
func (in *WhatIfIn) UnmarshalJSON(b []byte) error {
	type plain WhatIfIn
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err error
	if v.Clear, err = nullKeys(b, "fields", "workflow"); err != nil {
		return err
	}
	*in = WhatIfIn(v)
	return nil
}

// NoExtraProperties makes an unknown field a 422.
func (WhatIfIn) NoExtraProperties() {}

// WhatIfRule is how one rule of the candidate fared against people: of the
// decided documents it raised an issue on (Flagged), how many people
// rejected (Agreed).
type WhatIfRule struct {
	RuleID        string   `json:"rule_id"`
	Severity      string   `json:"severity"`
	Flagged       int      `json:"flagged"`
	Agreed        int      `json:"agreed"`
	AgreementRate *float64 `json:"agreement_rate"`
}

// WhatIfDocument is a document the candidate would have decided on its
// own otherwise than the person did.
type WhatIfDocument struct {
	DocumentID string `json:"document_id"`
	Title      string `json:"title"`
	Human      string `json:"human"`
	Candidate  string `json:"candidate"`
	// Issues are the rule ids of the candidate's issues.
	Issues []string `json:"issues"`
}

// WhatIfReport is how the candidate type would have decided the type's
// documents people decided, against what they decided.
type WhatIfReport struct {
	TypeID string `json:"type_id"`
	// Documents counts the documents looked at; Cases, those a person
	// approved or rejected.
	Documents int `json:"documents"`
	Cases     int `json:"cases"`
	// Outcomes counts the cases by what the candidate would have done
	// (approved, rejected: on its own; review: left to a person).
	Outcomes map[string]int `json:"outcomes"`
	// Compared counts the cases the candidate would have decided on its
	// own; Agreed, those it decided as the person did.
	Compared      int              `json:"compared"`
	Agreed        int              `json:"agreed"`
	AgreementRate *float64         `json:"agreement_rate"`
	Rules         []WhatIfRule     `json:"rules"`
	Differences   []WhatIfDocument `json:"differences"`
	// DifferenceCount counts every difference; Differences lists the
	// first MaxWhatIfDifferences, newest first.
	DifferenceCount int `json:"difference_count"`
}

// WhatIf validates the type's decided documents again with the candidate
// type, from the values they hold (extracted, and corrected by people), and
// routes them by the candidate's workflow: nothing is written, no event
// emitted, so it answers at once. A field the documents were not
// extracted with counts as not found; a duplicate is one the document was
// found to have.
func (s *Service) WhatIf(ctx context.Context, tenant, typeID string, in WhatIfIn) (*WhatIfReport, error) {
	if in.Limit == 0 {
		in.Limit = DefaultWhatIfLimit
	}
	var vs []errs.Violation
	if in.Limit < 1 || in.Limit > MaxWhatIfLimit {
		vs = append(vs, errs.Violation{Loc: []any{"limit"}, Msg: "must be from 1 to 1000", Type: "value_error"})
	}
	if in.Fields != nil {
		vs = append(vs, validateFields(*in.Fields, "fields")...)
	}
	vs = append(vs, in.Workflow.validate("workflow")...)
	var rep *WhatIfReport
	err := s.st.View(ctx, func(r store.Reader) error {
		t, err := types.Get(r, tenant, typeID)
		if err != nil {
			return err
		}
		if len(vs) > 0 {
			return errs.Validation(vs...)
		}
		cand := *t
		cand.reshape(in.Fields, in.Workflow, in.Clear) // as UpdateType makes it of the same keys
		// Every outcome is counted, none left out, so a reader finds each.
		rep = &WhatIfReport{TypeID: typeID, Outcomes: map[string]int{WhatIfApproved: 0, WhatIfRejected: 0, WhatIfReview: 0},
			Rules: []WhatIfRule{}, Differences: []WhatIfDocument{}}
		p := store.Page{}
		for rep.Documents < in.Limit {
			p.Limit = min(100, in.Limit-rep.Documents)
			page, next, err := docs.ListBy(r, tenant, "t", []any{typeID}, p)
			if err != nil {
				return err
			}
			for _, d := range page {
				if in.Since != nil && d.CreatedAt.Before(*in.Since) {
					return nil
				}
				rep.Documents++
				rep.add(d, &cand)
			}
			if next == "" {
				return nil
			}
			p.Cursor = next
		}
		return nil
	})
	return rep, err
}

// add counts a document in the report.
func (rep *WhatIfReport) add(d *record, t *DocType) {
	if d.Review == nil || d.Review.DecidedBy == nil || (d.Status != StatusApproved && d.Status != StatusRejected) {
		return
	}
	rep.Cases++
	var dups []string
	if d.Validation != nil {
		for _, is := range d.Validation.Issues {
			if strings.HasPrefix(is.RuleID, "duplicate:") {
				dups = is.Evidence.Documents
			}
		}
	}
	v := check(checkInput{typ: t, values: d.Extracted, problems: d.Problems, pages: d.Pages, noText: d.NoText, duplicates: dups})
	wf := t.Workflow
	clean := v.Errors == 0 && (v.Warnings == 0 || wf.OnWarning == OnWarningAccept)
	outcome := WhatIfReview
	switch {
	case clean && wf.AutoApprove:
		outcome = WhatIfApproved
	case v.Errors > 0 && wf.OnError == OnErrorReject:
		outcome = WhatIfRejected
	}
	rep.Outcomes[outcome]++
	human := d.Status
	seen := map[string]bool{}
	for _, is := range v.Issues {
		if seen[is.RuleID] {
			continue
		}
		seen[is.RuleID] = true
		i, found := slices.BinarySearchFunc(rep.Rules, is.RuleID, func(r WhatIfRule, id string) int { return strings.Compare(r.RuleID, id) })
		if !found {
			rep.Rules = slices.Insert(rep.Rules, i, WhatIfRule{RuleID: is.RuleID, Severity: is.Severity})
		}
		rule := &rep.Rules[i]
		rule.Flagged++
		if human == StatusRejected {
			rule.Agreed++
		}
		rule.AgreementRate = feedback.Rate(rule.Agreed, rule.Flagged-rule.Agreed)
	}
	if outcome == WhatIfReview {
		return
	}
	rep.Compared++
	if outcome == human {
		rep.Agreed++
	} else {
		rep.DifferenceCount++
		if len(rep.Differences) < MaxWhatIfDifferences {
			ids := make([]string, len(v.Issues))
			for i, is := range v.Issues {
				ids[i] = is.RuleID
			}
			rep.Differences = append(rep.Differences, WhatIfDocument{DocumentID: d.ID, Title: d.Title, Human: human,
				Candidate: outcome, Issues: ids})
		}
	}
	rep.AgreementRate = feedback.Rate(rep.Agreed, rep.Compared-rep.Agreed)
}
