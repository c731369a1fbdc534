package extract

import (
	"fmt"
	"math"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
)

// The field types.
const (
	TypeText   = "text"
	TypeNumber = "number"
	TypeMoney  = "money"
	TypeDate   = "date"
	TypeEmail  = "email"
	TypeEnum   = "enum"
)

// Types lists the field types in the order the API documents them.
func Types() []string {
	return []string{TypeText, TypeNumber, TypeMoney, TypeDate, TypeEmail, TypeEnum}
}

// ErrParse marks every error of the Parse functions: the text is not a
// value of the type.
var ErrParse = errors.New("extract: cannot parse")

func parseErrorf(format string, args ...any) error {
	return errors.Mark(errors.Newf(format, args...), ErrParse)
}

// ParseValue parses s as a value of typ: text gives the trimmed string,
// number a float64, money int64 cents, date "YYYY-MM-DD", email the
// address and enum the matching option of options. An unknown type is an
// error.
func ParseValue(typ string, options []string, s string) (any, error) {
	switch typ {
	case TypeText, "":
		t := strings.TrimSpace(s)
		if t == "" {
			return nil, parseErrorf("empty text")
		}
		return t, nil
	case TypeNumber:
		return ParseNumber(s)
	case TypeMoney:
		return ParseMoney(s)
	case TypeDate:
		return ParseDate(s)
	case TypeEmail:
		return ParseEmail(s)
	case TypeEnum:
		o, ok := MatchOption(options, s)
		if !ok {
			return nil, parseErrorf("%q is not one of %s", strings.TrimSpace(s), strings.Join(options, ", "))
		}
		return o, nil
	}
	return nil, parseErrorf("unknown type %q", typ)
}

// ParseMoney parses an amount of money into integer cents. It accepts
// "1,234.56", "1.234,56", "1 234,56", "1'234.56", "1234", "1234.5",
// currency symbols and codes before or after ("$1,234.56", "EUR 1.234,56",
// "1.234,56 €"), and negatives written "-12.00", "12.00-" or "(12.00)".
//
// The decimal separator is decided so: when both '.' and ',' occur, the
// last one is decimal; when one of them occurs more than once it groups
// thousands; when it occurs once followed by exactly three digits (and
// the part before is not 0) it groups thousands ("1,234" and "1.234" are
// both 1234.00); otherwise it is decimal. Thousands groups must have three
// digits. More than two decimal places is an error, as is an amount that
// does not fit int64 cents.
func ParseMoney(s string) (int64, error) {
	body, neg, err := stripSign(s, true)
	if err != nil {
		return 0, err
	}
	ip, fp, err := splitDecimal(body)
	if err != nil {
		return 0, err
	}
	if len(fp) > 2 {
		return 0, parseErrorf("%q has more than two decimal places", strings.TrimSpace(s))
	}
	digits := ip + fp + strings.Repeat("0", 2-len(fp))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, nil
	}
	v, perr := strconv.ParseInt(digits, 10, 64)
	if perr != nil {
		return 0, parseErrorf("%q is too large", strings.TrimSpace(s))
	}
	if neg {
		v = -v
	}
	return v, nil
}

// ParseNumber parses a number with the separators ParseMoney accepts
// (without currency), an optional sign and an optional trailing '%'
// ("20%" is 20). Any number of decimal places is allowed.
func ParseNumber(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	body, neg, err := stripSign(t, false)
	if err != nil {
		return 0, err
	}
	ip, fp, err := splitDecimal(body)
	if err != nil {
		return 0, err
	}
	lit := ip
	if lit == "" {
		lit = "0"
	}
	if fp != "" {
		lit += "." + fp
	}
	v, perr := strconv.ParseFloat(lit, 64)
	if perr != nil || math.IsInf(v, 0) {
		return 0, parseErrorf("%q is not a number", strings.TrimSpace(s))
	}
	if neg {
		v = -v
	}
	return v, nil
}

// stripSign removes surrounding space, a sign ("-x", "x-", "(x)", "+x")
// and, when currency is true, currency symbols and letters on either side.
func stripSign(s string, currency bool) (string, bool, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return "", false, parseErrorf("empty amount")
	}
	neg := false
	trimCurrency := func(x string) string {
		if !currency {
			return strings.TrimSpace(x)
		}
		return strings.TrimFunc(x, func(r rune) bool {
			return unicode.IsLetter(r) || unicode.Is(unicode.Sc, r) || unicode.IsSpace(r)
		})
	}
	for i := 0; i < 2; i++ {
		t = trimCurrency(t)
		if strings.HasPrefix(t, "(") && strings.HasSuffix(t, ")") {
			if neg {
				return "", false, parseErrorf("%q has two signs", strings.TrimSpace(s))
			}
			neg = true
			t = t[1 : len(t)-1]
			continue
		}
		for _, m := range []string{"-", "\u2212"} {
			if strings.HasPrefix(t, m) || strings.HasSuffix(t, m) {
				if neg {
					return "", false, parseErrorf("%q has two signs", strings.TrimSpace(s))
				}
				neg = true
				if strings.HasPrefix(t, m) {
					t = t[len(m):]
				} else {
					t = t[:len(t)-len(m)]
				}
			}
		}
		t = strings.TrimPrefix(t, "+")
	}
	t = trimCurrency(t)
	if t == "" {
		return "", false, parseErrorf("%q has no digits", strings.TrimSpace(s))
	}
	return t, neg, nil
}

