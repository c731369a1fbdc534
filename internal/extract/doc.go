// Package extract finds field values in the text of a document and parses
// them by type. It is a leaf: it knows nothing of documents, tenants or the
// store, so the docs app, process steps and tests can all use it.
//
// # Pages
//
// Extraction works on the text of pages ([Page]). [FromFile] turns the bytes
// of a file into pages: plain text is one page per form feed (one page when
// there is none); a PDF gives one page per PDF page from its text layer (no
// OCR); a CSV gives one page whose text is its cells as tab-separated lines
// (see [FromCSV] for the two layouts it understands).
//
// # Budget
//
// [FromFile] reads within a [Budget] and a context, so that a small file
// cannot take the process's memory or time: a PDF's Flate streams are
// inflated and counted before the text reader decodes them (8 MiB a stream,
// 64 MiB a document by default), pages are counted (500), the text of any
// document is bounded (4 MiB), and reading stops when the context is done
// or the budget's time (20 seconds) is spent. A file over budget is an
// error marked [ErrOverBudget] whose message names the bound.
//
// # Rules
//
// A [Field] says how its value is found ([Rule]):
//
//   - method "label" takes the text after a label: on the same line after
//     a ':' or a tab (or two or more spaces), or, when nothing follows the
//     label on its line, the next non-blank line (unless that line is
//     itself "label: value"). The label matches whatever the case and
//     spacing ("INVOICE  NUMBER", "invoice number"), punctuation between
//     its words and a final '.' are optional ("P.O. Number" matches "PO
//     Number", "Invoice No." matches "Invoice No"; "Invoice #" needs its
//     '#'), it
//     must stand as whole words, and it must begin a line or follow a tab,
//     two spaces or one of "|;," ("Date" is not found in "Due date"). Aliases are tried after the label. A
//     value on the same line ends where another "label:" begins after a tab
//     or two spaces ("Date: 1 Feb 2024    Due: 1 Mar 2024").
//   - method "regex" takes capture group Group (default 1, or the whole
//     match when the pattern has no group). Patterns are RE2 (Go regexp).
//
// A field without a rule is found by its own label. Every occurrence is a
// candidate, in order (the label before its aliases, pages in order); the
// first candidate whose text parses as the field's type wins. When none
// parses, the first candidate is reported as a [Problem] with its evidence.
//
// # Types
//
//   - text: the trimmed text.
//   - number: a float64 ("1,234.5", "1.234,5", "-3", "20%" is 20).
//   - money: integer cents (int64), see [ParseMoney].
//   - date: "YYYY-MM-DD", see [ParseDate].
//   - email: the address, checked, see [ParseEmail].
//   - enum: the matching option, see [MatchOption].
//
// # Offsets
//
// [Value] and [Problem] carry Start and End: offsets into the page text
// counted in Unicode code points (not bytes), so the text they cite is
// []rune(page.Text)[Start:End]. Pages are numbered from 1.
package extract
