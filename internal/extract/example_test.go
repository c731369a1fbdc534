package extract_test

import (
	"fmt"

	"github.com/bas-platform/bas/internal/extract"
)

func Example() {
	pages := extract.FromText("ACME Supplies Ltd\nInvoice No.: INV-7\nDate: 1 Feb 2024    Total: EUR 1.234,56\n")
	values, problems := extract.Extract(pages, []extract.Field{
		{Key: "invoice_number", Label: "Invoice number", Extract: &extract.Rule{Method: extract.MethodLabel, Aliases: []string{"Invoice No."}}},
		{Key: "issue_date", Label: "Date", Type: extract.TypeDate},
		{Key: "total", Label: "Total", Type: extract.TypeMoney},
		{Key: "po", Label: "PO", Extract: &extract.Rule{Method: extract.MethodRegex, Pattern: `PO-\d+`}},
	})
	for _, k := range []string{"invoice_number", "issue_date", "total"} {
		v := values[k]
		fmt.Printf("%s = %v (%q on page %d at %d-%d)\n", k, v.Value, v.Text, v.Page, v.Start, v.End)
	}
	for _, p := range problems {
		fmt.Printf("%s: %s: %s\n", p.Field, p.Kind, p.Message)
	}
	// Output:
	// invoice_number = INV-7 ("INV-7" on page 1 at 31-36)
	// issue_date = 2024-02-01 ("1 Feb 2024" on page 1 at 43-53)
	// total = 123456 ("EUR 1.234,56" on page 1 at 64-76)
	// po: missing: no text matches the pattern "PO-\d+"
}

func ExampleParseMoney() {
	for _, s := range []string{"1,234.56", "1.234,56", "$1,234.56", "EUR 1.234,56", "1234", "(12.50)"} {
		cents, _ := extract.ParseMoney(s)
		fmt.Println(s, "=", cents)
	}
	// Output:
	// 1,234.56 = 123456
	// 1.234,56 = 123456
	// $1,234.56 = 123456
	// EUR 1.234,56 = 123456
	// 1234 = 123400
	// (12.50) = -1250
}

func ExampleParseDate() {
	for _, s := range []string{"2024-02-01", "02/01/2024", "01.02.2024", "1 Feb 2024", "February 1, 2024"} {
		d, _ := extract.ParseDate(s)
		fmt.Println(s, "=", d)
	}
	// Output:
	// 2024-02-01 = 2024-02-01
	// 02/01/2024 = 2024-02-01
	// 01.02.2024 = 2024-02-01
	// 1 Feb 2024 = 2024-02-01
	// February 1, 2024 = 2024-02-01
}
