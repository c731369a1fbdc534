package extract

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestParseMoney(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "1,234.56", want: 123456},
		{in: "1.234,56", want: 123456},
		{in: "$1,234.56", want: 123456},
		{in: "EUR 1.234,56", want: 123456},
		{in: "1.234,56 €", want: 123456},
		{in: "USD1,234.56", want: 123456},
		{in: "1234", want: 123400},
		{in: "1234.5", want: 123450},
		{in: "0.99", want: 99},
		{in: ".5", want: 50},
		{in: "1,234", want: 123400},
		{in: "1.234", want: 123400},
		{in: "12,5", want: 1250},
		{in: "1 234,56", want: 123456},
		{in: "1\u00a0234,56", want: 123456},
		{in: "1'234.56", want: 123456},
		{in: "1,234,567.89", want: 123456789},
		{in: "1.234.567,89", want: 123456789},
		{in: "-1,234.56", want: -123456},
		{in: "1,234.56-", want: -123456},
		{in: "(1,234.56)", want: -123456},
		{in: "-$12.00", want: -1200},
		{in: "$(12.00)", want: -1200},
		{in: "(USD 12.00)", want: -1200},
		{in: "\u221212.00", want: -1200},
		{in: "+5", want: 500},
		{in: "0", want: 0},
		{in: "0,00", want: 0},
		{in: "  £ 7.10 ", want: 710},
		{in: "", wantErr: true},
		{in: "abc", wantErr: true},
		{in: "$", wantErr: true},
		{in: "1.2345", wantErr: true},
		{in: "1,23,456.00", wantErr: true},
		{in: "12,34.00", wantErr: true},
		{in: "1.234.56", wantErr: true},
		{in: "1,234.567", wantErr: true},
		{in: "--5", wantErr: true},
		{in: "(-5)", wantErr: true},
		{in: "12a34", wantErr: true},
		{in: "99999999999999999999", wantErr: true},
	} {
		t.Run(test.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMoney(test.in)
			if test.wantErr {
				if err == nil {
					t.Fatalf("ParseMoney(%q) = %d, want an error", test.in, got)
				}
				if !errors.Is(err, ErrParse) {
					t.Errorf("error %v is not marked ErrParse", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMoney(%q): %v", test.in, err)
			}
			if got != test.want {
				t.Errorf("ParseMoney(%q) = %d, want %d", test.in, got, test.want)
			}
		})
	}
}

func TestParseNumber(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{in: "42", want: 42},
		{in: "-3", want: -3},
		{in: "1,234.5", want: 1234.5},
		{in: "1.234,5", want: 1234.5},
		{in: "0.125", want: 0.125},
		{in: "1,5", want: 1.5},
		{in: "20%", want: 20},
		{in: "20 %", want: 20},
		{in: "7.5%", want: 7.5},
		{in: "(2)", want: -2},
		{in: "1,234", want: 1234},
		{in: "$5", wantErr: true},
		{in: "five", wantErr: true},
		{in: "", wantErr: true},
		{in: "1.2.3,4.5", wantErr: true},
	} {
		t.Run(test.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseNumber(test.in)
			if test.wantErr {
				if err == nil {
					t.Fatalf("ParseNumber(%q) = %v, want an error", test.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNumber(%q): %v", test.in, err)
			}
			if got != test.want {
				t.Errorf("ParseNumber(%q) = %v, want %v", test.in, got, test.want)
			}
		})
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "2024-02-01", want: "2024-02-01"},
		{in: "2024-2-1", want: "2024-02-01"},
		{in: "2024/02/01", want: "2024-02-01"},
		{in: "2024.02.01", want: "2024-02-01"},
		{in: "2024-02-01T10:30:00Z", want: "2024-02-01"},
		{in: "2024-02-01 10:30", want: "2024-02-01"},
		{in: "20240201", want: "2024-02-01"},
		{in: "02/01/2024", want: "2024-02-01"}, // '/' is month first
		{in: "13/02/2024", want: "2024-02-13"}, // unless the month would be 13
		{in: "01.02.2024", want: "2024-02-01"}, // '.' is day first
		{in: "01-02-2024", want: "2024-02-01"}, // '-' is day first
		{in: "02.13.2024", want: "2024-02-13"}, // unless the month would be 13
		{in: "2/1/24", want: "2024-02-01"},     // two-digit year
		{in: "12/31/99", want: "1999-12-31"},   // 70-99 is the 1900s
		{in: "1 Feb 2024", want: "2024-02-01"},
		{in: "1 February 2024", want: "2024-02-01"},
		{in: "February 1, 2024", want: "2024-02-01"},
		{in: "Feb 1 2024", want: "2024-02-01"},
		{in: "1st February 2024", want: "2024-02-01"},
		{in: "February 22nd, 2024", want: "2024-02-22"},
		{in: "Thu, 1 Feb 2024", want: "2024-02-01"},
		{in: "Thursday 1 February 2024", want: "2024-02-01"},
		{in: "01-FEB-24", want: "2024-02-01"},
		{in: "1 Sept. 2024", want: "2024-09-01"},
		{in: "29 Feb 2024", want: "2024-02-29"},
		{in: "29 Feb 2023", wantErr: true},
		{in: "2024-02-30", wantErr: true},
		{in: "13/13/2024", wantErr: true},
		{in: "02/01-2024", wantErr: true},
		{in: "Feb 2024", wantErr: true},
		{in: "tomorrow", wantErr: true},
		{in: "", wantErr: true},
		{in: "1 Foo 2024", wantErr: true},
		{in: "123 Feb 2024", wantErr: true},
		{in: "1 Feb 202", wantErr: true},
	} {
		t.Run(test.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDate(test.in)
			if test.wantErr {
				if err == nil {
					t.Fatalf("ParseDate(%q) = %q, want an error", test.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDate(%q): %v", test.in, err)
			}
			if got != test.want {
				t.Errorf("ParseDate(%q) = %q, want %q", test.in, got, test.want)
			}
		})
	}
}

