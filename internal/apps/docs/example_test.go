package docs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/bas-platform/bas/internal/apps/docs"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

func Example() {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	svc := docs.NewService(docs.Config{Store: st, Clock: clock.NewFake(time.Date(2024, 2, 5, 9, 0, 0, 0, time.UTC))})

	typ, err := svc.CreateFromTemplate(ctx, "tnt_demo", docs.DraftIn{TemplateID: "supplier_invoice"})
	if err != nil {
		log.Fatal(err)
	}
	invoice := "Supplier: ACME Supplies Ltd\nInvoice number: INV-7\nInvoice date: 1 Feb 2024\n" +
		"Due date: 2024-01-15\nSubtotal: 1.000,00\nTax rate: 20%\nTax: 200,00\nTotal: EUR 1.200,00\n"
	d, err := svc.Upload(ctx, "tnt_demo", "usr_ana", docs.UploadIn{TypeID: typ.ID, Filename: "inv-7.txt", Data: []byte(invoice)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Status, d.Extracted["total"].Value, d.Extracted["issue_date"].Value)
	for _, is := range d.Validation.Issues {
		fmt.Printf("%s: %s (text %q at %d-%d)\n", is.RuleID, is.Message, *is.Evidence.Text, *is.Evidence.Start, *is.Evidence.End)
	}

	// The reviewer fixes the due date; the document is clean and approved.
	d, err = svc.CorrectFields(ctx, "tnt_demo", "usr_rev", d.ID, docs.FieldsIn{Fields: map[string]json.RawMessage{"due_date": json.RawMessage(`"2024-03-02"`)}})
	if err != nil {
		log.Fatal(err)
	}
	d, err = svc.Approve(ctx, "tnt_demo", "usr_rev", d.ID, docs.ApproveIn{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Status)
	// Output:
	// needs_review 120000 2024-02-01
	// dates:due_date: Due date 2024-01-15 is before invoice date 2024-02-01 (text "2024-01-15" at 85-95)
	// approved
}
