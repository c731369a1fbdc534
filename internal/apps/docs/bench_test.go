package docs

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkExtractValidate measures a one-page supplier invoice: reading
// the file (sniffing, text or PDF text layer), extracting the template's
// eleven fields and running its rules. The upload variants add storing
// the file and the document with its events in an in-memory Badger store.
func BenchmarkExtractValidate(b *testing.B) {
	// Distinct invoice numbers, so the upload runs do not pile up
	// duplicates of one invoice.
	var texts, pdfs [][]byte
	for i := 0; i < 200; i++ {
		inv := goodInvoice()
		inv.Number = fmt.Sprintf("INV-2024-%04d", i)
		texts = append(texts, inv.text())
		pdfs = append(pdfs, inv.pdf(b))
	}
	for _, bm := range []struct {
		name, file string
		data       [][]byte
	}{
		{name: "text", file: "invoice.txt", data: texts},
		{name: "pdf", file: "invoice.pdf", data: pdfs},
	} {
		b.Run(bm.name, func(b *testing.B) {
			bd := setup(b)
			typ := bd.invoiceType(b, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := bd.svc.prepare(context.Background(), bd.tenant, bm.file, bm.data[i%len(bm.data)], typ)
				if err != nil {
					b.Fatal(err)
				}
				vals := make(map[string]FieldValue, len(p.values))
				for k, v := range p.values {
					vals[k] = fromExtract(v)
				}
				if v := check(checkInput{typ: typ, values: vals, pages: len(p.pages)}); v.Status != ValidationPassed {
					b.Fatalf("validation %+v", v)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
		b.Run(bm.name+"-upload", func(b *testing.B) {
			bd := setup(b)
			typ := bd.invoiceType(b, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := bd.svc.Upload(bd.ctx, bd.tenant, "u", UploadIn{TypeID: typ.ID, Filename: bm.file, Data: bm.data[i%len(bm.data)]}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
