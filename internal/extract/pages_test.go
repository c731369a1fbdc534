package extract

import (
	"bytes"
	"context"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/go-pdf/fpdf"
	"github.com/google/go-cmp/cmp"
)

// invoicePDF draws a two-page invoice with fpdf: label lines, a table row
// of three cells, and a second page.
func invoicePDF(t testing.TB, compress bool) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetCompression(compress)
	p.AddPage()
	p.SetFont("Helvetica", "", 11)
	for i, l := range []string{
		"ACME Supplies Ltd",
		"Invoice number: INV-2024-001",
		"Invoice date: 1 Feb 2024",
		"Total: EUR 1.200,00",
	} {
		p.Text(20, float64(20+8*i), l)
	}
	p.SetXY(20, 60)
	p.CellFormat(60, 8, "Widget", "", 0, "L", false, 0, "")
	p.CellFormat(30, 8, "2", "", 0, "R", false, 0, "")
	p.CellFormat(30, 8, "600.00", "", 1, "R", false, 0, "")
	p.AddPage()
	p.Text(20, 20, "Page two")
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFromPDF(t *testing.T) {
	t.Parallel()
	for _, compress := range []bool{false, true} {
		pages, err := FromPDF(context.Background(), invoicePDF(t, compress), Budget{})
		if err != nil {
			t.Fatal(err)
		}
		want := []Page{
			{Number: 1, Text: "ACME Supplies Ltd\nInvoice number: INV-2024-001\nInvoice date: 1 Feb 2024\nTotal: EUR 1.200,00\nWidget\t2\t600.00"},
			{Number: 2, Text: "Page two"},
		}
		if diff := cmp.Diff(want, pages); diff != "" {
			t.Errorf("compress=%v: pages mismatch (-want +got):\n%s", compress, diff)
		}
	}
}

func TestFromPDFBroken(t *testing.T) {
	t.Parallel()
	good := invoicePDF(t, true)
	for name, data := range map[string][]byte{
		"not a pdf": []byte("%PDF-1.4 garbage"),
		"truncated": good[:len(good)/2],
		"empty":     nil,
	} {
		if _, err := FromPDF(context.Background(), data, Budget{}); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: err = %v, want ErrUnreadable", name, err)
		}
	}
}

