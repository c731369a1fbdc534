package decisions

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Case statuses.
const (
	// CasePending: evaluated, not judged yet.
	CasePending = "pending"
	// CaseAgreed: a person agreed with the proposed output; it is the
	// confirmed outcome.
	CaseAgreed = "agreed"
	// CaseCorrected: a person disagreed and gave the right outcome.
	CaseCorrected = "corrected"
	// CaseDisagreed: a person disagreed without giving the right outcome;
	// the case teaches nothing.
	CaseDisagreed = "disagreed"
	// CaseRecorded: an outcome recorded directly (POST .../outcomes), with
	// no evaluation to judge.
	CaseRecorded = "recorded"
)

// Rule ids of evaluations: which confirmed cases an output came from.
const (
	// RuleNone: no confirmed case matched.
	RuleNone = "none"
	// RuleInvalidOutput: the provider's output did not satisfy the
	// decision's output_schema and was dropped.
	RuleInvalidOutput = "invalid_output"
)

// Case is one evaluated (or directly recorded) input of a decision and, once
// a person has judged it, its confirmed outcome.
type Case struct {
	ID         string `json:"id"`
	DecisionID string `json:"decision_id"`
	Decision   string `json:"decision"`
	// Input is the evaluated input.
	Input json.RawMessage `json:"input"`
	// Proposed is the output the evaluation proposed (null when none).
	Proposed json.RawMessage `json:"proposed_output"`
	// Confidence and Mode are the evaluation's.
	Confidence float64 `json:"confidence"`
	Mode       string  `json:"mode"`
	// RuleID names the learned rule the proposal came from ("exact:<key>",
	// "fields:<key>", "none").
	RuleID string `json:"rule_id"`
	// Status is pending, agreed, corrected, disagreed or recorded.
	Status string `json:"status"`
	// Outcome is the confirmed output (null until confirmed).
	Outcome json.RawMessage `json:"outcome"`
	// Note is the judging person's note.
	Note *string `json:"note"`
	// ExactKey and FieldsKey are the match keys of Input (see Provider).
	ExactKey  string `json:"exact_key"`
	FieldsKey string `json:"fields_key,omitempty"`

	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at"`
	DecidedBy *string    `json:"decided_by"`
}

// confirmed reports whether c has an outcome the provider learns from.
func (c *Case) confirmed() bool { return len(c.Outcome) > 0 && !isNull(c.Outcome) }

var cases = &store.Collection[Case]{
	Name:     "dcase",
	ID:       func(c *Case) string { return c.ID },
	NotFound: "case not found",
	Indexes: []store.Index[Case]{
		{Name: "decision", Values: func(c *Case) [][]any { return [][]any{{c.DecisionID, c.ID}} }},
	},
}

// MaxOutcomes bounds how many distinct outputs a match key remembers; past
// it, the least confirmed (then the least recently confirmed) is forgotten,
// though it still counts in the confidence's denominator.
const MaxOutcomes = 256

// outcomeTally counts the confirmed outcomes of the cases of one decision
// that share one match key, so an evaluation reads one record however many
// cases there are.
type outcomeTally struct {
	// ID is "<decision id>|exact|<key>" or "<decision id>|fields|<key>".
	ID         string `json:"id"`
	DecisionID string `json:"decision_id"`
	// Total counts every confirmation of the key.
	Total    int            `json:"total"`
	Outcomes []outcomeCount `json:"outcomes"`
}

// outcomeCount is one distinct confirmed output of a match key.
type outcomeCount struct {
	// Output is canonical JSON.
	Output json.RawMessage `json:"output"`
	Count  int             `json:"count"`
	// Last is the tally's Total when the output was last confirmed: a tie
	// goes to the larger.
	Last int `json:"last"`
}

var outcomeTallies = &store.Collection[outcomeTally]{
	Name: "doutcomes",
	ID:   func(t *outcomeTally) string { return t.ID },
	Indexes: []store.Index[outcomeTally]{
		{Name: "decision", Values: func(t *outcomeTally) [][]any { return [][]any{{t.DecisionID, t.ID}} }},
	},
}

func tallyID(decisionID, kind, key string) string { return decisionID + "|" + kind + "|" + key }

// confirm counts c's confirmed outcome under its exact and fields keys.
func confirm(tx store.Txn, tenant string, c *Case) error {
	out, err := Canonical(c.Outcome)
	if err != nil {
		return err
	}
	for _, k := range []struct{ kind, key string }{{"exact", c.ExactKey}, {"fields", c.FieldsKey}} {
		if k.key == "" {
			continue
		}
		id := tallyID(c.DecisionID, k.kind, k.key)
		t, err := outcomeTallies.Get(tx, tenant, id)
		if errors.Is(err, store.ErrNotFound) {
			t, err = &outcomeTally{ID: id, DecisionID: c.DecisionID}, nil
		}
		if err != nil {
			return err
		}
		t.add(out)
		if err := outcomeTallies.Put(tx, tenant, t); err != nil {
			return err
		}
	}
	return nil
}

