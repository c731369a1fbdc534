package boards_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/apps/boards"
	"github.com/bas-platform/bas/store"
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
	svc := boards.New(boards.Config{Store: st, Clock: clock.NewFake(time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC))})

	desk, err := svc.CreateBoard(ctx, "ten_demo", boards.BoardIn{Name: "Service desk", Template: boards.TemplateService})
	if err != nil {
		log.Fatal(err)
	}
	var shape []string
	for _, s := range desk.Statuses {
		shape = append(shape, fmt.Sprintf("%s (%s)", s.Name, s.Category))
	}
	fmt.Println(strings.Join(shape, ", "))

	ticket, err := svc.CreateItem(ctx, "ten_demo", desk.ID, boards.ItemIn{Title: "VPN is down",
		Values: map[string]any{desk.Columns[0].ID: "High"}})
	if err != nil {
		log.Fatal(err)
	}
	urgent, err := svc.CreateItem(ctx, "ten_demo", desk.ID, boards.ItemIn{Title: "Payroll export fails",
		Placement: boards.Placement{BeforeID: &ticket.ID}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ticket.Key, "response due", ticket.Values[desk.Columns[2].ID])

	// Resolve the first ticket: it gets completed_at.
	resolved := desk.Statuses[3].ID
	ticket, err = svc.UpdateItem(ctx, "ten_demo", desk.ID, ticket.ID, boards.ItemPatch{StatusID: &resolved})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ticket.Key, "completed at", ticket.CompletedAt.Format(time.RFC3339))

	waiting, _, err := svc.ListItems(ctx, "ten_demo", desk.ID, boards.ItemFilter{StatusID: desk.Statuses[0].ID}, store.Page{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(waiting), waiting[0].Key == urgent.Key)
	// Output:
	// Waiting for support (unstarted), In progress (started), Waiting for customer (started), Resolved (completed), Closed (completed)
	// SD-1 response due 2025-06-02T13:00:00Z
	// SD-1 completed at 2025-06-02T09:00:00Z
	// 1 true
}
