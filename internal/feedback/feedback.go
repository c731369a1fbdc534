// Package feedback is the agreement ledger's shared shape: people judge
// what the workspace's rules and AI outputs said (agree or disagree, rule by
// rule), and an Agreement says how often they agreed, overall and per rule.
// The documents app tallies verdicts on a document type's rules, the
// decisions app on a process's approvals and a decision's cases; both keep
// their tallies in their own collections and summarise them here, so the
// numbers and their JSON are the same everywhere (interface.md Agreement).
package feedback

import (
	"slices"
	"strings"
)

// Verdicts of feedback (interface.md FeedbackItemIn).
const (
	VerdictAgree    = "agree"
	VerdictDisagree = "disagree"
)

// Bounds of feedback (interface.md section 8).
const (
	// MaxItems bounds the verdicts of one feedback request.
	MaxItems = 200
	// MaxRuleIDLen bounds a rule id.
	MaxRuleIDLen = 80
	// MaxNoteLen bounds a verdict's note.
	MaxNoteLen = 2000
)

// Agreement is how often people agreed (interface.md Agreement).
type Agreement struct {
	// Overall is agreed / judged over every rule, or null when nothing was
	// judged.
	Overall *float64 `json:"overall"`
	// Items is the number of verdicts.
	Items int `json:"items"`
	// ByRule is per rule, sorted by rule id.
	ByRule []RuleAgreement `json:"by_rule"`
}

// RuleAgreement is the agreement on one rule.
type RuleAgreement struct {
	RuleID   string  `json:"rule_id"`
	Agree    int     `json:"agree"`
	Disagree int     `json:"disagree"`
	Rate     float64 `json:"rate"`
}

// Tally counts the verdicts on one rule.
type Tally struct {
	RuleID          string
	Agree, Disagree int
}

// Summarize returns the agreement of the rules' tallies: rules nobody
// judged are left out, the others sorted by rule id with their rates, and
// Items and Overall over all of them.
func Summarize(tallies []Tally) *Agreement {
	out := &Agreement{ByRule: []RuleAgreement{}}
	agree := 0
	for _, t := range tallies {
		n := t.Agree + t.Disagree
		if n == 0 {
			continue
		}
		out.ByRule = append(out.ByRule, RuleAgreement{RuleID: t.RuleID, Agree: t.Agree, Disagree: t.Disagree,
			Rate: float64(t.Agree) / float64(n)})
		out.Items += n
		agree += t.Agree
	}
	slices.SortFunc(out.ByRule, func(a, b RuleAgreement) int { return strings.Compare(a.RuleID, b.RuleID) })
	out.Overall = Rate(agree, out.Items-agree)
	return out
}

// Rate is agree/(agree+disagree), or nil when both are zero.
func Rate(agree, disagree int) *float64 {
	if agree+disagree == 0 {
		return nil
	}
	f := float64(agree) / float64(agree+disagree)
	return &f
}
