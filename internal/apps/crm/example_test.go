package crm_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/bas-platform/bas/internal/apps/crm"
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
	svc := crm.New(crm.Config{Store: st, Clock: clock.NewFake(time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC))})

	acme, err := svc.CreateCompany(ctx, "tnt_demo", crm.CompanyIn{Name: "ACME Corp"})
	if err != nil {
		log.Fatal(err)
	}
	amount := int64(1_200_000)
	deal, err := svc.CreateDeal(ctx, "tnt_demo", crm.DealIn{Title: "Anvils", AmountCents: &amount, CompanyID: &acme.ID})
	if err != nil {
		log.Fatal(err)
	}
	p, err := svc.DefaultPipeline(ctx, "tnt_demo")
	if err != nil {
		log.Fatal(err)
	}
	// Move the deal to Proposal (50%).
	deal, err = svc.UpdateDeal(ctx, "tnt_demo", deal.ID, crm.DealPatch{StageID: &p.Stages[2].ID})
	if err != nil {
		log.Fatal(err)
	}
	board, err := svc.Board(ctx, "tnt_demo", p.ID, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, col := range board {
		fmt.Printf("%-12s %d deal(s) %8d %8d\n", col.Stage.Name, col.Count, col.TotalCents, col.WeightedCents)
	}
	fmt.Println(deal.Status, deal.ClosedAt == nil)
	// Output:
	// Lead         0 deal(s)        0        0
	// Qualified    0 deal(s)        0        0
	// Proposal     1 deal(s)  1200000   600000
	// Negotiation  0 deal(s)        0        0
	// Won          0 deal(s)        0        0
	// Lost         0 deal(s)        0        0
	// open true
}
