package extract

import (
	"testing"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func intp(i int) *int { return &i }

// at returns the Value of text found at the first occurrence of text on
// the page (code-point offsets), for building expectations.
func at(t *testing.T, page Page, text string, value any) Value {
	t.Helper()
	rs := []rune(page.Text)
	want := []rune(text)
	for i := 0; i+len(want) <= len(rs); i++ {
		if string(rs[i:i+len(want)]) == text {
			return Value{Value: value, Text: text, Page: page.Number, Start: i, End: i + len(want)}
		}
	}
	t.Fatalf("%q not on page %d", text, page.Number)
	return Value{}
}

func TestExtractLabel(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name  string
		text  string
		field Field
		found string // the text the value comes from; "" when missing
		want  any
	}{
		{name: "colon", text: "Invoice number: INV-1\n", field: Field{Key: "n", Label: "Invoice number"}, found: "INV-1", want: "INV-1"},
		{name: "case and spacing", text: "INVOICE   NUMBER :   INV-2  \n", field: Field{Key: "n", Label: "invoice number"}, found: "INV-2", want: "INV-2"},
		{name: "tab", text: "Invoice number\tINV-3\n", field: Field{Key: "n", Label: "Invoice number"}, found: "INV-3", want: "INV-3"},
		{name: "two spaces", text: "Invoice number    INV-4\n", field: Field{Key: "n", Label: "Invoice number"}, found: "INV-4", want: "INV-4"},
		{name: "next line", text: "Invoice number:\nINV-5\n", field: Field{Key: "n", Label: "Invoice number"}, found: "INV-5", want: "INV-5"},
		{name: "next non-blank line", text: "Bill to\n\n  ACME Ltd  \n", field: Field{Key: "n", Label: "Bill to"}, found: "ACME Ltd", want: "ACME Ltd"},
		{name: "label written with colon", text: "Invoice number: INV-6", field: Field{Key: "n", Label: "Invoice number:"}, found: "INV-6", want: "INV-6"},
		{name: "optional punctuation", text: "PO Number: 4500012", field: Field{Key: "po", Label: "P.O. Number"}, found: "4500012", want: "4500012"},
		{name: "hash", text: "Invoice #: 77", field: Field{Key: "n", Label: "Invoice #"}, found: "77", want: "77"},
		{name: "whole words only", text: "Subtotal: 10.00\nTotal: 12.00", field: Field{Key: "t", Label: "Total", Type: TypeMoney}, found: "12.00", want: int64(1200)},
		{name: "single space is no separator", text: "Total amount due 5\nTotal: 7", field: Field{Key: "t", Label: "Total", Type: TypeMoney}, found: "7", want: int64(700)},
		{name: "two fields on a line", text: "Date: 1 Feb 2024    Due: 1 Mar 2024", field: Field{Key: "d", Label: "Date", Type: TypeDate}, found: "1 Feb 2024", want: "2024-02-01"},
		{name: "second field on a line", text: "Date: 1 Feb 2024\tDue date: 1 Mar 2024", field: Field{Key: "d", Label: "Due date", Type: TypeDate}, found: "1 Mar 2024", want: "2024-03-01"},
		{name: "time is no label", text: "Note: call at  10:30 please", field: Field{Key: "n", Label: "Note"}, found: "call at  10:30 please", want: "call at  10:30 please"},
		{name: "alias", text: "Amount due: $1,200.00", field: Field{Key: "t", Label: "Total", Type: TypeMoney, Extract: &Rule{Method: MethodLabel, Aliases: []string{"Grand total", "Amount due"}}}, found: "$1,200.00", want: int64(120000)},
		{name: "rule label over field label", text: "Total: 1\nInvoice total: 2", field: Field{Key: "t", Label: "Total", Type: TypeMoney, Extract: &Rule{Method: MethodLabel, Label: "Invoice total"}}, found: "2", want: int64(200)},
		{name: "first parsable candidate", text: "Total:\nDescription\tAmount\nTotal: 9.50", field: Field{Key: "t", Label: "Total", Type: TypeMoney}, found: "9.50", want: int64(950)},
		{name: "email", text: "Remit to: Accounts <ap@acme.example>", field: Field{Key: "e", Label: "Remit to", Type: TypeEmail}, found: "Accounts <ap@acme.example>", want: "ap@acme.example"},
		{name: "enum", text: "Currency: eur", field: Field{Key: "c", Label: "Currency", Type: TypeEnum, Options: []string{"EUR", "USD"}}, found: "eur", want: "EUR"},
		{name: "number", text: "Tax rate: 20%", field: Field{Key: "r", Label: "Tax rate", Type: TypeNumber}, found: "20%", want: float64(20)},
		{name: "unicode offsets", text: "Fournisseur: Société Générale\nRéférence: F-1", field: Field{Key: "r", Label: "Référence"}, found: "F-1", want: "F-1"},
		{name: "next line is another label", text: "INVOICE\nSupplier: ACME", field: Field{Key: "n", Label: "Invoice"}},
		{name: "final dot optional", text: "Invoice No: 8", field: Field{Key: "n", Label: "Invoice No."}, found: "8", want: "8"},
		{name: "leading and trailing marks required", text: "Invoice: 9\nInvoice #: 10", field: Field{Key: "n", Label: "Invoice #"}, found: "10", want: "10"},
		{name: "missing", text: "nothing here", field: Field{Key: "n", Label: "Invoice number"}},
		{name: "label at end of text", text: "Invoice number:", field: Field{Key: "n", Label: "Invoice number"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			page := Page{Number: 1, Text: test.text}
			got, problems := Extract([]Page{page}, []Field{test.field})
			want := map[string]Value{}
			var wantProblems []Problem
			if test.found != "" {
				want[test.field.Key] = at(t, page, test.found, test.want)
			} else {
				wantProblems = []Problem{{Field: test.field.Key, Kind: ProblemMissing, Message: `label "` + test.field.Label + `" not found`}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("values mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantProblems, problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtractRegex(t *testing.T) {
	t.Parallel()
	page := Page{Number: 2, Text: "Ref INV-2024-001 dated 2024-02-01\nOrder PO-99"}
	for _, test := range []struct {
		name  string
		rule  Rule
		typ   string
		found string
		want  any
	}{
		{name: "default group 1", rule: Rule{Method: MethodRegex, Pattern: `Ref (INV-[0-9-]+)`}, found: "INV-2024-001", want: "INV-2024-001"},
		{name: "whole match without groups", rule: Rule{Method: MethodRegex, Pattern: `PO-\d+`}, found: "PO-99", want: "PO-99"},
		{name: "explicit group", rule: Rule{Method: MethodRegex, Pattern: `(Ref) (INV-\S+) dated (\S+)`, Group: intp(3)}, typ: TypeDate, found: "2024-02-01", want: "2024-02-01"},
		{name: "group 0", rule: Rule{Method: MethodRegex, Pattern: `Order (PO-\d+)`, Group: intp(0)}, found: "Order PO-99", want: "Order PO-99"},
		{name: "skips matches that do not parse", rule: Rule{Method: MethodRegex, Pattern: `\b(\S+-\S+)\b`}, typ: TypeDate, found: "2024-02-01", want: "2024-02-01"},
		{name: "case sensitive as written", rule: Rule{Method: MethodRegex, Pattern: `ref (\S+)`}},
		{name: "inline flags", rule: Rule{Method: MethodRegex, Pattern: `(?i)ref (\S+)`}, found: "INV-2024-001", want: "INV-2024-001"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			f := Field{Key: "k", Label: "K", Type: test.typ, Extract: &test.rule}
			got, problems := Extract([]Page{{Number: 1, Text: "nothing"}, page}, []Field{f})
			want := map[string]Value{}
			var wantProblems []Problem
			if test.found != "" {
				want["k"] = at(t, page, test.found, test.want)
			} else {
				wantProblems = []Problem{{Field: "k", Kind: ProblemMissing, Message: "no text matches the pattern " + `"` + test.rule.Pattern + `"`}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("values mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantProblems, problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtractProblems(t *testing.T) {
	t.Parallel()
	page := Page{Number: 1, Text: "Total: twelve\nCurrency: Yen\nDate: someday"}
	fields := []Field{
		{Key: "total", Label: "Total", Type: TypeMoney},
		{Key: "currency", Label: "Currency", Type: TypeEnum, Options: []string{"EUR", "USD"}},
		{Key: "date", Label: "Date", Type: TypeDate},
		{Key: "bad", Label: "Bad", Extract: &Rule{Method: MethodRegex, Pattern: "("}},
		{Key: "po", Label: "PO", Extract: &Rule{Method: MethodLabel, Aliases: []string{"Order"}}},
	}
	got, problems := Extract([]Page{page}, fields)
	if len(got) != 0 {
		t.Errorf("values = %v, want none", got)
	}
	want := []Problem{
		{Field: "bad", Kind: ProblemRule, Message: "the field's rule is unusable: extract.pattern: is not a valid RE2 pattern: missing closing ): `(`"},
		{Field: "total", Kind: ProblemType, Message: `"twelve" has no digits`, Text: "twelve", Page: 1, Start: 7, End: 13},
		{Field: "currency", Kind: ProblemOption, Message: `"Yen" is not one of the options EUR, USD`, Text: "Yen", Page: 1, Start: 24, End: 27},
		{Field: "date", Kind: ProblemType, Message: `"someday" is not a date`, Text: "someday", Page: 1, Start: 34, End: 41},
		{Field: "po", Kind: ProblemMissing, Message: `none of the labels "PO", "Order" found`},
	}
	if diff := cmp.Diff(want, problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestExtractPagesInOrder(t *testing.T) {
	t.Parallel()
	pages := []Page{{Number: 1, Text: "Header"}, {Number: 2, Text: "Total: 5"}, {Number: 3, Text: "Total: 6"}}
	got, _ := Extract(pages, []Field{{Key: "t", Label: "Total", Type: TypeMoney}})
	want := map[string]Value{"t": {Value: int64(500), Text: "5", Page: 2, Start: 7, End: 8}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestNewReportsEveryViolation(t *testing.T) {
	t.Parallel()
	_, err := New([]Field{
		{Key: "a", Label: "A", Type: "colour"},
		{Key: "b", Label: "B", Type: TypeEnum},
		{Key: "c", Label: "C", Extract: &Rule{Method: MethodRegex, Pattern: `(x)`, Group: intp(2)}},
		{Key: "d", Label: "D", Extract: &Rule{Method: "ocr"}},
		{Key: "", Label: ""},
		{Key: "e", Label: "E", Extract: &Rule{Method: MethodLabel, Aliases: []string{"--"}}},
		{Key: "f", Label: "F", Extract: &Rule{}},
		{Key: "g", Label: "G", Extract: &Rule{Method: MethodRegex}},
	})
	if !errors.Is(err, errs.Invalid) {
		t.Fatalf("New: %v, want errs.Invalid", err)
	}
	want := []errs.Violation{
		{Loc: []any{"fields", 0, "type"}, Msg: "must be one of text, number, money, date, email, enum", Type: "enum"},
		{Loc: []any{"fields", 1, "options"}, Msg: "an enum field needs options", Type: "missing"},
		{Loc: []any{"fields", 2, "extract", "group"}, Msg: "the pattern has 1 groups", Type: "value_error"},
		{Loc: []any{"fields", 3, "extract", "method"}, Msg: "must be one of label, regex", Type: "enum"},
		{Loc: []any{"fields", 4, "key"}, Msg: "a field needs a key", Type: "missing"},
		{Loc: []any{"fields", 4, "label"}, Msg: "a field without an extract rule needs a label", Type: "missing"},
		{Loc: []any{"fields", 5, "extract", "aliases", 0}, Msg: "an alias needs a letter or digit", Type: "value_error"},
		{Loc: []any{"fields", 6, "extract", "method"}, Msg: "an extract rule needs a method (label or regex)", Type: "missing"},
		{Loc: []any{"fields", 7, "extract", "pattern"}, Msg: "a regex rule needs a pattern", Type: "missing"},
	}
	if diff := cmp.Diff(want, errs.Violations(err)); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
}

func TestExtractorReuse(t *testing.T) {
	t.Parallel()
	x, err := New([]Field{{Key: "n", Label: "Invoice number"}, {Key: "t", Label: "Total", Type: TypeMoney}})
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		text string
		want map[string]any
	}{
		{text: "Invoice number: A\nTotal: 1", want: map[string]any{"n": "A", "t": int64(100)}},
		{text: "Invoice number: B", want: map[string]any{"n": "B"}},
	} {
		vals, _ := x.Extract([]Page{{Number: 1, Text: test.text}})
		got := map[string]any{}
		for k, v := range vals {
			got[k] = v.Value
		}
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%q mismatch (-want +got):\n%s", test.text, diff)
		}
	}
}

func TestExtractRepeat(t *testing.T) {
	t.Parallel()
	page := Page{Number: 1, Text: "Widget\t2\t10.00\t20.00\nGadget\t1\t5.50\t5.50\nBroken\t1\t1\tn/a\nTotal\t25.50"}
	f := Field{Key: "line_amounts", Label: "Lines", Type: TypeMoney, Repeat: true,
		Extract: &Rule{Method: MethodRegex, Pattern: `(?m)^\pL[^\t\n]*\t[\d.,]+\t\S+\t(\S+)$`}}
	got, problems := Extract([]Page{page}, []Field{f})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	first := at(t, page, "20.00", int64(2000))
	second := Value{Value: int64(550), Text: "5.50", Page: 1, Start: 35, End: 39}
	want := map[string]Value{"line_amounts": {
		Value: []any{int64(2000), int64(550)}, Text: first.Text, Page: 1, Start: first.Start, End: first.End,
		Items: []Value{first, second},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	_, problems = Extract([]Page{{Number: 1, Text: "Widget\t2\t1\tn/a"}}, []Field{f})
	if len(problems) != 1 || problems[0].Kind != ProblemType || problems[0].Text != "n/a" {
		t.Errorf("problems = %v, want one type problem citing n/a", problems)
	}
}

func TestLabelStart(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		text string
		want string
	}{
		{text: "Due date: 2024-03-01\nDate: 2024-02-01", want: "2024-02-01"},
		{text: "Due date: 2024-03-01  Date: 2024-02-01", want: "2024-02-01"},
		{text: "Due date: 2024-03-01\tDate: 2024-02-01", want: "2024-02-01"},
		{text: "Ref 7 | Date: 2024-02-01", want: "2024-02-01"},
		{text: "   Date: 2024-02-01", want: "2024-02-01"},
		{text: "Due date: 2024-03-01", want: ""},
	} {
		got, _ := Extract([]Page{{Number: 1, Text: test.text}}, []Field{{Key: "d", Label: "Date", Type: TypeDate}})
		if g := got["d"].Value; (test.want == "" && g != nil) || (test.want != "" && g != test.want) {
			t.Errorf("%q: got %v, want %q", test.text, g, test.want)
		}
	}
}