// splitDecimal splits a digit string with separators into its integer and
// fraction digits (see ParseMoney for the rules).
func splitDecimal(s string) (string, string, error) {
	bad := func() (string, string, error) { return "", "", parseErrorf("%q is not an amount", s) }
	var dots, commas, digits int
	lastDot, lastComma := -1, -1
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			dots++
			lastDot = i
		case r == ',':
			commas++
			lastComma = i
		case r == ' ' || r == '\'' || r == '\u00a0' || r == '\u202f' || r == '\u2009' || r == '\u2019':
		default:
			return bad()
		}
	}
	if digits == 0 {
		return bad()
	}
	dec := -1 // byte index of the decimal separator
	switch {
	case dots > 0 && commas > 0:
		dec = max(lastDot, lastComma)
		if (s[dec] == '.' && dots > 1) || (s[dec] == ',' && commas > 1) {
			return bad()
		}
	case dots == 1 || commas == 1:
		i := max(lastDot, lastComma)
		after := s[i+1:]
		before := strings.TrimSpace(s[:i])
		if !(len(after) == 3 && isDigits(after) && before != "" && before != "0" && before != "-0") {
			dec = i
		}
	}
	ip, fp := s, ""
	if dec >= 0 {
		ip, fp = s[:dec], s[dec+1:]
		if !isDigits(fp) || fp == "" {
			return bad()
		}
	}
	// The integer part: groups split by any grouping separator.
	groups := strings.FieldsFunc(ip, func(r rune) bool {
		return r == '.' || r == ',' || r == ' ' || r == '\'' || r == '\u00a0' || r == '\u202f' || r == '\u2009' || r == '\u2019'
	})
	if len(groups) == 0 {
		if dec < 0 {
			return bad()
		}
		return "", fp, nil
	}
	for i, g := range groups {
		if !isDigits(g) {
			return bad()
		}
		if len(groups) > 1 && ((i == 0 && len(g) > 3) || (i > 0 && len(g) != 3)) {
			return bad()
		}
	}
	if len(groups) > 1 && strings.ContainsAny(strings.TrimSpace(ip[len(ip)-1:]), ".,") {
		return bad()
	}
	return strings.Join(groups, ""), fp, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var (
	reISODate  = regexp.MustCompile(`^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?:$|[T ]\d)`)
	reNumDate  = regexp.MustCompile(`^(\d{1,2})([/.\-])(\d{1,2})([/.\-])(\d{4}|\d{2})$`)
	reCompact  = regexp.MustCompile(`^(\d{4})(\d{2})(\d{2})$`)
	reOrdinal  = regexp.MustCompile(`(\d+)(?:st|nd|rd|th)\b`)
	reDateSeps = regexp.MustCompile(`[\s,./\-]+`)
)

var monthNames = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
	"april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
	"august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9, "october": 10,
	"oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

var weekdayNames = map[string]bool{
	"monday": true, "mon": true, "tuesday": true, "tue": true, "tues": true,
	"wednesday": true, "wed": true, "thursday": true, "thu": true, "thur": true,
	"thurs": true, "friday": true, "fri": true, "saturday": true, "sat": true,
	"sunday": true, "sun": true,
}

// ParseDate parses a date and returns it as "YYYY-MM-DD". It accepts:
//
//   - ISO dates ("2024-02-01", "2024/02/01", "2024.02.01"), also followed
//     by a time ("2024-02-01T10:00:00Z"), and "20240201";
//   - numeric dates with the year last. With '/' the month comes first, as
//     in the US ("02/01/2024" is 1 February 2024); with '.' or '-' the day
//     comes first, as in most of Europe ("01.02.2024" and "01-02-2024" are
//     1 February 2024). When the preferred order gives a month above 12 the
//     other order is used ("13/02/2024" is 13 February 2024);
//   - English month names or their abbreviations, in either order, with an
//     optional weekday and ordinal suffixes ("1 Feb 2024", "February 1,
//     2024", "1st February 2024", "Thu, 1 Feb 2024", "01-FEB-24").
//
// Two-digit years are 2000-2069 for 00-69 and 1970-1999 for 70-99. A day
// that does not exist ("2024-02-30") is an error.
func ParseDate(s string) (string, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return "", parseErrorf("empty date")
	}
	if m := reISODate.FindStringSubmatch(t); m != nil {
		return makeDate(s, atoi(m[1]), atoi(m[2]), atoi(m[3]))
	}
	if m := reCompact.FindStringSubmatch(t); m != nil {
		return makeDate(s, atoi(m[1]), atoi(m[2]), atoi(m[3]))
	}
	if m := reNumDate.FindStringSubmatch(t); m != nil {
		if m[2] != m[4] {
			return "", parseErrorf("%q mixes date separators", t)
		}
		a, b, y := atoi(m[1]), atoi(m[3]), year(m[5])
		monthFirst := m[2] == "/"
		if monthFirst && a > 12 {
			monthFirst = false
		} else if !monthFirst && b > 12 && a <= 12 {
			monthFirst = true
		}
		if monthFirst {
			return makeDate(s, y, a, b)
		}
		return makeDate(s, y, b, a)
	}
	return parseNamedDate(s, t)
}

