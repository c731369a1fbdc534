package wiring_test

import (
	"context"
	"fmt"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/wiring"
)

// This module's packages reach a workspace's internal services through
// Workspace.Internal.
func ExampleOf() {
	ws, err := bas.Open(context.Background(), bas.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	svc := wiring.Of(ws.Internal())
	fmt.Println(svc.Docs().MaxUploadBytes())
	// Output:
	// 26214400
}
