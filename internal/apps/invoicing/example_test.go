package invoicing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/apps/invoicing"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// An invoice from draft to paid: amounts are integer cents, tax per line
// is rounded half up, and finalize gives the workspace's next number.
func Example() {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()
	app := invoicing.New(invoicing.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))})
	c, err := app.CreateCustomer(ctx, "ten_demo", invoicing.CustomerIn{Name: "Globex"})
	if err != nil {
		panic(err)
	}
	rate := 8.875
	inv, err := app.CreateInvoice(ctx, "ten_demo", invoicing.InvoiceIn{CustomerID: c.ID, Lines: []invoicing.LineIn{
		{Description: "Support plan", Quantity: 3, UnitAmountCents: 3333, TaxRatePercent: &rate},
	}})
	if err != nil {
		panic(err)
	}
	inv, err = app.Finalize(ctx, "ten_demo", inv.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(*inv.Number, inv.Status, *inv.DueDate, inv.SubtotalCents, inv.TaxCents, inv.TotalCents)
	inv, err = app.Pay(ctx, "ten_demo", inv.ID, invoicing.PayIn{AmountCents: inv.AmountDueCents, Method: "bank_transfer"}, "")
	if err != nil {
		panic(err)
	}
	fmt.Println(inv.Status, inv.Collection, inv.AmountDueCents)
	// Output:
	// INV-000001 open 2026-01-19 9999 887 10886
	// paid collected 0
}
