package access_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"encoding/json"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
)

// A development login opens the demo workspace; its admin makes an API key
// limited to the docs app, which authenticates with exactly that grant.
func Example() {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()
	svc := access.New(access.Config{Store: st, Logger: quiet})

	sess, err := svc.DevLogin(ctx, access.DevLoginIn{})
	if err != nil {
		panic(err)
	}
	admin, err := svc.Authenticate(ctx, sess.Token)
	if err != nil {
		panic(err)
	}
	key, err := svc.CreateKey(ctx, admin, access.APIKeyIn{Name: "scanner", Roles: []string{"member"}, Apps: []string{"docs"}})
	if err != nil {
		panic(err)
	}
	p, err := svc.Authenticate(ctx, key.Secret)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Tenant, p.Roles, p.Apps, p.Can(access.PermDocsWrite), p.AllowsApp("crm"))
	// Output: ten_demo [member] [docs] true false
}

// Another app queues widening changes for a second person and applies them
// in the transaction that approves them.
func ExampleService_RegisterChangeKind() {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()
	svc := access.New(access.Config{Store: st, Logger: quiet})
	svc.RegisterChangeKind("automation.raise", func(ctx context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
		fmt.Printf("applying %s, approved by %s\n", payload, approver)
		return nil
	})

	alice, _ := svc.DevLogin(ctx, access.DevLoginIn{})
	bob, _ := svc.DevLogin(ctx, access.DevLoginIn{Email: "bob@example.com", UserID: "usr_bob"})
	ch, err := svc.ProposeChange(ctx, alice.TenantID, "automation.raise", alice.UserID, "raise to 80%", map[string]int{"percent": 80})
	if err != nil {
		panic(err)
	}
	pa, _ := svc.Authenticate(ctx, alice.Token)
	if _, err := svc.Approve(ctx, pa, ch.ID, ""); err != nil {
		fmt.Println(err)
	}
	pb, _ := svc.Authenticate(ctx, bob.Token)
	ch, err = svc.Approve(ctx, pb, ch.ID, "ok")
	if err != nil {
		panic(err)
	}
	fmt.Println(ch.Status)
	// Output:
	// the requester cannot approve or reject its own change
	// applying {"percent":80}, approved by usr_bob
	// approved
}
