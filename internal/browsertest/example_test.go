package browsertest_test

import (
	"fmt"

	"github.com/bas-platform/bas/internal/browsertest"
)

// A test of the console asks for the browser with browsertest.Require(t);
// Lookup tells whether one is there.
func ExampleLookup() {
	if _, ok := browsertest.Lookup(); !ok {
		fmt.Println("no Chromium: the browser tests skip")
	}
}

// The invoice a document review starts from.
func ExampleInvoicePDF() {
	pdf, err := browsertest.InvoicePDF()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(pdf[:5]))
	// Output: %PDF-
}
