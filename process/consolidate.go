package process

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/cockroachdb/errors"
)

// ConsolidateConfig configures a consolidate step: match the items of Left
// (the items to account for, e.g. an invoice) with those of Right (the
// reference pool, e.g. the open purchase orders) by Keys, and compare the
// fields named by Tolerances.
type ConsolidateConfig struct {
	// Left is an object or a list of objects: usually a reference.
	Left any `json:"left" jsonschema:"required"`
	// Right is an object or a list of objects: usually a reference.
	Right any `json:"right" jsonschema:"required"`
	// Keys pair a field path of a left item with one of a right item; two
	// items match when every pair holds equal values. Key values compare
	// as text, ignoring case and surrounding space, so "PO-7 " matches
	// "po-7" and 123 matches "123".
	Keys []KeyPair `json:"keys" jsonschema:"required,minItems=1,maxItems=10"`
	// Tolerances name the fields compared on each match and how far apart
	// they may be.
	Tolerances []Tolerance `json:"tolerances,omitempty" jsonschema:"maxItems=50"`
	// RequireMatch fails the step when the output is not matched.
	RequireMatch bool `json:"require_match,omitempty"`
}

// KeyPair names a key field on each side.
type KeyPair struct {
	Left  string `json:"left" jsonschema:"required,minLength=1,maxLength=300"`
	Right string `json:"right" jsonschema:"required,minLength=1,maxLength=300"`
}

// Tolerance compares a field of a left item with one of its right match.
// Without AbsCents or Percent the values must be equal; with them, two
// numbers are within tolerance when they are at most AbsCents apart or at
// most Percent percent of the right value apart (either bound suffices).
type Tolerance struct {
	Left     string   `json:"left" jsonschema:"required,minLength=1,maxLength=300"`
	Right    string   `json:"right" jsonschema:"required,minLength=1,maxLength=300"`
	AbsCents *int64   `json:"abs_cents,omitempty" jsonschema:"minimum=0"`
	Percent  *float64 `json:"percent,omitempty" jsonschema:"minimum=0,maximum=100"`
}

// ConsolidateOutput is a consolidate step's output.
type ConsolidateOutput struct {
	// Matched is true when every left item found a match and every compared
	// field of every match is within tolerance (unmatched right items do
	// not count: the right side is the pool matched against).
	Matched bool `json:"matched"`
	// Matches pair left and right items, in left order.
	Matches []Match `json:"matches"`
	// UnmatchedLeft are the left items without a match.
	UnmatchedLeft []Unmatched `json:"unmatched_left"`
	// UnmatchedRight are the right items no left item matched.
	UnmatchedRight []Unmatched `json:"unmatched_right"`
}

// Match is a left item and its right match.
type Match struct {
	LeftIndex  int `json:"left_index"`
	RightIndex int `json:"right_index"`
	Left       any `json:"left"`
	Right      any `json:"right"`
	// Differences are the compared fields whose values differ.
	Differences []Difference `json:"differences"`
	// WithinTolerance is true when every difference is within tolerance.
	WithinTolerance bool `json:"within_tolerance"`
}

// Difference is one compared field whose values differ.
type Difference struct {
	// Field is the left path; RightField the right one when it differs.
	Field      string `json:"field"`
	RightField string `json:"right_field,omitempty"`
	Left       any    `json:"left"`
	Right      any    `json:"right"`
	// Delta is left minus right, when both are numbers.
	Delta           any  `json:"delta,omitempty"`
	WithinTolerance bool `json:"within_tolerance"`
}

// Unmatched is an item without a match.
type Unmatched struct {
	Index  int    `json:"index"`
	Item   any    `json:"item"`
	Reason string `json:"reason"`
}

// Consolidate matches left with right. Each side is an object (one item) or
// a list of items. Items are matched in order: each left item takes the
// first right item with equal keys that no earlier left item took. It is
// pure and deterministic.
func Consolidate(cfg ConsolidateConfig, left, right any) ConsolidateOutput {
	ls, rs := items(left), items(right)
	out := ConsolidateOutput{Matches: []Match{}, UnmatchedLeft: []Unmatched{}, UnmatchedRight: []Unmatched{}}

	// Index the right items by their composite key.
	pool := map[string][]int{}
	rightMissing := map[int]string{}
	for j, it := range rs {
		k, missing := itemKey(it, cfg.Keys, false)
		if missing != "" {
			rightMissing[j] = missing
			continue
		}
		pool[k] = append(pool[k], j)
	}
	taken := make([]bool, len(rs))
	out.Matched = true
	for i, it := range ls {
		k, missing := itemKey(it, cfg.Keys, true)
		if missing != "" {
			out.Matched = false
			out.UnmatchedLeft = append(out.UnmatchedLeft, Unmatched{Index: i, Item: it,
				Reason: fmt.Sprintf("key field %s has no value", missing)})
			continue
		}
		cands := pool[k]
		if len(cands) == 0 {
			out.Matched = false
			out.UnmatchedLeft = append(out.UnmatchedLeft, Unmatched{Index: i, Item: it,
				Reason: "no right item has " + describeKey(it, cfg.Keys, false)})
			continue
		}
		j := cands[0]
		pool[k] = cands[1:]
		taken[j] = true
		m := Match{LeftIndex: i, RightIndex: j, Left: it, Right: rs[j], Differences: []Difference{}, WithinTolerance: true}
		for _, t := range cfg.Tolerances {
			d, differs := compareField(t, it, rs[j])
			if !differs {
				continue
			}
			m.Differences = append(m.Differences, d)
			if !d.WithinTolerance {
				m.WithinTolerance = false
			}
		}
		if !m.WithinTolerance {
			out.Matched = false
		}
		out.Matches = append(out.Matches, m)
	}
	for j, it := range rs {
		if taken[j] {
			continue
		}
		reason := "no left item has " + describeKey(it, cfg.Keys, true)
		if missing, ok := rightMissing[j]; ok {
			reason = fmt.Sprintf("key field %s has no value", missing)
		}
		out.UnmatchedRight = append(out.UnmatchedRight, Unmatched{Index: j, Item: it, Reason: reason})
	}
	if len(ls) == 0 {
		out.Matched = false
	}
	return out
}