func parseNamedDate(orig, t string) (string, error) {
	low := strings.ToLower(t)
	low = reOrdinal.ReplaceAllString(low, "$1")
	var toks []string
	for _, f := range reDateSeps.Split(low, -1) {
		if f == "" || f == "of" || weekdayNames[f] {
			continue
		}
		toks = append(toks, f)
	}
	if len(toks) != 3 {
		return "", parseErrorf("%q is not a date", strings.TrimSpace(orig))
	}
	var day, month, yr int
	switch {
	case monthNames[toks[1]] > 0 && isDigits(toks[0]) && isDigits(toks[2]):
		day, month, yr = atoi(toks[0]), monthNames[toks[1]], year(toks[2])
	case monthNames[toks[0]] > 0 && isDigits(toks[1]) && isDigits(toks[2]):
		month, day, yr = monthNames[toks[0]], atoi(toks[1]), year(toks[2])
	default:
		return "", parseErrorf("%q is not a date", strings.TrimSpace(orig))
	}
	if len(toks[0]) > 2 && isDigits(toks[0]) || (isDigits(toks[1]) && len(toks[1]) > 2) {
		return "", parseErrorf("%q is not a date", strings.TrimSpace(orig))
	}
	return makeDate(orig, yr, month, day)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func year(s string) int {
	y := atoi(s)
	if len(s) == 2 {
		if y < 70 {
			return 2000 + y
		}
		return 1900 + y
	}
	if len(s) != 4 {
		return -1
	}
	return y
}

func makeDate(orig string, y, m, d int) (string, error) {
	if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31 {
		return "", parseErrorf("%q is not a valid date", strings.TrimSpace(orig))
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d || int(t.Month()) != m {
		return "", parseErrorf("%q is not a valid date", strings.TrimSpace(orig))
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d), nil
}

// ParseEmail checks an email address and returns it. It accepts a bare
// address, "mailto:" and "Name <address>". The address needs one '@', a
// non-empty local part and a domain of at least two dot-separated labels.
func ParseEmail(s string) (string, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "mailto:")
	if t == "" {
		return "", parseErrorf("empty email address")
	}
	addr := t
	if strings.ContainsAny(t, "<\"") {
		a, err := mail.ParseAddress(t)
		if err != nil {
			return "", parseErrorf("%q is not an email address", t)
		}
		addr = a.Address
	}
	at := strings.IndexByte(addr, '@')
	if at <= 0 || at != strings.LastIndexByte(addr, '@') || strings.ContainsFunc(addr, unicode.IsSpace) {
		return "", parseErrorf("%q is not an email address", t)
	}
	if _, err := mail.ParseAddress(addr); err != nil {
		return "", parseErrorf("%q is not an email address", t)
	}
	labels := strings.Split(addr[at+1:], ".")
	if len(labels) < 2 {
		return "", parseErrorf("%q is not an email address: the domain has no dot", t)
	}
	for _, l := range labels {
		if l == "" || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return "", parseErrorf("%q is not an email address: bad domain", t)
		}
	}
	if tld := labels[len(labels)-1]; utf8.RuneCountInString(tld) < 2 || isDigits(tld) {
		return "", parseErrorf("%q is not an email address: bad top-level domain", t)
	}
	return addr, nil
}

// MatchOption finds the option s names, ignoring case and spacing. When s
// is no option as a whole, it matches the one option that appears in s as
// whole words ("EUR (Euro)" matches "EUR"); two or more such options are
// no match. It returns the option as written in options.
func MatchOption(options []string, s string) (string, bool) {
	norm := normalizeSpace(strings.ToLower(s))
	if norm == "" {
		return "", false
	}
	for _, o := range options {
		if normalizeSpace(strings.ToLower(o)) == norm {
			return o, true
		}
	}
	found := ""
	for _, o := range options {
		on := normalizeSpace(strings.ToLower(o))
		if on == "" {
			continue
		}
		if containsWord(norm, on) {
			if found != "" && found != o {
				return "", false
			}
			found = o
		}
	}
	return found, found != ""
}

func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// containsWord reports whether w occurs in s bounded by non-alphanumerics.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		if !alnumBefore(s, start) && !alnumAt(s, end) {
			return true
		}
		i = start + 1
		if i >= len(s) {
			return false
		}
	}
}

func alnumBefore(s string, i int) bool {
	if i <= 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isAlnum(r)
}

func alnumAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isAlnum(r)
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
