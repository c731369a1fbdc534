package bas_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/process"
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
// process, start a run, approve its step and wait for the run to end.
func Example() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	def, err := convertProcess(ctx, ws)
	if err != nil {
		panic(err)
	}
	run, err := ws.Start(ctx, bas.StartParams{Tenant: "acme", ProcessID: def.ID,
		Subject: bas.Subject{Type: "invoice", Label: "INV-1"}, Data: map[string]any{"usd_cents": 10000}, Actor: "usr_ann"})
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Status, run.Steps[0].Status)

	// A person approves; the step calls the provider and the run completes.
	if _, err := ws.Decide(ctx, bas.DecideParams{Tenant: "acme", ApprovalID: *run.Steps[0].ApprovalID,
		Approve: true, Actor: "usr_bob"}); err != nil {
		panic(err)
	}
	run, err = ws.WaitRun(ctx, "acme", run.ID)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(run.Steps[0].Output)
	fmt.Println(run.Status, string(out))
	// Output:
	// waiting waiting_approval
	// completed {"eur_cents":9200}
}

// convertProcess creates the process the examples run: one execute step of
// fx.convert that waits for a person's approval.
func convertProcess(ctx context.Context, ws *bas.Workspace) (*process.Definition, error) {
	in, err := process.DecodeIn([]byte(`{"name": "Convert", "trigger": {"type": "manual"},
	  "steps": [{"key": "fx", "type": "execute", "capability": "fx.convert",
	    "config": {"args": {"usd_cents": "${trigger.data.usd_cents}"}}, "controls": {"require_approval": true}}]}`))
	if err != nil {
		return nil, err
	}
	return ws.Processes().Create(ctx, "acme", "usr_ann", in)
}

// WaitRun blocks until a run ends, without polling; the context bounds the
// wait.
func ExampleWorkspace_WaitRun() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	def, err := convertProcess(ctx, ws)
	if err != nil {
		panic(err)
	}
	run, err := ws.Start(ctx, bas.StartParams{Tenant: "acme", ProcessID: def.ID,
		Subject: bas.Subject{Type: "invoice", Label: "INV-2"}, Data: map[string]any{"usd_cents": 500}})
	if err != nil {
		panic(err)
	}

	// The run waits for a person: a short wait ends with the context.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = ws.WaitRun(short, "acme", run.ID)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))

	// Once a person rejects the action, the run ends.
	if _, err := ws.Decide(ctx, bas.DecideParams{Tenant: "acme", ApprovalID: *run.Steps[0].ApprovalID,
		Reason: "not this month", Actor: "usr_bob"}); err != nil {
		panic(err)
	}
	run, err = ws.WaitRun(ctx, "acme", run.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Status, run.Status == bas.RunRejected)
	// Output:
	// true
	// rejected true
}

// Subscribe follows a tenant's events as they commit: here, a person
// approves every approval a run asks for, until the run completes.
func ExampleWorkspace_Subscribe() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	def, err := convertProcess(ctx, ws)
	if err != nil {
		panic(err)
	}

	// Subscribe before starting, so no event is missed.
	events := ws.Subscribe(ctx, bas.SubscribeParams{Tenant: "acme",
		Names: []string{"approval.requested", "process.run.completed"}})
	if _, err := ws.Start(ctx, bas.StartParams{Tenant: "acme", ProcessID: def.ID,
		Subject: bas.Subject{Type: "invoice", Label: "INV-3"}, Data: map[string]any{"usd_cents": 2500}}); err != nil {
		panic(err)
	}
	for n, err := range events {
		if err != nil {
			panic(err) // ErrMissed: read the state again with the lists
		}
		fmt.Println(n.Event.Name)
		if n.Event.Name == "process.run.completed" {
			break
		}
		if _, err := ws.Decide(ctx, bas.DecideParams{Tenant: "acme", ApprovalID: n.Event.Data["approval_id"].(string),
			Approve: true, Actor: "usr_bob"}); err != nil {
			panic(err)
		}
	}
	// Output:
	// approval.requested
	// process.run.completed
}

// A start with an idempotency key is safe to retry: the same key returns
// the run the first start made.
func ExampleWorkspace_Start_idempotent() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	def, err := convertProcess(ctx, ws)
	if err != nil {
		panic(err)
	}
	p := bas.StartParams{Tenant: "acme", ProcessID: def.ID, Subject: bas.Subject{Type: "invoice", Label: "INV-4"},
		IdempotencyKey: "order-4711"}
	first, err := ws.Start(ctx, p)
	if err != nil {
		panic(err)
	}
	again, err := ws.Start(ctx, p) // a retry, say after a timeout
	if err != nil {
		panic(err)
	}
	p.IdempotencyKey = "order-4712"
	other, err := ws.Start(ctx, p)
	if err != nil {
		panic(err)
	}
	fmt.Println(again.ID == first.ID, other.ID == first.ID)
	// Output:
	// true false
}

// Errors carry a kind, every violation of a bad call, and a message meant
// for people.
func ExampleViolations() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	_, err = ws.Start(ctx, bas.StartParams{Tenant: "acme"})
	fmt.Println(errors.Is(err, bas.ErrInvalid))
	for _, v := range bas.Violations(err) {
		fmt.Println(v.Loc, v.Type, v.Msg)
	}
	_, err = ws.Start(ctx, bas.StartParams{Tenant: "acme", ProcessID: "prc_missing"})
	fmt.Println(errors.Is(err, bas.ErrNotFound), bas.PublicMessage(err))
	// Output:
	// true
	// [process_id] missing is required
	// true process not found
}

// Call reaches a capability from Go with typed arguments and result: the
// door a step uses, to any app or provider.
func ExampleCall() {
	ctx := context.Background()
	ws, err := bas.Open(ctx, bas.Options{InMemory: true, Providers: []bas.Provider{rates{}}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	type converted struct {
		EURCents int64 `json:"eur_cents"`
	}
	out, err := bas.Call[converted](ctx, ws, bas.CallParams{Tenant: "acme", Capability: "fx.convert",
		Args: map[string]int64{"usd_cents": 500}})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.EURCents)

	// Arguments are checked against the capability's schema first.
	_, err = bas.Call[converted](ctx, ws, bas.CallParams{Tenant: "acme", Capability: "fx.convert",
		Args: map[string]string{"usd_cents": "five"}})
	fmt.Println(errors.Is(err, bas.ErrInvalid), len(bas.Violations(err)) > 0)
	// Output:
	// 460
	// true true
}