// items turns one side into a list: a list as it is, anything else (an
// object) as one item; null as none.
func items(v any) []any {
	if v == nil {
		return nil
	}
	if l, ok := jsonvalue.AsList(v); ok {
		return l
	}
	return []any{v}
}

// itemKey builds the normalised composite key of an item, or names the
// first key field without a value.
func itemKey(it any, keys []KeyPair, left bool) (key, missing string) {
	parts := make([]string, len(keys))
	for n, k := range keys {
		path := k.Right
		if left {
			path = k.Left
		}
		v, ok := lookup(it, path)
		if !ok || v == nil {
			return "", path
		}
		s := normKey(v)
		if s == "" {
			return "", path
		}
		parts[n] = strconv.Quote(s)
	}
	return strings.Join(parts, "\x00"), ""
}

func normKey(v any) string {
	return strings.ToLower(strings.TrimSpace(text(v)))
}

// describeKey names the key values of it, an item of one side, as the other
// side would have to hold them: "sku = A-1 and qty = 2" in the other side's
// field names. right tells that it is a right item.
func describeKey(it any, keys []KeyPair, right bool) string {
	parts := make([]string, len(keys))
	for n, k := range keys {
		own, other := k.Left, k.Right
		if right {
			own, other = k.Right, k.Left
		}
		v, _ := lookup(it, own)
		parts[n] = fmt.Sprintf("%s = %s", other, text(v))
	}
	return strings.Join(parts, " and ")
}

// compareField compares one tolerance's fields of a match; differs is false
// when the values are equal.
func compareField(t Tolerance, l, r any) (d Difference, differs bool) {
	lv, lok := lookup(l, t.Left)
	rv, rok := lookup(r, t.Right)
	d = Difference{Field: t.Left, Left: lv, Right: rv}
	if t.Right != t.Left {
		d.RightField = t.Right
	}
	if !lok || !rok {
		if !lok && !rok {
			return d, false
		}
		return d, true
	}
	lr, lnum := jsonvalue.AsRat(lv)
	rr, rnum := jsonvalue.AsRat(rv)
	if !lnum || !rnum {
		if jsonvalue.Equal(lv, rv) {
			return d, false
		}
		return d, true
	}
	delta := new(big.Rat).Sub(lr, rr)
	if delta.Sign() == 0 {
		return d, false
	}
	d.Delta = ratValue(delta)
	abs := new(big.Rat).Abs(delta)
	if t.AbsCents != nil && abs.Cmp(new(big.Rat).SetInt64(*t.AbsCents)) <= 0 {
		d.WithinTolerance = true
	}
	if t.Percent != nil {
		// |delta| <= percent/100 * |right|
		bound := new(big.Rat).Mul(jsonvalue.RatFromFloat(*t.Percent), new(big.Rat).Abs(rr))
		bound.Quo(bound, big.NewRat(100, 1))
		if abs.Cmp(bound) <= 0 {
			d.WithinTolerance = true
		}
	}
	return d, true
}

// consolidateStep is the consolidate step type (Consolidate); with
// require_match, sources that do not match fail the run (ErrNoMatch).
func consolidateStep() StepType {
	return Define(StepDef[ConsolidateConfig]{
		Type: StepConsolidate, Label: "Consolidate",
		Description: "Pulls sources together and matches them by keys with tolerances (for example invoice to purchase order).",
		Check:       checkConsolidate,
		Eval: func(cfg *ConsolidateConfig, _ map[string]any) (any, error) {
			out := Consolidate(*cfg, cfg.Left, cfg.Right)
			if cfg.RequireMatch && !out.Matched {
				return out, errors.Mark(errors.New("the sources do not match"), ErrNoMatch)
			}
			return out, nil
		},
	})
}

func checkConsolidate(cfg *ConsolidateConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	checkSource(&v, cfg.Left, at(loc, "left"), "an object or a list", true)
	checkSource(&v, cfg.Right, at(loc, "right"), "an object or a list", true)
	for i, k := range cfg.Keys {
		checkPath(&v, k.Left, at(loc, "keys", i, "left"), true)
		checkPath(&v, k.Right, at(loc, "keys", i, "right"), true)
	}
	for i, t := range cfg.Tolerances {
		checkPath(&v, t.Left, at(loc, "tolerances", i, "left"), true)
		checkPath(&v, t.Right, at(loc, "tolerances", i, "right"), true)
	}
	return v.vs
}
