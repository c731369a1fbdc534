package docs

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/feedback"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Verdicts of feedback.
const (
	VerdictAgree    = feedback.VerdictAgree
	VerdictDisagree = feedback.VerdictDisagree
)

// Bounds of feedback (interface.md section 8).
const (
	MaxFeedbackItems = feedback.MaxItems
	MaxRuleIDLen     = feedback.MaxRuleIDLen
)

// FeedbackIn judges a document's validation, rule by rule (interface.md
// FeedbackIn): agree means the rule's outcome on this document was right
// (an issue it raised was real, or its silence was), disagree that it was
// wrong.
type FeedbackIn struct {
	Results []FeedbackItemIn `json:"results" jsonschema:"required,minItems=1,maxItems=200"`
}

// FeedbackItemIn is one judgement (interface.md FeedbackItemIn).
type FeedbackItemIn struct {
	RuleID  string  `json:"rule_id" jsonschema:"required,minLength=1,maxLength=80"`
	Verdict string  `json:"verdict" jsonschema:"required,enum=agree,enum=disagree"`
	Note    *string `json:"note,omitempty" jsonschema:"nullable,maxLength=2000"`
}

// Validate reports every violation of in, located at its field names; the
// HTTP API puts them under "body".
func (in FeedbackIn) Validate() []errs.Violation {
	var vs []errs.Violation
	add := func(typ, msg string, loc ...any) {
		vs = append(vs, errs.Violation{Loc: append([]any{"results"}, loc...), Msg: msg, Type: typ})
	}
	switch {
	case in.Results == nil:
		add("missing", "is required")
	case len(in.Results) == 0:
		add("too_short", "must have at least 1 item")
	case len(in.Results) > MaxFeedbackItems:
		add("too_long", fmt.Sprintf("must have at most %d items", MaxFeedbackItems))
	}
	for i, it := range in.Results {
		switch n := utf8.RuneCountInString(it.RuleID); {
		case n == 0:
			add("string_too_short", "must be at least 1 character", i, "rule_id")
		case n > MaxRuleIDLen:
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxRuleIDLen), i, "rule_id")
		}
		if it.Verdict != VerdictAgree && it.Verdict != VerdictDisagree {
			add("enum", "must be one of agree, disagree", i, "verdict")
		}
		if it.Note != nil && utf8.RuneCountInString(*it.Note) > MaxNoteLen {
			add("string_too_long", fmt.Sprintf("must be at most %d characters", MaxNoteLen), i, "note")
		}
	}
	return vs
}

