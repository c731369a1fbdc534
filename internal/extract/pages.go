package extract

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cockroachdb/errors"
	"github.com/ledongthuc/pdf"
)

// The content types FromFile reads.
const (
	ContentTypeText = "text/plain"
	ContentTypeCSV  = "text/csv"
	ContentTypePDF  = "application/pdf"
)

// ErrUnreadable marks a file FromFile cannot read: an unsupported content
// type, a damaged or encrypted PDF, a CSV that does not parse.
var ErrUnreadable = errors.New("extract: unreadable file")

func unreadablef(format string, args ...any) error {
	return errors.Mark(errors.Newf(format, args...), ErrUnreadable)
}

// DetectContentType decides the content type of a file from its bytes and,
// for text, its name: http.DetectContentType first; a file whose first
// kilobyte holds "%PDF-" is application/pdf; text named *.csv, or whose
// first lines all split into the same number (two or more) of
// comma-, semicolon- or tab-separated cells, is "text/csv"; other text is
// "text/plain". Text types carry "; charset=utf-8" (or utf-16 when the
// file starts with a UTF-16 byte order mark). Anything else is what
// http.DetectContentType says.
func DetectContentType(name string, data []byte) string {
	head := data[:min(len(data), 1024)]
	if bytes.Contains(head, []byte("%PDF-")) {
		return ContentTypePDF
	}
	ct := http.DetectContentType(data)
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != ContentTypeText {
		return ct
	}
	charset := params["charset"]
	if charset == "" {
		charset = "utf-8"
	}
	ext := strings.ToLower(path.Ext(name))
	if ext == ".csv" || (ext != ".txt" && looksLikeCSV(decodeText(data, charset))) {
		return ContentTypeCSV + "; charset=" + charset
	}
	return ContentTypeText + "; charset=" + charset
}

// Supported reports whether FromFile reads files of content type ct.
func Supported(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == ContentTypeText || mt == ContentTypeCSV || mt == ContentTypePDF
}

// FromFile returns the pages of a file of content type ct (text/plain,
// text/csv or application/pdf; a charset parameter of utf-16le/be is
// honoured). Other types, and files that do not parse, are errors marked
// ErrUnreadable. Reading works within budget and ctx: a file that would
// exceed the budget is an error marked ErrOverBudget; once ctx is done,
// reading stops and its error is returned.
func FromFile(ctx context.Context, ct string, data []byte, budget Budget) ([]Page, error) {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, unreadablef("unknown content type %q", ct)
	}
	budget = budget.withDefaults()
	switch mt {
	case ContentTypeText, ContentTypeCSV:
		text := decodeText(data, params["charset"])
		if err := budget.checkText(len(text)); err != nil {
			return nil, err
		}
		if mt == ContentTypeText {
			return FromText(text), nil
		}
		return FromCSV(text)
	case ContentTypePDF:
		return FromPDF(ctx, data, budget)
	}
	return nil, unreadablef("cannot extract text from %s files; upload text, CSV or PDF", mt)
}

// decodeText turns file bytes into UTF-8: UTF-16 with a byte order mark is
// decoded; bytes that are not valid UTF-8 are read as Latin-1.
func decodeText(data []byte, charset string) string {
	cs := strings.ToLower(charset)
	switch {
	case strings.HasPrefix(cs, "utf-16") || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		be := cs == "utf-16be" || bytes.HasPrefix(data, []byte{0xFE, 0xFF})
		if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
			data = data[2:]
		}
		u := make([]uint16, len(data)/2)
		for i := range u {
			if be {
				u[i] = uint16(data[2*i])<<8 | uint16(data[2*i+1])
			} else {
				u[i] = uint16(data[2*i+1])<<8 | uint16(data[2*i])
			}
		}
		return string(utf16.Decode(u))
	case utf8.Valid(data):
		return strings.TrimPrefix(string(data), "\uFEFF")
	}
	rs := make([]rune, len(data))
	for i, b := range data {
		rs[i] = rune(b)
	}
	return string(rs)
}

