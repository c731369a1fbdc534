package runengine_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/apps/automation"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/google/go-cmp/cmp"
)

// atOnceMail is the outbox saying its calls never block, so that the
// engine makes them in the run's worker (with a gate that decides at
// once): the call's result is then taken before anything else the worker
// does for the run, and the run's commits are the same at every run.
type atOnceMail struct{ *mail.Provider }

func (atOnceMail) ReturnsAtOnce() {}

// atOnceAutomation is the automation app's gate saying it decides at once
// (see atOnceMail). It keeps the gate's other methods.
type atOnceAutomation struct{ *automation.Service }

func (atOnceAutomation) DecidesAtOnce() {}

// mailSteps is a run of a route step, then email.send through the gate:
// the example server's benchmark run.
const mailSteps = `[
  {"key": "route", "type": "route", "config": {"rules": [{"id": "r", "when": {"subject.type": "invoice"}, "queue": "ap"}], "default": {"queue": "other"}}},
  {"key": "send", "type": "execute", "capability": "email.send",
   "config": {"args": {"to": "ann@example.com", "subject": "Hello", "body": "Hi"}}}]`

// openMail opens an engine whose email.send goes to the outbox (made at
// once when atOnce) behind the automation app's gate at 100%, daily limit
// limit; shared makes the gate one that commits its answers itself.
func openMail(t *testing.T, shared bool, limit int, configure func(*runengine.Config)) (*bundle, *automation.Service, store.Store) {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	auto := automation.New(automation.Config{Store: st, Clock: clk, Shared: shared})
	b := openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(cfg *runengine.Config) {
		reg := registry.New(registry.Config{Store: st, Clock: clk})
		if err := reg.Register(atOnceMail{mail.NewProvider(st, clk)}); err != nil {
			t.Fatal(err)
		}
		cfg.Capabilities, cfg.Gate = reg, atOnceAutomation{auto}
		if configure != nil {
			configure(cfg)
		}
	})
	p, err := automation.ParsePatch([]byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0, "daily_limit": ` +
		strconv.Itoa(limit) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.UpdateWorkspace(context.Background(), tenant, "usr_test", p); err != nil {
		t.Fatal(err)
	}
	return b, auto, st
}

// TestJoiningCallsCommitWithTheStart: a new run whose call only joins the
// commit of its result (the outbox's email.send, asked through the
// automation gate that hands its answer to the same commit) makes the call
// before its first commit, so a quick run is started and finished by one
// commit, and the start's answer shows it finished. A gate that commits its
// answers itself (Shared) acts outside the run's commit: the call waits for
// the first commit, as before (two commits, the answer shows the run
// running). So does the call of a Caller that embeds the registry: it does
// not inherit the registry's claim that a call only joins the commit of its
// result, as its own Call may act first.
func TestJoiningCallsCommitWithTheStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		shared  bool
		wrap    bool // the engine's Caller embeds the registry (wrapped)
		commits uint64
		status  runengine.RunStatus
	}{
		{"joining gate", false, false, 1, runengine.RunCompleted},
		{"gate committing itself", true, false, 2, runengine.RunRunning},
		{"a Caller embedding the registry", false, true, 2, runengine.RunRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			var configure func(*runengine.Config)
			if tc.wrap {
				configure = func(cfg *runengine.Config) {
					cfg.Capabilities = wrapped{Registry: cfg.Capabilities.(*registry.Registry), calls: &calls}
				}
			}
			b, auto, st := openMail(t, tc.shared, 10, configure)
			def := b.create(t, `{"type":"manual"}`, mailSteps)
			before := b.eng.Stats().Deltas
			r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
				Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.status {
				t.Errorf("the start's answer shows the run %s, want %s", r.Status, tc.status)
			}
			done := b.waitRun(t, r.ID, "completed", status(runengine.RunCompleted))
			if got := b.eng.Stats().Deltas - before; got != tc.commits {
				t.Errorf("the run's changes went in %d commits, want %d", got, tc.commits)
			}
			msgs, _, err := mail.List(context.Background(), st, tenant, store.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			id, _ := done.Steps[1].Output.(map[string]any)["message_id"].(string)
			if len(msgs) != 1 || msgs[0].ID != id || msgs[0].IdempotencyKey != r.ID+"/send/1" {
				t.Errorf("outbox %+v, want the one message %s the step names", msgs, id)
			}
			v, err := auto.Workspace(context.Background(), tenant)
			if err != nil {
				t.Fatal(err)
			}
			if v.AutomaticToday != 1 {
				t.Errorf("automatic today %d, want 1", v.AutomaticToday)
			}
			if got := calls.Load(); tc.wrap && got != 1 {
				t.Errorf("the wrapper's Call made %d calls, want 1", got)
			}
		})
	}
}

// notJoining is the outbox's email.send from a provider that does not say
// its calls only join the commit of their result (a plugin's, say).
type notJoining struct{ p *mail.Provider }

func (n notJoining) Info() capability.Info { return n.p.Info() }
func (n notJoining) ReturnsAtOnce()        {}
func (n notJoining) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	return n.p.Call(ctx, c)
}

// TestNotJoiningCallWaitsForTheFirstCommit: the same run whose email.send
// goes to a provider that is no callwrites.Joiner makes its call only once
// its first commit is durable: two commits, the start's answer shows the
// run running.
func TestNotJoiningCallWaitsForTheFirstCommit(t *testing.T) {
	t.Parallel()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	auto := automation.New(automation.Config{Store: st, Clock: clk})
	b := openWith(t, st, clk, &testProvider{}, &autoGate{auto: true}, func(cfg *runengine.Config) {
		reg := registry.New(registry.Config{Store: st, Clock: clk})
		if err := reg.Register(notJoining{mail.NewProvider(st, clk)}); err != nil {
			t.Fatal(err)
		}
		cfg.Capabilities, cfg.Gate = reg, atOnceAutomation{auto}
	})
	p, err := automation.ParsePatch([]byte(`{"percent": 100, "max_percent": 100, "sample_percent": 0, "daily_limit": 10}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.UpdateWorkspace(context.Background(), tenant, "usr_test", p); err != nil {
		t.Fatal(err)
	}
	def := b.create(t, `{"type":"manual"}`, mailSteps)
	before := b.eng.Stats().Deltas
	r, err := b.eng.Start(context.Background(), runengine.StartParams{Tenant: tenant, ProcessID: def.ID,
		Subject: runengine.Subject{Type: "invoice", Label: "INV-1"}, Actor: "usr_test"})
	if err != nil {
		t.Fatal(err)
	}
	b.waitRun(t, r.ID, "completed", status(runengine.RunCompleted))
	got := []any{r.Status, b.eng.Stats().Deltas - before}
	if diff := cmp.Diff([]any{runengine.RunRunning, uint64(2)}, got); diff != "" {
		t.Errorf("the start's answer, commits (-want +got):\n%s", diff)
	}
}

// wrapped is an embedder's Caller around the registry: it has the
// registry's Route by embedding, but its Call may act before it
// hands the call on (here it only counts).
type wrapped struct {
	*registry.Registry
	calls *atomic.Int32
}

func (w wrapped) Call(ctx context.Context, c capability.Call) (json.RawMessage, error) {
	w.calls.Add(1)
	return w.Registry.Call(ctx, c)
}
