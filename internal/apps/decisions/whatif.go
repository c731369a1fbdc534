package decisions

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
	DefaultWhatIfLimit = 100
	MaxWhatIfLimit     = 1000
	// MaxWhatIfDifferences bounds the differences a report lists.
	MaxWhatIfDifferences = 100
)

// WhatIfIn asks how the decision would have decided its judged cases with
// other thresholds (POST /v1/decisions/{name}/what-if).
type WhatIfIn struct {
	// Thresholds are the candidate thresholds; one left out keeps the
	// decision's.
	Thresholds Thresholds `json:"thresholds" jsonschema:"required"`
	// Since keeps the cases evaluated at or after it.
	Since *time.Time `json:"since,omitempty"`
	// Limit bounds the cases looked at, newest first (1..1000, default 100).
	Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000"`
}

// NoExtraProperties marks WhatIfIn as strict.
func (WhatIfIn) NoExtraProperties() {}

// WhatIfRule is the agreement on the cases of one learned rule.
type WhatIfRule struct {
	RuleID        string   `json:"rule_id"`
	Compared      int      `json:"compared"`
	Agreed        int      `json:"agreed"`
	AgreementRate *float64 `json:"agreement_rate"`
}

// WhatIfCase is a case the candidate thresholds would have let the decision
// act on alone, where the person disagreed with its output.
type WhatIfCase struct {
	CaseID     string  `json:"case_id"`
	RuleID     string  `json:"rule_id"`
	Confidence float64 `json:"confidence"`
	// Mode is the case's mode when it was evaluated; the candidate's is
	// auto.
	Mode     string          `json:"mode"`
	Proposed json.RawMessage `json:"proposed_output"`
	// Status and Outcome are the person's judgement: disagreed, or
	// corrected with the right outcome.
	Status  string          `json:"status"`
	Outcome json.RawMessage `json:"outcome"`
}

// WhatIfReport is how the decision would have decided its judged cases with
// the candidate thresholds, against the people's judgements.
type WhatIfReport struct {
	Decision   string     `json:"decision"`
	Thresholds Thresholds `json:"thresholds"`
	// Cases counts the judged cases looked at (agreed, corrected or
	// disagreed; pending and recorded ones are passed over).
	Cases int `json:"cases"`
	// Modes counts the cases by the mode the candidate gives them;
	// CurrentModes by the mode they had.
	Modes        map[string]int `json:"modes"`
	CurrentModes map[string]int `json:"current_modes"`
	// Compared counts the cases the candidate would have decided alone
	// (auto); Agreed, those where the person agreed with the output.
	Compared      int          `json:"compared"`
	Agreed        int          `json:"agreed"`
	AgreementRate *float64     `json:"agreement_rate"`
	Rules         []WhatIfRule `json:"rules"`
	// Differences are the first MaxWhatIfDifferences compared cases the
	// person disagreed with, newest first; DifferenceCount counts them all.
	Differences     []WhatIfCase `json:"differences"`
	DifferenceCount int          `json:"difference_count"`
}

// WhatIf replays the decision's judged cases, newest first, with the
// candidate thresholds: nothing is evaluated again or written (a mode
// follows from a case's recorded confidence), so it answers at once.
func (s *Service) WhatIf(ctx context.Context, tenant, name string, in WhatIfIn) (*WhatIfReport, error) {
	if in.Limit == 0 {
		in.Limit = DefaultWhatIfLimit
	}
	var vs []errs.Violation
	if in.Limit < 1 || in.Limit > MaxWhatIfLimit {
		vs = append(vs, errs.Violation{Loc: []any{"limit"}, Msg: "must be from 1 to 1000", Type: "value_error"})
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"auto", in.Thresholds.Auto}, {"suggest", in.Thresholds.Suggest}} {
		if f.v != nil && !inUnit(*f.v) {
			vs = append(vs, errs.Violation{Loc: []any{"thresholds", f.name}, Msg: "must be from 0 to 1", Type: "value_error"})
		}
	}
	var rep *WhatIfReport
	err := s.st.View(ctx, func(r store.Reader) error {
		rec, err := records.Get(r, tenant, name)
		if err != nil {
			return err
		}
		d := rec.Decision
		cand := Thresholds{Auto: in.Thresholds.Auto, Suggest: in.Thresholds.Suggest}
		if cand.Auto == nil {
			cand.Auto = d.Thresholds.Auto
		}
		if cand.Suggest == nil {
			cand.Suggest = d.Thresholds.Suggest
		}
		if *cand.Suggest > *cand.Auto && len(vs) == 0 {
			vs = append(vs, errs.Violation{Loc: []any{"thresholds", "suggest"}, Msg: "must not exceed thresholds.auto", Type: "value_error"})
		}
		if len(vs) > 0 {
			return errs.Validation(vs...)
		}
		// Every mode is counted, none left out, so a reader finds each.
		rep = &WhatIfReport{Decision: name, Thresholds: cand,
			Modes:        map[string]int{ModeAuto: 0, ModeSuggest: 0, ModeManual: 0},
			CurrentModes: map[string]int{ModeAuto: 0, ModeSuggest: 0, ModeManual: 0},
			Rules:        []WhatIfRule{}, Differences: []WhatIfCase{}}
		p := store.Page{Limit: 100}
		for looked := 0; looked < in.Limit; {
			p.Limit = min(100, in.Limit-looked)
			page, next, err := cases.ListBy(r, tenant, "decision", []any{rec.ID}, p)
			if err != nil {
				return err
			}
			for _, c := range page {
				if in.Since != nil && c.CreatedAt.Before(*in.Since) {
					return nil
				}
				looked++
				rep.add(c, cand)
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

// add counts a case in the report.
func (rep *WhatIfReport) add(c *Case, cand Thresholds) {
	var agreed bool
	switch c.Status {
	case CaseAgreed:
		agreed = true
	case CaseCorrected, CaseDisagreed:
	default:
		return
	}
	rep.Cases++
	mode := cand.Mode(c.Confidence)
	rep.Modes[mode]++
	rep.CurrentModes[c.Mode]++
	if mode != ModeAuto {
		return
	}
	i, found := slices.BinarySearchFunc(rep.Rules, c.RuleID, func(r WhatIfRule, id string) int { return strings.Compare(r.RuleID, id) })
	if !found {
		rep.Rules = slices.Insert(rep.Rules, i, WhatIfRule{RuleID: c.RuleID})
	}
	rule := &rep.Rules[i]
	rule.Compared++
	rep.Compared++
	if agreed {
		rule.Agreed++
		rep.Agreed++
	} else {
		rep.DifferenceCount++
		if len(rep.Differences) < MaxWhatIfDifferences {
			rep.Differences = append(rep.Differences, WhatIfCase{CaseID: c.ID, RuleID: c.RuleID, Confidence: c.Confidence,
				Mode: c.Mode, Proposed: c.Proposed, Status: c.Status, Outcome: c.Outcome})
		}
	}
	rule.AgreementRate = feedback.Rate(rule.Agreed, rule.Compared-rule.Agreed)
	rep.AgreementRate = feedback.Rate(rep.Agreed, rep.Compared-rep.Agreed)
}