// docFeedback is one person's verdict on one rule of one document; a new
// verdict from the same person replaces theirs.
type docFeedback struct {
	ID       string    `json:"id"`
	Document string    `json:"document_id"`
	TypeID   string    `json:"type_id"`
	RuleID   string    `json:"rule_id"`
	Verdict  string    `json:"verdict"`
	Note     *string   `json:"note"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Version  int       `json:"version"`
}

var feedbacks = &store.Collection[docFeedback]{
	Name: "docfeedback",
	ID:   func(f *docFeedback) string { return f.ID },
}

// ruleTally counts the verdicts on one rule of one type.
type ruleTally struct {
	ID       string `json:"id"`
	TypeID   string `json:"type_id"`
	RuleID   string `json:"rule_id"`
	Agree    int    `json:"agree"`
	Disagree int    `json:"disagree"`
}

var tallies = &store.Collection[ruleTally]{
	Name: "docagree",
	ID:   func(t *ruleTally) string { return t.ID },
	Indexes: []store.Index[ruleTally]{
		{Name: "type", Values: func(t *ruleTally) [][]any { return [][]any{{t.TypeID, t.RuleID}} }},
	},
}

func (t *ruleTally) add(verdict string, n int) {
	if verdict == VerdictAgree {
		t.Agree += n
	} else {
		t.Disagree += n
	}
}

// Agreement is how often people agreed with a type's rules (interface.md
// Agreement).
type Agreement = feedback.Agreement

// RuleAgreement is the agreement on one rule.
type RuleAgreement = feedback.RuleAgreement

// Feedback records verdicts on a document's rules and returns the
// agreement of its type. A rule id must be one of the type's rules or an
// issue the document's validation raised (422 otherwise); the document
// must have been validated (409). A person's second verdict on the same
// rule of the same document replaces the first.
func (s *Service) Feedback(ctx context.Context, tenant, actor, id string, in FeedbackIn) (*Agreement, error) {
	var typeID string
	_, err := s.change(ctx, tenant, id, func(tx store.Txn, r *record, t *DocType) error {
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if r.Validation == nil {
			return errs.Conflictf("document not yet validated")
		}
		known := map[string]bool{}
		for _, ru := range Rules(t.Fields) {
			known[ru.RuleID] = true
		}
		for _, is := range r.Validation.Issues {
			known[is.RuleID] = true
		}
		var vs []errs.Violation
		for i, it := range in.Results {
			if !known[it.RuleID] {
				vs = append(vs, errs.Violation{Loc: []any{"results", i, "rule_id"},
					Msg: fmt.Sprintf("%q is not a rule of this document's type", it.RuleID), Type: "value_error"})
			}
		}
		if err := errs.Validation(vs...); err != nil {
			return err
		}
		now := s.now()
		by := actor
		if by == "" {
			by = "-"
		}
		agree, disagree := 0, 0
		for _, it := range in.Results {
			fid := r.ID + "|" + it.RuleID + "|" + by
			old, err := feedbacks.Get(tx, tenant, fid)
			if err != nil && !errors.Is(err, errs.NotFound) {
				return err
			}
			tl, err := tallies.Get(tx, tenant, t.ID+"|"+it.RuleID)
			if errors.Is(err, errs.NotFound) {
				tl, err = &ruleTally{ID: t.ID + "|" + it.RuleID, TypeID: t.ID, RuleID: it.RuleID}, nil
			}
			if err != nil {
				return err
			}
			if old != nil {
				tl.add(old.Verdict, -1)
			}
			tl.add(it.Verdict, 1)
			if err := tallies.Put(tx, tenant, tl); err != nil {
				return err
			}
			f := &docFeedback{ID: fid, Document: r.ID, TypeID: t.ID, RuleID: it.RuleID, Verdict: it.Verdict,
				Note: it.Note, By: by, At: now, Version: r.Version}
			if err := feedbacks.Put(tx, tenant, f); err != nil {
				return err
			}
			if it.Verdict == VerdictAgree {
				agree++
			} else {
				disagree++
			}
		}
		r.UpdatedAt = now
		r.addHistory(now, "feedback", actorPtr(actor), fmt.Sprintf("%d agree, %d disagree", agree, disagree))
		typeID = t.ID
		return docs.Put(tx, tenant, r)
	})
	if err != nil {
		return nil, err
	}
	return s.Agreement(ctx, tenant, typeID)
}

// Agreement returns the agreement of people with a document type's rules.
func (s *Service) Agreement(ctx context.Context, tenant, typeID string) (*Agreement, error) {
	var counts []feedback.Tally
	err := s.st.View(ctx, func(r store.Reader) error {
		if _, err := types.Get(r, tenant, typeID); err != nil {
			return err
		}
		page := store.Page{Limit: 200, Forward: true}
		for {
			ts, next, err := tallies.ListBy(r, tenant, "type", []any{typeID}, page)
			if err != nil {
				return err
			}
			for _, t := range ts {
				counts = append(counts, feedback.Tally{RuleID: t.RuleID, Agree: t.Agree, Disagree: t.Disagree})
			}
			if next == "" {
				return nil
			}
			page.Cursor = next
		}
	})
	if err != nil {
		return nil, err
	}
	return feedback.Summarize(counts), nil
}
