package process

import (
	"math"
	"slices"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/cockroachdb/errors"
)

// DefaultZThreshold is the z-score above which a value is an outlier when an
// analyse step sets none.
const DefaultZThreshold = 3.0

// AnalyseConfig configures an analyse step: statistics and outliers over a
// list of values (history).
type AnalyseConfig struct {
	// Values is the list: usually a reference such as
	// "${steps.history.result.invoices}".
	Values any `json:"values" jsonschema:"required"`
	// Field is the dotted path of the number within each item; empty when
	// the items are numbers.
	Field string `json:"field,omitempty" jsonschema:"maxLength=300"`
	// ZThreshold: a value whose |z-score| exceeds it is an outlier.
	// Defaults to 3.
	ZThreshold *float64 `json:"z_threshold,omitempty" jsonschema:"exclusiveMinimum=0,maximum=100"`
	// IQR uses Tukey's fences instead of the z-score: a value below
	// Q1 - 1.5 IQR or above Q3 + 1.5 IQR is an outlier.
	IQR bool `json:"iqr,omitempty"`
}

// AnalyseOutput is an analyse step's output. Statistics are over the
// numbers found; Stddev is the population standard deviation; percentiles
// interpolate linearly between the closest ranks. With no numbers every
// statistic is 0.
type AnalyseOutput struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	// Q1 and Q3 are the quartiles, set when IQR is used.
	Q1 *float64 `json:"q1,omitempty"`
	Q3 *float64 `json:"q3,omitempty"`
	// Skipped counts items without a value (missing field or null).
	Skipped int `json:"skipped"`
	// Outliers are in the order of the list.
	Outliers []Outlier `json:"outliers"`
}

// Outlier is one value outside the norm.
type Outlier struct {
	// Index is the item's position in the list.
	Index int     `json:"index"`
	Value float64 `json:"value"`
	// Z is the value's z-score (0 when the values do not vary).
	Z float64 `json:"z"`
}

// Analyse computes statistics and outliers over values. Items without a
// value (null, or no value at Field) are skipped and counted; any other item
// that is not a number is an error naming its index. It is pure and
// deterministic.
func Analyse(cfg AnalyseConfig, values []any) (AnalyseOutput, error) {
	out := AnalyseOutput{Outliers: []Outlier{}}
	type point struct {
		index int
		value float64
	}
	var pts []point
	for i, item := range values {
		v, ok := lookup(item, cfg.Field)
		if !ok || v == nil {
			out.Skipped++
			continue
		}
		f, ok := jsonvalue.Float(v)
		if !ok {
			if cfg.Field != "" {
				return AnalyseOutput{}, errors.Newf("item %d: %s is %s, not a number", i, cfg.Field, describe(v))
			}
			return AnalyseOutput{}, errors.Newf("item %d is %s, not a number", i, describe(v))
		}
		pts = append(pts, point{i, f})
	}
	out.Count = len(pts)
	if len(pts) == 0 {
		return out, nil
	}
	sorted := make([]float64, len(pts))
	sum := 0.0
	for i, p := range pts {
		sorted[i] = p.value
		sum += p.value
	}
	slices.Sort(sorted)
	n := float64(len(pts))
	out.Mean = sum / n
	ss := 0.0
	for _, p := range pts {
		d := p.value - out.Mean
		ss += d * d
	}
	out.Stddev = math.Sqrt(ss / n)
	out.Min, out.Max = sorted[0], sorted[len(sorted)-1]
	out.Median = percentile(sorted, 50)
	out.P90 = percentile(sorted, 90)

	z := func(v float64) float64 {
		if out.Stddev == 0 {
			return 0
		}
		return (v - out.Mean) / out.Stddev
	}
	threshold := DefaultZThreshold
	if cfg.ZThreshold != nil {
		threshold = *cfg.ZThreshold
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if cfg.IQR {
		q1, q3 := percentile(sorted, 25), percentile(sorted, 75)
		out.Q1, out.Q3 = &q1, &q3
		iqr := q3 - q1
		lo, hi = q1-1.5*iqr, q3+1.5*iqr
	}
	for _, p := range pts {
		zs := z(p.value)
		outlier := math.Abs(zs) > threshold
		if cfg.IQR {
			outlier = p.value < lo || p.value > hi
		}
		if outlier {
			out.Outliers = append(out.Outliers, Outlier{Index: p.index, Value: p.value, Z: zs})
		}
	}
	return out, nil
}

// percentile interpolates linearly between the closest ranks of sorted
// (the method of most spreadsheets, numpy's default).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	frac := rank - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// analyseStep is the analyse step type (Analyse).
func analyseStep() StepType {
	return Define(StepDef[AnalyseConfig]{
		Type: StepAnalyse, Label: "Analyse",
		Description: "Finds patterns and outliers in history: count, mean, spread, percentiles and outliers.",
		Check:       checkAnalyse,
		Eval: func(cfg *AnalyseConfig, _ map[string]any) (any, error) {
			values, ok := cfg.Values.([]any)
			if !ok {
				return nil, errors.New("values must be a list")
			}
			return Analyse(*cfg, values)
		},
	})
}

func checkAnalyse(cfg *AnalyseConfig, _ Step, loc []any) []errs.Violation {
	var v violations
	checkSource(&v, cfg.Values, at(loc, "values"), "a list", true)
	checkPath(&v, cfg.Field, at(loc, "field"), false)
	return v.vs
}
