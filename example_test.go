package bas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/process"
	"github.com/bas-platform/bas/runengine"
)

// rates is an in-process provider of a capability it describes itself.
type rates struct{}

func (rates) Info() capability.Info {
	return capability.Info{ID: "acme.rates", Name: "Acme rates", Kind: capability.KindBuiltin,
		Capabilities: []string{"fx.convert"}}
}

func (rates) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "fx.convert", Name: "Convert", Description: "Converts USD cents to EUR cents.",
		Args:   json.RawMessage(`{"type": "object", "required": ["usd_cents"], "properties": {"usd_cents": {"type": "integer"}}}`),
		Result: json.RawMessage(`{"type": "object"}`)}}
}

func (rates) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	var args struct {
		USDCents int64 `json:"usd_cents"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]int64{"eur_cents": args.USDCents * 92 / 100})
}

// Embed the engine: open a workspace with an in-process provider, create a
// process, start a run, approve its step and read its output.
func Example() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	in, err := process.DecodeIn([]byte(`{"name": "Convert", "trigger": {"type": "manual"},
	  "steps": [{"key": "fx", "type": "execute", "capability": "fx.convert",
	    "config": {"args": {"usd_cents": 10000}}, "controls": {"require_approval": true}}]}`))
	if err != nil {
		panic(err)
	}
	def, err := ws.Processes().Create(ctx, "acme", "usr_ann", in)
	if err != nil {
		panic(err)
	}
	raw, err := ws.Engine().Start(ctx, runengine.StartInput{Tenant: "acme", ProcessID: def.ID,
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_ann"})
	if err != nil {
		panic(err)
	}
	run := new(runengine.Run)
	_ = json.Unmarshal(raw, run)
	fmt.Println(run.Status, run.Steps[0].Status)

	// A person approves; the step calls the provider and the run completes.
	if _, err := ws.Engine().Decide(ctx, "acme", *run.Steps[0].ApprovalID, true, nil, "", "usr_bob"); err != nil {
		panic(err)
	}
	for !run.Finished() {
		time.Sleep(time.Millisecond)
		if run, err = ws.Engine().GetRun(ctx, "acme", run.ID); err != nil {
			panic(err)
		}
	}
	out, _ := json.Marshal(run.Steps[0].Output)
	fmt.Println(run.Status, string(out))
	// Output:
	// waiting waiting_approval
	// completed {"eur_cents":9200}
}