func TestFromCSV(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name, in, want string
	}{
		{
			name: "label value",
			in:   "Invoice number,INV-1\r\nTotal,\"1,234.56\"\nSupplier, ACME Ltd ,\n",
			want: "Invoice number\tINV-1\nTotal\t1,234.56\nSupplier\tACME Ltd\n",
		},
		{
			name: "label value then a table",
			in:   "Invoice number,INV-1\ndescription,qty,amount\nWidget,2,10.00\n",
			want: "Invoice number\tINV-1\ndescription\tqty\tamount\nWidget\t2\t10.00\n",
		},
		{
			name: "header and rows",
			in:   "Invoice number,Total,Currency\nINV-1,\"1,234.56\",EUR\nINV-2,5.00,\n",
			want: "Invoice number\tINV-1\nTotal\t1,234.56\nCurrency\tEUR\n\nInvoice number\tINV-2\nTotal\t5.00\n",
		},
		{
			name: "semicolons",
			in:   "Rechnungsnummer;R-7\nBetrag;1.234,56\n",
			want: "Rechnungsnummer\tR-7\nBetrag\t1.234,56\n",
		},
		{name: "empty", in: "", want: ""},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			pages, err := FromCSV(test.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Page{{Number: 1, Text: test.want}}, pages); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromText(t *testing.T) {
	t.Parallel()
	got := FromText("one\r\ntwo\fthree\f")
	want := []Page{{Number: 1, Text: "one\ntwo"}, {Number: 2, Text: "three"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestDetectContentType(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for _, test := range []struct {
		name string
		file string
		data []byte
		want string
	}{
		{name: "pdf", file: "a.bin", data: invoicePDF(t, true), want: "application/pdf"},
		{name: "pdf after junk", file: "a", data: []byte("\r\n\r\n%PDF-1.7 ..."), want: "application/pdf"},
		{name: "text", file: "a.txt", data: []byte("Invoice number: 1\nTotal: 1,234.56\n"), want: "text/plain; charset=utf-8"},
		{name: "csv by name", file: "a.CSV", data: []byte("a\nb\n"), want: "text/csv; charset=utf-8"},
		{name: "csv by content", file: "upload", data: []byte("Invoice number,INV-1\nTotal,5\n"), want: "text/csv; charset=utf-8"},
		{name: "txt name wins", file: "a.txt", data: []byte("Invoice number,INV-1\nTotal,5\n"), want: "text/plain; charset=utf-8"},
		{name: "ragged commas are text", file: "upload", data: []byte("Total: 1,234.56\nNo commas here\n"), want: "text/plain; charset=utf-8"},
		{name: "utf-16", file: "a.txt", data: []byte("\xff\xfeT\x00o\x00"), want: "text/plain; charset=utf-16le"},
		{name: "png", file: "a.pdf", data: png, want: "image/png"},
		{name: "binary", file: "a.txt", data: []byte{0, 1, 2, 3, 0xff}, want: "application/octet-stream"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			if got := DetectContentType(test.file, test.data); got != test.want {
				t.Errorf("DetectContentType = %q, want %q", got, test.want)
			}
		})
	}
}

func TestFromFile(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name    string
		ct      string
		data    []byte
		want    []Page
		wantErr bool
	}{
		{name: "text", ct: "text/plain; charset=utf-8", data: []byte("a: 1"), want: []Page{{Number: 1, Text: "a: 1"}}},
		{name: "latin-1", ct: "text/plain", data: []byte("Soci\xe9t\xe9"), want: []Page{{Number: 1, Text: "Société"}}},
		{name: "utf-16be", ct: "text/plain; charset=utf-16be", data: []byte("\xfe\xff\x00O\x00K"), want: []Page{{Number: 1, Text: "OK"}}},
		{name: "bom", ct: "text/plain", data: []byte("\uFEFFx"), want: []Page{{Number: 1, Text: "x"}}},
		{name: "csv", ct: "text/csv", data: []byte("a,1\n"), want: []Page{{Number: 1, Text: "a\t1\n"}}},
		{name: "image", ct: "image/png", data: []byte("x"), wantErr: true},
		{name: "bad type", ct: "", data: []byte("x"), wantErr: true},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			got, err := FromFile(context.Background(), test.ct, test.data, Budget{})
			if test.wantErr {
				if !errors.Is(err, ErrUnreadable) {
					t.Fatalf("err = %v, want ErrUnreadable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if !Supported("application/pdf") || !Supported("text/csv; charset=utf-8") || Supported("image/png") || Supported("") {
		t.Error("Supported answers wrongly")
	}
}

func TestExtractFromPDF(t *testing.T) {
	t.Parallel()
	pages, err := FromFile(context.Background(), DetectContentType("invoice.pdf", invoicePDF(t, true)), invoicePDF(t, true), Budget{})
	if err != nil {
		t.Fatal(err)
	}
	got, problems := Extract(pages, []Field{
		{Key: "invoice_number", Label: "Invoice number"},
		{Key: "issue_date", Label: "Invoice date", Type: TypeDate},
		{Key: "total", Label: "Total", Type: TypeMoney},
		{Key: "line_amount", Label: "Widget", Type: TypeMoney, Extract: &Rule{Method: MethodRegex, Pattern: `Widget\t\d+\t(\S+)`}},
	})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := map[string]Value{
		"invoice_number": at(t, pages[0], "INV-2024-001", "INV-2024-001"),
		"issue_date":     at(t, pages[0], "1 Feb 2024", "2024-02-01"),
		"total":          at(t, pages[0], "EUR 1.200,00", int64(120000)),
		"line_amount":    at(t, pages[0], "600.00", int64(60000)),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
