package decisions

import (
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/feedback"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Verdict is one person's judgement of one AI output: an approval decided
// unchanged (agreed) or rejected or edited (disagreed), or feedback on a
// decision's case. Verdicts are kept per scope (a process or a decision) in
// the order they were recorded.
type Verdict struct {
	// ID is the verdict's id ("vrd_...").
	ID string `json:"id"`
	// Scope is what was judged: ProcessScope(id) or a decision's scope.
	Scope string `json:"scope"`
	// Seq numbers the scope's verdicts from 1 in the order they were
	// recorded.
	Seq int64 `json:"seq"`
	// RuleID is the rule within the scope: a process's step key, or the
	// learned rule that produced a decision's output.
	RuleID string `json:"rule_id"`
	// Agreed is true when the person agreed with the AI output.
	Agreed bool `json:"agreed"`
	// Actor is who judged.
	Actor string `json:"actor"`
	// Note is the person's note, if any.
	Note string `json:"note,omitempty"`
	// Ref names the judged item (a run, a case).
	Ref string `json:"ref,omitempty"`
	// At is when the verdict was recorded.
	At time.Time `json:"at"`
}

// Agreement is how often people agreed with AI outputs (interface.md 2.8).
type Agreement = feedback.Agreement

// RuleAgreement is the agreement on one rule.
type RuleAgreement = feedback.RuleAgreement

// ProcessScope is the verdict scope of a process's approvals.
func ProcessScope(processID string) string { return "process:" + processID }

func decisionScope(decisionID string) string { return "decision:" + decisionID }

// tally counts verdicts. There are three kinds, told apart by their id's
// first letter: a scope's total ("s|<scope>", which also holds the scope's
// last Seq), a rule's ("r|<scope>|<rule>") and a UTC day's over every scope
// ("d|2006-01-02", for the cockpit's 30-day rate).
type tally struct {
	ID       string `json:"id"`
	Scope    string `json:"scope,omitempty"`
	RuleID   string `json:"rule_id,omitempty"`
	Seq      int64  `json:"seq,omitempty"`
	Agree    int    `json:"agree"`
	Disagree int    `json:"disagree"`
}

func (t *tally) add(agreed bool) {
	if agreed {
		t.Agree++
	} else {
		t.Disagree++
	}
}

var verdicts = &store.Collection[Verdict]{
	Name:     "verdict",
	ID:       func(v *Verdict) string { return v.ID },
	NotFound: "verdict not found",
	Indexes: []store.Index[Verdict]{
		{Name: "scope", Values: func(v *Verdict) [][]any { return [][]any{{v.Scope, v.Seq}} }},
	},
}

var tallies = &store.Collection[tally]{
	Name: "agreetally",
	ID:   func(t *tally) string { return t.ID },
	Indexes: []store.Index[tally]{
		{Name: "rules", Values: func(t *tally) [][]any {
			if !strings.HasPrefix(t.ID, "r|") {
				return nil
			}
			return [][]any{{t.Scope, t.RuleID}}
		}},
	},
}

func scopeTallyID(scope string) string      { return "s|" + scope }
func ruleTallyID(scope, rule string) string { return "r|" + scope + "|" + rule }
func dayTallyID(t time.Time) string         { return "d|" + t.UTC().Format(time.DateOnly) }

// getTally loads a tally or returns a new zero one with id.
func getTally(r store.Reader, tenant, id string) (*tally, error) {
	t, err := tallies.Get(r, tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		return &tally{ID: id}, nil
	}
	return t, err
}

// RecordVerdict writes v in tx under tenant: it assigns v's Seq (the next of
// its scope), its ID (made by gen from v.At) and updates the scope's, the rule's and the
// day's tallies. Scope and At must be set.
func RecordVerdict(tx store.Txn, tenant string, gen *ids.Generator, v *Verdict) error {
	if v.Scope == "" {
		return errors.New("decisions: verdict without a scope")
	}
	if v.At.IsZero() {
		return errors.New("decisions: verdict without a time")
	}
	v.At = v.At.UTC()
	total, err := getTally(tx, tenant, scopeTallyID(v.Scope))
	if err != nil {
		return err
	}
	total.Seq++
	total.add(v.Agreed)
	v.Seq = total.Seq
	v.ID = gen.New("vrd", v.At)
	rule, err := getTally(tx, tenant, ruleTallyID(v.Scope, v.RuleID))
	if err != nil {
		return err
	}
	rule.Scope, rule.RuleID = v.Scope, v.RuleID
	rule.add(v.Agreed)
	day, err := getTally(tx, tenant, dayTallyID(v.At))
	if err != nil {
		return err
	}
	day.add(v.Agreed)
	for _, t := range []*tally{total, rule, day} {
		if err := tallies.Put(tx, tenant, t); err != nil {
			return err
		}
	}
	return verdicts.Put(tx, tenant, v)
}

// LastSeq returns the Seq of scope's latest verdict (0 when there is none).
func LastSeq(r store.Reader, tenant, scope string) (int64, error) {
	t, err := getTally(r, tenant, scopeTallyID(scope))
	if err != nil {
		return 0, err
	}
	return t.Seq, nil
}

// RecentVerdicts returns scope's latest verdicts with a Seq above after, at
// most n of them, newest first.
func RecentVerdicts(r store.Reader, tenant, scope string, after int64, n int) ([]*Verdict, error) {
	if n <= 0 {
		return nil, nil
	}
	page, _, err := verdicts.ListBy(r, tenant, "scope", []any{scope}, store.Page{Limit: n})
	if err != nil {
		return nil, err
	}
	for i, v := range page {
		if v.Seq <= after {
			return page[:i], nil
		}
	}
	return page, nil
}

// Summarize returns the agreement of scope over all its verdicts. Its cost
// grows with the number of rules, not of verdicts.
func Summarize(r store.Reader, tenant, scope string) (*Agreement, error) {
	var counts []feedback.Tally
	page := store.Page{Limit: 200, Forward: true}
	for {
		ts, next, err := tallies.ListBy(r, tenant, "rules", []any{scope}, page)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			counts = append(counts, feedback.Tally{RuleID: t.RuleID, Agree: t.Agree, Disagree: t.Disagree})
		}
		if next == "" {
			return feedback.Summarize(counts), nil
		}
		page.Cursor = next
	}
}

// Rate returns the share of agreeing verdicts over every scope of tenant in
// the days UTC days ending with now's (today and the days-1 before it), or
// nil when there was no verdict in them. It reads one tally per day.
func Rate(r store.Reader, tenant string, now time.Time, days int) (*float64, error) {
	agree, disagree := 0, 0
	day := now.UTC()
	for i := 0; i < days; i++ {
		t, err := getTally(r, tenant, dayTallyID(day.AddDate(0, 0, -i)))
		if err != nil {
			return nil, err
		}
		agree += t.Agree
		disagree += t.Disagree
	}
	if agree+disagree == 0 {
		return nil, nil
	}
	return feedback.Rate(agree, disagree), nil
}
