package extract

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/procstat"
	"github.com/cockroachdb/errors"
)

// pdfObjects writes a PDF of the given objects (numbered from 1; object 1
// is the catalog) with a correct cross-reference table.
func pdfObjects(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// flate compresses n bytes made of unit repeated.
func flate(t testing.TB, unit string, n int64) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	chunk := []byte(strings.Repeat(unit, 64<<10/len(unit)))
	for w := int64(0); w < n; {
		c := chunk[:min(int64(len(chunk)), n-w)]
		if _, err := zw.Write(c); err != nil {
			t.Fatal(err)
		}
		w += int64(len(c))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func stream(dict string, data []byte) string {
	return "<< " + dict + " /Length " + strconv.Itoa(len(data)) + " >>\nstream\n" + string(data) + "\nendstream"
}

// textPDF is a PDF of pages pages sharing one Flate content stream that
// inflates to size bytes of "(A) Tj" operators: a few hundred kilobytes
// when size is 100 MiB.
func textPDF(t testing.TB, size int64, pages int) []byte {
	t.Helper()
	content := flate(t, "BT /F1 12 Tf 72 700 Td (A) Tj ET\n", size)
	kids := make([]string, pages)
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", stream("/Filter /FlateDecode", content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
	for i := range pages {
		kids[i] = strconv.Itoa(len(objs)+1) + " 0 R"
		objs = append(objs, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>")
	}
	objs[1] = "<< /Type /Pages /Kids [" + strings.Join(kids, " ") + "] /Count " + strconv.Itoa(pages) + " >>"
	return pdfObjects(objs...)
}

// a85 is data ASCII85-encoded with its end mark.
func a85(data []byte) []byte {
	enc := make([]byte, ascii85.MaxEncodedLen(len(data)))
	return append(enc[:ascii85.Encode(enc, data)], "~>"...)
}

// a85PDF is textPDF with its content stream ASCII85-encoded over Flate,
// its filters named through another object, so that only the text
// reader's own decoding finds the Flate data.
func a85PDF(t testing.TB, size int64) []byte {
	t.Helper()
	enc := a85(flate(t, "BT /F1 12 Tf 72 700 Td (A) Tj ET\n", size))
	return pdfObjects("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
		stream("/Filter 6 0 R", enc), "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>",
		"[/ASCII85Decode /FlateDecode]")
}

func TestFromPDFBudget(t *testing.T) {
	t.Parallel()
	small := Budget{MaxStreamBytes: 1 << 20, MaxBytes: 4 << 20, MaxPages: 3}
	tests := []struct {
		name    string
		pdf     []byte
		budget  Budget
		wantErr string // "" for no error
	}{
		{"a stream just inside", textPDF(t, 1<<20, 1), small, ""},
		{"a stream just outside", textPDF(t, 1<<20+1, 1), small, "object 3's stream inflates to more than 1048576 bytes (the limit of one stream)"},
		{"a bomb with the defaults", textPDF(t, 16<<20, 1), Budget{}, "object 3's stream inflates to more than 8388608 bytes (the limit of one stream)"},
		{"pages just inside", textPDF(t, 100, 3), small, ""},
		{"pages just outside", textPDF(t, 100, 4), small, "the PDF has 4 pages; at most 3 are read"},
		{"one stream read by many pages, inside", textPDF(t, 1<<20, 1), Budget{MaxStreamBytes: 1 << 20, MaxBytes: 2<<20 + 2, MaxPages: 10}, ""},
		{"one stream read by many pages, outside", textPDF(t, 1<<20, 2), Budget{MaxStreamBytes: 1 << 20, MaxBytes: 2<<20 + 2, MaxPages: 10},
			"the document's streams inflate to more than 2097154 bytes (the limit of one document)"},
		{"a bomb behind ASCII85, read by the page", a85PDF(t, 16<<20), Budget{},
			"page 1's content inflates to more than 8388608 bytes (the limit of one stream)"},
		{"a small stream behind ASCII85", a85PDF(t, 1000), Budget{}, ""},
		{"an ASCII85 object stream bomb", pdfObjects("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>",
			stream("/Type /ObjStm /N 1 /First 4 /Filter [/ASCII85Decode /FlateDecode]", a85(flate(t, "0 ", 16<<20)))), Budget{},
			"object 3's stream inflates to more than 8388608 bytes (the limit of one stream)"},
		{"an object stream bomb", pdfObjects("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>",
			stream("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", flate(t, "0 ", 16<<20))), Budget{},
			"object 3's stream inflates to more than 8388608 bytes (the limit of one stream)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pages, err := FromPDF(context.Background(), tt.pdf, tt.budget)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("FromPDF: %v", err)
				}
				if len(pages) == 0 || !strings.HasPrefix(pages[0].Text, "A") {
					t.Fatalf("pages %.80v", pages)
				}
				return
			}
			if !errors.Is(err, ErrOverBudget) || err.Error() != tt.wantErr {
				t.Fatalf("FromPDF: %v, want over budget: %s", err, tt.wantErr)
			}
		})
	}
}

// TestFromPDFContext: reading stops once the caller's context is done (its
// error is returned), or once the budget's time is spent (over budget).
func TestFromPDFContext(t *testing.T) {
	t.Parallel()
	doc := textPDF(t, 1<<20, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FromPDF(ctx, doc, Budget{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	_, err := FromFile(context.Background(), ContentTypePDF, doc, Budget{Timeout: time.Nanosecond})
	if !errors.Is(err, ErrOverBudget) || err.Error() != "reading the document takes longer than 1ns" {
		t.Errorf("past the time budget: %v", err)
	}
}

// BenchmarkFromPDFBomb reads a PDF of about 300 KB whose content stream
// inflates to 100 MiB, with the default budget: the figures are the bytes
// allocated per read and the peak resident memory of the process.
func BenchmarkFromPDFBomb(b *testing.B) {
	doc := textPDF(b, 100<<20, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromPDF(context.Background(), doc, Budget{}); !errors.Is(err, ErrOverBudget) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(doc)), "file-bytes")
	runtime.GC()
	if mem, err := procstat.Self(); err == nil && mem.Peak > 0 {
		b.ReportMetric(procstat.MiB(mem.Peak), "peak-RSS-MiB")
	}
}

// TestTextBudget: the text of any document is bounded, just inside and
// just outside.
func TestTextBudget(t *testing.T) {
	t.Parallel()
	b := Budget{MaxTextBytes: 100}
	for _, ct := range []string{"text/plain; charset=utf-8", "text/csv; charset=utf-8"} {
		if _, err := FromFile(context.Background(), ct, bytes.Repeat([]byte("a,b\n"), 25), b); err != nil {
			t.Errorf("%s inside: %v", ct, err)
		}
		_, err := FromFile(context.Background(), ct, bytes.Repeat([]byte("a,b\n"), 26), b)
		if !errors.Is(err, ErrOverBudget) || err.Error() != "the document's text is more than 100 bytes (the limit of one document)" {
			t.Errorf("%s outside: %v", ct, err)
		}
	}
	doc := textPDF(t, 33*100, 1) // 100 glyphs, one line
	pages, err := FromPDF(context.Background(), doc, Budget{MaxTextBytes: 100})
	if err != nil || len(pages[0].Text) != 100 {
		t.Errorf("pdf inside: %v", err)
	}
	if _, err := FromPDF(context.Background(), doc, Budget{MaxTextBytes: 99}); !errors.Is(err, ErrOverBudget) {
		t.Errorf("pdf outside: %v", err)
	}
}
