package mail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
)

// The outbox keeps what email.send sends; a repeated idempotency key sends
// nothing more.
func ExampleProvider() {
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()
	outbox := mail.NewProvider(st, clock.Real{})
	call := capability.Call{
		Tenant:         "ten_demo",
		Capability:     capability.EmailSend,
		Args:           json.RawMessage(`{"to": "ann@example.com", "subject": "Invoice 42", "body": "Attached."}`),
		IdempotencyKey: "run_1/notify/1",
	}
	for range 2 {
		if _, err := outbox.Call(ctx, call); err != nil {
			panic(err)
		}
	}
	msgs, _, err := mail.List(ctx, st, "ten_demo", store.Page{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(msgs), msgs[0].To, msgs[0].Subject)
	// Output: 1 [ann@example.com] Invoice 42
}