// add counts one confirmation of the canonical output out.
func (t *outcomeTally) add(out json.RawMessage) {
	t.Total++
	for i := range t.Outcomes {
		if bytes.Equal(t.Outcomes[i].Output, out) {
			t.Outcomes[i].Count++
			t.Outcomes[i].Last = t.Total
			return
		}
	}
	t.Outcomes = append(t.Outcomes, outcomeCount{Output: out, Count: 1, Last: t.Total})
	if len(t.Outcomes) > MaxOutcomes {
		worst := 0
		for i, o := range t.Outcomes[:len(t.Outcomes)-1] {
			if w := t.Outcomes[worst]; o.Count < w.Count || o.Count == w.Count && o.Last < w.Last {
				worst = i
			}
		}
		t.Outcomes = slices.Delete(t.Outcomes, worst, worst+1)
	}
}

// best returns the most confirmed output (ties: the most recently
// confirmed) and its count.
func (t *outcomeTally) best() outcomeCount {
	var b outcomeCount
	for _, o := range t.Outcomes {
		if o.Count > b.Count || o.Count == b.Count && o.Last > b.Last {
			b = o
		}
	}
	return b
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// Canonical returns the canonical JSON of raw: object keys sorted, no
// insignificant space, numbers in their shortest form (an integer as an
// integer, so 1, 1.0 and 1e0 are the same). Two inputs match exactly when
// their canonical forms are equal.
func Canonical(raw json.RawMessage) ([]byte, error) {
	v, err := decodeNumbers(raw)
	if err != nil {
		return nil, err
	}
	return canonicalValue(v)
}

func decodeNumbers(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.Wrap(err, "decode JSON")
	}
	return v, nil
}

func canonicalValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalize(v)); err != nil {
		return nil, errors.Wrap(err, "encode canonical JSON")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// normalize rewrites every json.Number in v into its shortest form.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			// An integer literal: JSON allows no leading zeros, so its text
			// is already canonical (whatever its size), but for "-0".
			if string(x) == "-0" {
				return json.Number("0")
			}
			return x
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return x
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		return v
	}
}

func hashKey(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:12])
}

// matchKeys returns the exact key of input (from its canonical JSON) and its
// fields key (from the canonical JSON of the object holding only the fields
// rec's input_schema lists as required, when it lists any and input has
// them all; "" otherwise).
func matchKeys(rec *Record, input json.RawMessage) (exact, fields string, err error) {
	v, err := decodeNumbers(input)
	if err != nil {
		return "", "", err
	}
	c, err := canonicalValue(v)
	if err != nil {
		return "", "", err
	}
	exact = hashKey(c)
	obj, ok := v.(map[string]any)
	req := requiredFields(rec.InputSchema)
	if !ok || len(req) == 0 {
		return exact, "", nil
	}
	proj := make(map[string]any, len(req))
	for _, f := range req {
		fv, ok := obj[f]
		if !ok {
			return exact, "", nil
		}
		proj[f] = fv
	}
	pc, err := canonicalValue(proj)
	if err != nil {
		return "", "", err
	}
	return exact, hashKey(pc), nil
}

// requiredFields returns the sorted top-level "required" list of a JSON
// Schema.
func requiredFields(s json.RawMessage) []string {
	var doc struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(s, &doc); err != nil {
		return nil
	}
	out := slices.Clone(doc.Required)
	slices.Sort(out)
	return slices.Compact(out)
}

// match is the result of weighing confirmed cases.
type match struct {
	Output     json.RawMessage
	Confidence float64
	RuleID     string
	Cases      int
}

// bestMatch weighs rec's confirmed cases matching input: those with the
// same exact key, or, when there are none, those with the same fields key.
// The output confirmed most often wins (a tie goes to the output confirmed
// most recently); the confidence is its share of the matching cases. It
// reads one tally per key tried.
func bestMatch(r store.Reader, tenant string, rec *Record, exact, fields string) (*match, error) {
	for _, k := range []struct{ kind, key string }{{"exact", exact}, {"fields", fields}} {
		if k.key == "" {
			continue
		}
		t, err := outcomeTallies.Get(r, tenant, tallyID(rec.ID, k.kind, k.key))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		b := t.best()
		if t.Total == 0 || b.Count == 0 {
			continue
		}
		return &match{
			Output:     b.Output,
			Confidence: float64(b.Count) / float64(t.Total),
			RuleID:     k.kind + ":" + k.key,
			Cases:      t.Total,
		}, nil
	}
	return &match{Output: json.RawMessage("null"), RuleID: RuleNone}, nil
}
