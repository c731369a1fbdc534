package ai_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/ai"
	"github.com/bas-platform/bas/internal/ai/aitest"
	"github.com/bas-platform/bas/store/badgerstore"
)

// A workspace connects its model, then ai.classify answers through it.
func Example() {
	model := aitest.New("sk-example-key-123456")
	defer model.Close()
	model.Push(aitest.Cue{Content: `{"label":"invoice","confidence":0.9,"reason":"It is an invoice."}`})

	st, _ := badgerstore.Open(badgerstore.Options{InMemory: true, GCInterval: -1})
	defer st.Close()
	svc, _ := ai.New(ai.Config{Store: st, Key: make([]byte, 32)})
	key := "sk-example-key-123456"
	conn, _, err := svc.SetConnection(context.Background(), "acme", "admin",
		ai.ConnectionIn{BaseURL: model.BaseURL(), Model: "gpt-4o-mini", APIKey: &key})
	if err != nil {
		panic(err)
	}
	fmt.Println(conn.Model, conn.APIKeySet, *conn.APIKeyLast4)

	args, _ := json.Marshal(capability.AIClassifyArgs{Text: "Please pay invoice INV-7.",
		Labels: []capability.AILabel{{Label: "invoice"}, {Label: "other"}}})
	out, err := svc.Provider().Call(context.Background(), capability.Call{Tenant: "acme", Capability: capability.AIClassify, Args: args})
	if err != nil {
		panic(err)
	}
	var r capability.AIClassifyResult
	_ = json.Unmarshal(out, &r)
	fmt.Println(r.Label, r.Confidence, r.AI.Usage.TotalTokens)
	// Output:
	// gpt-4o-mini true 3456
	// invoice 0.9 15
}