// FromText splits text into pages at form feeds ('\f'); line endings become
// '\n'. Text without a form feed is one page.
func FromText(text string) []Page {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	parts := strings.Split(text, "\f")
	if len(parts) > 1 && strings.TrimSpace(parts[len(parts)-1]) == "" {
		parts = parts[:len(parts)-1]
	}
	pages := make([]Page, len(parts))
	for i, p := range parts {
		pages[i] = Page{Number: i + 1, Text: p}
	}
	return pages
}

// csvDelimiter guesses the delimiter of CSV text from its first line:
// the most frequent of ',', ';' and tab outside quotes (',' on ties).
func csvDelimiter(text string) rune {
	line, _, _ := strings.Cut(text, "\n")
	counts := map[rune]int{}
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case !quoted && (r == ',' || r == ';' || r == '\t'):
			counts[r]++
		}
	}
	best := ','
	for _, r := range []rune{';', '\t'} {
		if counts[r] > counts[best] {
			best = r
		}
	}
	return best
}

func looksLikeCSV(text string) bool {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = csvDelimiter(text)
	r.FieldsPerRecord = -1
	n, width := 0, 0
	for n < 20 {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false
		}
		if width == 0 {
			width = len(rec)
		}
		if len(rec) < 2 || len(rec) != width {
			return false
		}
		n++
	}
	return n >= 2
}

// FromCSV turns CSV text into one page whose lines are "label\tvalue", so
// label extraction reads it like any other document. The delimiter is
// ',', ';' or tab, whichever the first line uses most. Two layouts:
//
//   - label, value: when the first record has at most two cells, every
//     record is a line of its cells joined by a tab ("Invoice number,
//     INV-1" becomes "Invoice number\tINV-1"; longer records, such as a
//     table of lines after the header fields, are kept as tab-joined rows);
//   - header and rows: when the first record has more than two cells it
//     is the header, and each later record becomes one "header\tcell" line
//     per non-empty header cell, records separated by a blank line, so the
//     first data row is what a label finds.
//
// Offsets of extracted values point into this page text.
func FromCSV(text string) ([]Page, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = csvDelimiter(text)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.TrimLeadingSpace = true
	recs, err := r.ReadAll()
	if err != nil {
		return nil, unreadablef("the CSV does not parse: %v", err)
	}
	for i := range recs {
		recs[i] = trimRecord(recs[i])
	}
	var b strings.Builder
	switch {
	case len(recs) == 0:
	case len(recs[0]) <= 2:
		for _, rec := range recs {
			b.WriteString(strings.Join(rec, "\t"))
			b.WriteByte('\n')
		}
	default:
		header := recs[0]
		for k, rec := range recs[1:] {
			if k > 0 {
				b.WriteByte('\n')
			}
			for j, h := range header {
				if h == "" || j >= len(rec) || rec[j] == "" {
					continue
				}
				b.WriteString(h)
				b.WriteByte('\t')
				b.WriteString(rec[j])
				b.WriteByte('\n')
			}
		}
	}
	return []Page{{Number: 1, Text: b.String()}}, nil
}

// trimRecord trims each cell (tabs and newlines inside a cell become
// spaces) and drops empty cells at the end.
func trimRecord(rec []string) []string {
	for i, c := range rec {
		c = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ").Replace(c)
		rec[i] = strings.TrimSpace(c)
	}
	for len(rec) > 0 && rec[len(rec)-1] == "" {
		rec = rec[:len(rec)-1]
	}
	return rec
}

