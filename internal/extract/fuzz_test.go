package extract_test

import (
	"strings"
	"testing"

	"github.com/bas-platform/bas/internal/extract"
)

// FuzzParse: no text panics the money, number, date, email or enum
// parsers; a date that parses is an ISO date that parses again to itself.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"1,200.00", "1.200,00", "EUR 1 234,56", "$-5", "(12.50)", "1e9", "NaN", "Inf", "-0", "99999999999999999999999",
		"12.345.678,9", "1'234.50", "２００", "2024-02-29", "2023-02-29", "29/02/2024", "March 2, 2024", "2 Mär 2024",
		"0000-00-00", "9999-12-31", "1/2/3", "x@example.com", "a@b", "", " ", "\x00", "٣٤", "1,2,3.4.5",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = extract.ParseMoney(s)
		_, _ = extract.ParseNumber(s)
		_, _ = extract.ParseEmail(s)
		_, _ = extract.MatchOption([]string{"Net 30", "net 60", "Due on receipt"}, s)
		if d, err := extract.ParseDate(s); err == nil {
			if again, err := extract.ParseDate(d); err != nil || again != d {
				t.Fatalf("ParseDate(%q) = %q, which parses as %q, %v", s, d, again, err)
			}
		}
		for _, typ := range extract.Types() {
			_, _ = extract.ParseValue(typ, []string{"a", "b"}, s)
		}
	})
}

// FuzzExtract: no document text, label or pattern panics the extractor;
// a rule that New refuses is refused with violations.
func FuzzExtract(f *testing.F) {
	for _, seed := range [][3]string{
		{"Invoice number: INV-7\nTotal: 1,200.00\nDate: 2024-03-02", "Invoice number", `INV-\d+`},
		{"Total\n\n1.200,00 EUR", "Total", `(\d+)[.,](\d+)`},
		{"a,b,c\n1,2,3", "b", `(?i)\bB\b`},
		{"", "", ""},
		{"label:", "label", `(`},
		{"x: y", "x", `a{1000}{1000}`},
		{strings.Repeat("Total: 1\n", 100), "Total", `.*`},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, text, label, pattern string) {
		fields := []extract.Field{
			{Key: "by_label", Label: "L", Type: extract.TypeMoney, Extract: &extract.Rule{Method: extract.MethodLabel, Label: label}},
			{Key: "by_regex", Label: "R", Extract: &extract.Rule{Method: extract.MethodRegex, Pattern: pattern}},
			{Key: "lines", Label: label, Type: extract.TypeNumber, Repeat: true},
			{Key: "due", Label: label, Type: extract.TypeDate},
		}
		x, err := extract.New(fields)
		if err != nil {
			return
		}
		pages := extract.FromText(text)
		if csv, err := extract.FromCSV(text); err == nil {
			pages = append(pages, csv...)
		}
		_, _ = x.Extract(pages)
	})
}
