package store_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// Invoice is the record type of the example.
type Invoice struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Number   int    `json:"number"`
	Status   string `json:"status"`
}

func ExampleCollection() {
	s, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()

	invoices := &store.Collection[Invoice]{
		Name: "invoice",
		ID:   func(v *Invoice) string { return v.ID },
		Indexes: []store.Index[Invoice]{
			// List a customer's invoices by number.
			{Name: "customer", Values: func(v *Invoice) [][]any { return [][]any{{v.Customer, v.Number}} }},
			// Only open invoices are in this index.
			{Name: "open", Values: func(v *Invoice) [][]any {
				if v.Status != "open" {
					return nil
				}
				return [][]any{{v.Number}}
			}},
		},
	}

	// Records and their index entries are written in one transaction.
	err = s.Update(ctx, func(tx store.Txn) error {
		for i, customer := range []string{"acme", "globex", "acme", "acme", "acme"} {
			v := &Invoice{ID: fmt.Sprintf("inv_%d", i+1), Customer: customer, Number: 1001 + i, Status: "open"}
			if err := invoices.Put(tx, "tenant_1", v); err != nil {
				return err
			}
		}
		// Paying an invoice updates it; its "open" entry goes away.
		return invoices.Put(tx, "tenant_1", &Invoice{ID: "inv_3", Customer: "acme", Number: 1003, Status: "paid"})
	})
	if err != nil {
		panic(err)
	}

	err = s.View(ctx, func(r store.Reader) error {
		// Page through acme's invoices, newest first, two at a time.
		cursor := ""
		for {
			page, next, err := invoices.ListBy(r, "tenant_1", "customer", []any{"acme"}, store.Page{Limit: 2, Cursor: cursor})
			if err != nil {
				return err
			}
			for _, v := range page {
				fmt.Printf("%s #%d %s\n", v.ID, v.Number, v.Status)
			}
			if next == "" {
				break
			}
			fmt.Println("-- next page")
			cursor = next
		}
		n, err := invoices.CountBy(r, "tenant_1", "open")
		fmt.Println("open invoices:", n)
		return err
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// inv_5 #1005 open
	// inv_4 #1004 open
	// -- next page
	// inv_3 #1003 paid
	// inv_1 #1001 open
	// open invoices: 4
}