// FromPDF reads the text layer of a PDF, one Page per PDF page (no OCR: a
// scanned page gives empty text). Text is laid out in lines from the
// glyph positions: runs on one baseline form a line, lines go top to
// bottom, runs far apart on a line (table cells) are joined by a tab.
//
// It works within budget (see Budget) and ctx: the streams the text is read
// from are inflated and counted before the text reader decodes them, the
// pages are counted, and every read of the file fails once ctx or the
// budget's time is done.
func FromPDF(ctx context.Context, data []byte, budget Budget) (pages []Page, err error) {
	budget = budget.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, budget.Timeout, errBudgetTime)
	defer cancel()
	s := &spend{ctx: ctx, b: budget}
	defer func() {
		if r := recover(); r != nil {
			if cerr := ctx.Err(); cerr != nil {
				pages, err = nil, s.timeout(cerr)
				return
			}
			pages, err = nil, unreadablef("the PDF cannot be read: %v", r)
		}
	}()
	if err := s.checkObjectStreams(data); err != nil {
		return nil, err
	}
	rd, err := pdf.NewReader(&ctxReaderAt{ctx: ctx, r: bytes.NewReader(data)}, int64(len(data)))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, s.timeout(cerr)
		}
		return nil, unreadablef("the PDF cannot be read: %v", err)
	}
	n := rd.NumPage()
	if n == 0 {
		return nil, unreadablef("the PDF has no pages")
	}
	if n > budget.MaxPages {
		return nil, overBudgetf("the PDF has %d pages; at most %d are read", n, budget.MaxPages)
	}
	pages = make([]Page, 0, n)
	textBytes := 0
	for i := 1; i <= n; i++ {
		p := rd.Page(i)
		if p.V.IsNull() {
			pages = append(pages, Page{Number: i})
			continue
		}
		if err := s.checkPage(p, i); err != nil {
			return nil, err
		}
		text := layoutPDFText(p.Content().Text)
		textBytes += len(text)
		if err := budget.checkText(textBytes); err != nil {
			return nil, err
		}
		pages = append(pages, Page{Number: i, Text: text})
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, s.timeout(cerr)
	}
	return pages, nil
}

// pdfRun is text drawn in one go on one baseline.
type pdfRun struct {
	x, y, end, fs float64
	lastX         float64
	widths        bool
	b             strings.Builder
}

func layoutPDFText(items []pdf.Text) string {
	var runs []*pdfRun
	var cur *pdfRun
	for _, t := range items {
		if t.S == "" {
			continue
		}
		fs := t.FontSize
		if fs <= 0 {
			fs = 10
		}
		same := cur != nil && math.Abs(t.Y-cur.y) < 0.1*fs &&
			(t.X == cur.lastX || (cur.widths && t.W > 0 && math.Abs(t.X-cur.end) < 0.3*fs))
		if !same {
			cur = &pdfRun{x: t.X, y: t.Y, fs: fs}
			runs = append(runs, cur)
		}
		cur.b.WriteString(t.S)
		cur.lastX = t.X
		cur.widths = t.W > 0
		cur.end = t.X + t.W
	}
	// Lines: top to bottom (PDF y grows upwards), runs left to right.
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].y > runs[j].y })
	var lines [][]*pdfRun
	for _, r := range runs {
		if n := len(lines); n > 0 {
			last := lines[n-1]
			if math.Abs(last[0].y-r.y) <= 0.4*r.fs {
				lines[n-1] = append(last, r)
				continue
			}
		}
		lines = append(lines, []*pdfRun{r})
	}
	var b strings.Builder
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		sort.SliceStable(line, func(a, c int) bool { return line[a].x < line[c].x })
		for k, r := range line {
			if k > 0 {
				prev := line[k-1]
				gap := r.x - prev.end
				switch {
				case prev.widths && gap < 0.15*r.fs:
				case prev.widths && gap < 1.5*r.fs:
					b.WriteByte(' ')
				default:
					b.WriteByte('\t')
				}
			}
			b.WriteString(strings.TrimRight(r.b.String(), " "))
		}
	}
	return b.String()
}

// String renders a page for logs and tests.
func (p Page) String() string { return fmt.Sprintf("page %d: %q", p.Number, p.Text) }
