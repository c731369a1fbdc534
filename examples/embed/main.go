// Command embed runs bas inside a Go program, without HTTP: it opens a
// workspace, registers an in-process provider of a capability the provider
// describes itself (fx.convert), creates a process triggered by an event,
// emits the event, follows the workspace's events to decide the approvals
// the run asks for (a new workspace is supervised: every execute step waits
// for a person), waits for the run to end and prints what each step
// produced.
//
//	go run ./examples/embed             # in memory
//	go run ./examples/embed -data dir   # on disk: runs survive a restart
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/process"
	"github.com/cockroachdb/errors"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// rates is an in-process provider: it converts US dollars to euros at a
// fixed rate. It describes fx.convert (a capability the standard catalog
// does not have) with JSON Schemas, so the registry checks every call's
// arguments and result against them.
type rates struct {
	// eurPerUSD is the rate in basis points (9200 = 0.92).
	eurPerUSD int64
}

// Info names the provider and what it fills.
func (rates) Info() capability.Info {
	return capability.Info{ID: "acme.rates", Name: "Acme rates", Kind: capability.KindBuiltin,
		Capabilities: []string{"fx.convert"}}
}

// Capabilities describes fx.convert.
func (rates) Capabilities() []capability.Capability {
	return []capability.Capability{{
		ID: "fx.convert", Name: "Convert USD to EUR", Description: "Converts an amount in US cents to euro cents.",
		Args: json.RawMessage(`{"type": "object", "required": ["usd_cents"], "additionalProperties": false,
		  "properties": {"usd_cents": {"type": "integer", "minimum": 0}}}`),
		Result: json.RawMessage(`{"type": "object", "required": ["eur_cents", "rate"],
		  "properties": {"eur_cents": {"type": "integer"}, "rate": {"type": "number"}}}`),
	}}
}

// Call converts; the registry validated the arguments already.
func (r rates) Call(_ context.Context, c capability.Call) (json.RawMessage, error) {
	var args struct {
		USDCents int64 `json:"usd_cents"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return nil, errors.Wrap(err, "fx.convert arguments")
	}
	return json.Marshal(map[string]any{"eur_cents": args.USDCents * r.eurPerUSD / 10000,
		"rate": float64(r.eurPerUSD) / 10000})
}

// usInvoices checks a US supplier's invoice, converts its amount and routes
// it by the amount in euros.
const usInvoices = `{
  "name": "US supplier invoice",
  "function": "finance",
  "trigger": {"type": "event", "event": "invoice.received", "filter": {"currency": "USD"}},
  "steps": [
    {"key": "check", "type": "validate", "config": {"record": "${trigger.data}", "rules": [
      {"field": "supplier", "check": "required"},
      {"field": "usd_cents", "check": "min", "value": 1}]}},
    {"key": "convert", "type": "execute", "capability": "fx.convert",
     "config": {"args": {"usd_cents": "${trigger.data.usd_cents}"}}},
    {"key": "route", "type": "route", "config": {
      "rules": [{"id": "large", "when": {"steps.convert.eur_cents": {"gte": 100000}}, "queue": "treasury"}],
      "default": {"queue": "payables"}}}
  ]
}`

const tenant = "acme"

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	data := fs.String("data", "", "Badger directory (in memory when empty)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ws, err := bas.Open(ctx, bas.Options{Dir: *data, InMemory: *data == "",
		Providers: []bas.Provider{rates{eurPerUSD: 9200}}})
	if err != nil {
		return err
	}
	defer ws.Close()

	in, err := process.DecodeIn([]byte(usInvoices))
	if err != nil {
		return err
	}
	def, err := ws.Processes().Create(ctx, tenant, "usr_ann", in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "process %q, version %d\n", def.Name, def.Version)

	// Follow the workspace's events from here on: the run asks for
	// approvals, and its end is announced once it is durable.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	events := ws.Subscribe(ctx, bas.SubscribeParams{Tenant: tenant,
		Names: []string{"approval.requested", "process.run.*"}})

	// An event starts the run (a filter keeps invoices in other currencies out).
	pub, err := ws.Publish(ctx, bas.PublishParams{Tenant: tenant, Name: "invoice.received", Emitter: "usr_ann",
		Data: map[string]any{"number": "INV-1042", "supplier": "Globex", "currency": "USD", "usd_cents": 150000}})
	if err != nil {
		return err
	}
	if len(pub.Runs) != 1 {
		return errors.Newf("the event started %d runs, want 1", len(pub.Runs))
	}
	runID := pub.Runs[0].ID
follow:
	for n, err := range events {
		if err != nil {
			return err // bas.ErrMissed cannot happen to one run's few events
		}
		if n.Event.Data["run_id"] != runID {
			continue
		}
		switch n.Event.Name {
		case "process.run.completed", "process.run.failed", "process.run.rejected":
			break follow
		case "approval.requested":
		default:
			continue
		}
		// A person decides: here, the program approves as usr_bob.
		a, err := ws.GetApproval(ctx, tenant, n.Event.Data["approval_id"].(string))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "approval asked: %s\n", a.Summary)
		if _, err := ws.Decide(ctx, bas.DecideParams{Tenant: tenant, ApprovalID: a.ID, Approve: true,
			Actor: "usr_bob"}); err != nil {
			return err
		}
	}
	// The run has ended; WaitRun returns it at once.
	r, err := ws.WaitRun(ctx, tenant, runID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s\n", r.Status)
	for _, s := range r.Steps {
		out, err := json.Marshal(s.Output)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  %-8s %-9s %s\n", s.Key, s.Status, out)
	}
	if r.Status != bas.RunCompleted {
		return errors.Newf("run ended %s: %s", r.Status, deref(r.Error))
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
