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

// MaxMatches bounds how many of the newest matching confirmed cases the
// built-in provider weighs for one evaluation.
const MaxMatches = 1000

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
		{Name: "exact", Values: func(c *Case) [][]any {
			if !c.confirmed() {
				return nil
			}
			return [][]any{{c.DecisionID, c.ExactKey, c.ID}}
		}},
		{Name: "fields", Values: func(c *Case) [][]any {
			if !c.confirmed() || c.FieldsKey == "" {
				return nil
			}
			return [][]any{{c.DecisionID, c.FieldsKey, c.ID}}
		}},
	},
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
// The output confirmed most often wins (a tie goes to the output of the
// newest case); the confidence is its share of the matching cases.
func bestMatch(r store.Reader, tenant string, rec *Record, exact, fields string) (*match, error) {
	try := func(index, key, rule string) (*match, error) {
		if key == "" {
			return nil, nil
		}
		found, _, err := cases.ListBy(r, tenant, index, []any{rec.ID, key}, store.Page{Limit: MaxMatches})
		if err != nil || len(found) == 0 {
			return nil, err
		}
		type tallyOut struct {
			raw   json.RawMessage
			n     int
			first int // position of its newest case
		}
		var order []string
		counts := map[string]*tallyOut{}
		for i, c := range found {
			k, err := Canonical(c.Outcome)
			if err != nil {
				return nil, err
			}
			t, ok := counts[string(k)]
			if !ok {
				t = &tallyOut{raw: k, first: i}
				counts[string(k)] = t
				order = append(order, string(k))
			}
			t.n++
		}
		best := counts[order[0]]
		for _, k := range order[1:] {
			if t := counts[k]; t.n > best.n {
				best = t
			}
		}
		return &match{
			Output:     best.raw,
			Confidence: float64(best.n) / float64(len(found)),
			RuleID:     rule + ":" + key,
			Cases:      len(found),
		}, nil
	}
	m, err := try("exact", exact, "exact")
	if err != nil || m != nil {
		return m, err
	}
	m, err = try("fields", fields, "fields")
	if err != nil || m != nil {
		return m, err
	}
	return &match{Output: json.RawMessage("null"), RuleID: RuleNone}, nil
}