func TestParseEmail(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "ap@acme.example", want: "ap@acme.example"},
		{in: " ap@acme.example ", want: "ap@acme.example"},
		{in: "mailto:ap@acme.example", want: "ap@acme.example"},
		{in: "Accounts Payable <ap@acme.example>", want: "ap@acme.example"},
		{in: "first.last+tag@sub.acme.co.uk", want: "first.last+tag@sub.acme.co.uk"},
		{in: "ap@acme", wantErr: true},
		{in: "ap.acme.example", wantErr: true},
		{in: "@acme.example", wantErr: true},
		{in: "a@b@acme.example", wantErr: true},
		{in: "ap @acme.example", wantErr: true},
		{in: "ap@acme..example", wantErr: true},
		{in: "ap@acme.c", wantErr: true},
		{in: "ap@acme.123", wantErr: true},
		{in: "", wantErr: true},
	} {
		t.Run(test.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEmail(test.in)
			if test.wantErr {
				if err == nil {
					t.Fatalf("ParseEmail(%q) = %q, want an error", test.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEmail(%q): %v", test.in, err)
			}
			if got != test.want {
				t.Errorf("ParseEmail(%q) = %q, want %q", test.in, got, test.want)
			}
		})
	}
}

func TestMatchOption(t *testing.T) {
	t.Parallel()
	opts := []string{"EUR", "USD", "GBP", "Net 30"}
	for _, test := range []struct {
		in     string
		want   string
		wantOK bool
	}{
		{in: "EUR", want: "EUR", wantOK: true},
		{in: "eur", want: "EUR", wantOK: true},
		{in: "  usd ", want: "USD", wantOK: true},
		{in: "net   30", want: "Net 30", wantOK: true},
		{in: "EUR (Euro)", want: "EUR", wantOK: true},
		{in: "Payment terms: NET 30 days", want: "Net 30", wantOK: true},
		{in: "EUR or USD", wantOK: false},
		{in: "EURO", wantOK: false},
		{in: "CHF", wantOK: false},
		{in: "", wantOK: false},
	} {
		t.Run(test.in, func(t *testing.T) {
			t.Parallel()
			got, ok := MatchOption(opts, test.in)
			if ok != test.wantOK || got != test.want {
				t.Errorf("MatchOption(%q) = %q, %v, want %q, %v", test.in, got, ok, test.want, test.wantOK)
			}
		})
	}
}

func TestParseValue(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		typ     string
		in      string
		want    any
		wantErr bool
	}{
		{typ: TypeText, in: "  ACME Ltd ", want: "ACME Ltd"},
		{typ: "", in: "x", want: "x"},
		{typ: TypeText, in: "  ", wantErr: true},
		{typ: TypeNumber, in: "2", want: float64(2)},
		{typ: TypeMoney, in: "2", want: int64(200)},
		{typ: TypeDate, in: "1 Feb 2024", want: "2024-02-01"},
		{typ: TypeEmail, in: "a@b.example", want: "a@b.example"},
		{typ: TypeEnum, in: "usd", want: "USD"},
		{typ: TypeEnum, in: "yen", wantErr: true},
		{typ: "color", in: "red", wantErr: true},
	} {
		t.Run(test.typ+"/"+test.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseValue(test.typ, []string{"EUR", "USD"}, test.in)
			if test.wantErr {
				if err == nil {
					t.Fatalf("ParseValue(%q, %q) = %v, want an error", test.typ, test.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("ParseValue(%q, %q) mismatch (-want +got):\n%s", test.typ, test.in, diff)
			}
		})
	}
}
