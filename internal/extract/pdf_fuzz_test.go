package extract

import (
	"context"
	"testing"
	"time"
)

// FuzzFromPDF: no file panics or hangs the PDF reader, and what it reads
// stays within the budget it was given. The seeds are real PDFs (plain and
// compressed), hand-built object trees and broken ones.
func FuzzFromPDF(f *testing.F) {
	f.Add(invoicePDF(f, false))
	f.Add(invoicePDF(f, true))
	f.Add(pdfObjects("<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>", "<< /Length 16 >>\nstream\nBT (Hi) Tj ET\n\nendstream"))
	f.Add([]byte("%PDF-1.4\n%%EOF\n"))
	f.Add([]byte("%PDF-1.7\n1 0 obj\n<< /Type /ObjStm /N 9999999 /First 1 /Length 3 >>\nstream\nabc\nendstream\nendobj\n"))
	f.Add([]byte{})
	budget := Budget{MaxStreamBytes: 1 << 20, MaxBytes: 4 << 20, MaxPages: 20, MaxTextBytes: 1 << 20, Timeout: 2 * time.Second}
	f.Fuzz(func(t *testing.T, data []byte) {
		pages, err := FromPDF(context.Background(), data, budget)
		if err != nil {
			return
		}
		if len(pages) > budget.MaxPages {
			t.Fatalf("%d pages read, the budget allows %d", len(pages), budget.MaxPages)
		}
		n := 0
		for _, p := range pages {
			n += len(p.Text)
		}
		if n > budget.MaxTextBytes {
			t.Fatalf("%d bytes of text read, the budget allows %d", n, budget.MaxTextBytes)
		}
	})
}
