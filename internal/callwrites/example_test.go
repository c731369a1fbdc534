package callwrites_test

import (
	"context"
	"fmt"

	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/store"
)

// A caller that commits the call's result puts a Writes in the call's
// context; the provider adds its write instead of committing it.
func Example() {
	var w callwrites.Writes
	ctx := callwrites.With(context.Background(), &w)

	// The provider:
	if pending := callwrites.From(ctx); pending != nil {
		pending.Add(func(tx store.Txn) error { return tx.Set([]byte("k"), []byte("v")) })
	}

	// The caller, in the transaction of the call's result:
	fmt.Println(len(w.TakeAll().Ops), "write to apply")
	fmt.Println(callwrites.From(context.Background()) == nil)
	// Output:
	// 1 write to apply
	// true
}
