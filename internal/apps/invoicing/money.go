package invoicing

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
)

// MaxCents is the largest amount of money the app holds: any amount,
// subtotal, tax or total above it is a 422 (it would overflow int64).
const MaxCents = math.MaxInt64

// Money is integer cents end to end. A line's amount is quantity x
// unit_amount_cents; its tax is amount x rate / 100 rounded half up to the
// cent; rates have at most three decimals and are kept as thousandths of
// a percent so no float touches an amount.

// rateMilli turns a percentage with at most three decimals into thousandths
// of a percent; ok is false when it has more decimals.
func rateMilli(p float64) (int64, bool) {
	m := math.Round(p * 1000)
	if math.Abs(p*1000-m) > 1e-6 {
		return 0, false
	}
	return int64(m), true
}

// lineAmount returns quantity x unit, or ok false when it overflows.
func lineAmount(quantity, unit int64) (int64, bool) {
	if quantity < 0 || unit < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(quantity), uint64(unit))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// lineTax returns amount x milli / 100000 rounded half up, or ok false when
// it does not fit.
func lineTax(amount, milli int64) (int64, bool) {
	if milli == 0 || amount == 0 {
		return 0, true
	}
	n := new(big.Int).Mul(big.NewInt(amount), big.NewInt(milli))
	n.Mul(n, big.NewInt(2))
	n.Add(n, big.NewInt(100000))
	n.Quo(n, big.NewInt(200000))
	if !n.IsInt64() {
		return 0, false
	}
	return n.Int64(), true
}

// addCents returns a+b for non-negative amounts, or ok false on overflow.
func addCents(a, b int64) (int64, bool) {
	if a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}

// formatAmount renders an amount of the currency's smallest unit with its
// decimals: "USD 1,234.56", "JPY 1,234", "KWD 1.234".
func formatAmount(cur string, cents int64) string {
	digits := minorDigits(cur)
	neg := cents < 0
	u := uint64(cents)
	if neg {
		u = uint64(-(cents + 1)) + 1
	}
	pow := uint64(1)
	for range digits {
		pow *= 10
	}
	whole, frac := u/pow, u%pow
	s := strconv.FormatUint(whole, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if digits > 0 {
		f := strconv.FormatUint(frac, 10)
		b.WriteByte('.')
		b.WriteString(strings.Repeat("0", digits-len(f)) + f)
	}
	return cur + " " + b.String()
}

// formatRate renders thousandths of a percent as "8.875%".
func formatRate(milli int64) string {
	s := strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64)
	return s + "%"
}

// totals computes every line's amount and tax and the invoice's totals.
// Violations are located under loc ("lines", i, ...).
func totals(lines []Line, loc ...any) (subtotal, tax int64, vs []errs.Violation) {
	at := func(parts ...any) []any { return append(append([]any{}, loc...), parts...) }
	ok := true
	for i := range lines {
		l := &lines[i]
		amt, fits := lineAmount(l.Quantity, l.UnitAmountCents)
		if !fits {
			vs = append(vs, errs.Violation{Loc: at(i, "unit_amount_cents"), Type: "less_than_equal",
				Msg: "quantity x unit_amount_cents must be at most 9223372036854775807 cents"})
			ok = false
			continue
		}
		milli, _ := rateMilli(l.TaxRatePercent)
		t, fits := lineTax(amt, milli)
		if !fits {
			vs = append(vs, errs.Violation{Loc: at(i, "tax_rate_percent"), Type: "less_than_equal",
				Msg: "the line's tax must be at most 9223372036854775807 cents"})
			ok = false
			continue
		}
		l.AmountCents, l.TaxCents = amt, t
		if ok {
			var f1, f2 bool
			subtotal, f1 = addCents(subtotal, amt)
			tax, f2 = addCents(tax, t)
			if !f1 || !f2 {
				ok = false
			}
		}
	}
	if len(vs) > 0 {
		return 0, 0, vs
	}
	if _, fits := addCents(subtotal, tax); !ok || !fits {
		vs = append(vs, errs.Violation{Loc: at(), Type: "less_than_equal",
			Msg: "the invoice's total must be at most 9223372036854775807 cents"})
	}
	return subtotal, tax, vs
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
