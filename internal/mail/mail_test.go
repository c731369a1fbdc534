package mail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/mail"
	"github.com/bas-platform/bas/internal/schema"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store"
	"github.com/bas-platform/bas/store/badgerstore"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

var start = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*mail.Provider, store.Store, *clock.Fake) {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{InMemory: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(start)
	return mail.NewProvider(st, clk), st, clk
}

func send(t *testing.T, p *mail.Provider, tenant, key, args string) (json.RawMessage, error) {
	t.Helper()
	return p.Call(context.Background(), capability.Call{Tenant: tenant, Capability: capability.EmailSend,
		Args: json.RawMessage(args), IdempotencyKey: key})
}

func list(t *testing.T, st store.Store, tenant string) []*mail.Message {
	t.Helper()
	msgs, _, err := mail.List(context.Background(), st, tenant, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestSendWritesTheOutbox(t *testing.T) {
	t.Parallel()
	p, st, clk := setup(t)
	out, err := send(t, p, "ten_a", "run_1/step_1/1",
		`{"to": " ann@example.com", "cc": ["bob@example.com"], "subject": "Hello", "body": "Hi Ann", "reply_to": "ops@example.com"}`)
	if err != nil {
		t.Fatal(err)
	}
	var res capability.EmailSendResult
	if err := json.Unmarshal(out, &res); err != nil || res.Status != "queued" {
		t.Fatalf("result %s, %v", out, err)
	}
	replyTo := "ops@example.com"
	want := []*mail.Message{{ID: res.MessageID, To: []string{"ann@example.com"}, Cc: []string{"bob@example.com"},
		Subject: "Hello", Body: "Hi Ann", ReplyTo: &replyTo, CreatedAt: start, IdempotencyKey: "run_1/step_1/1"}}
	if diff := cmp.Diff(want, list(t, st, "ten_a")); diff != "" {
		t.Errorf("outbox (-want +got):\n%s", diff)
	}

	// The same key sends nothing new and answers the same; another key does.
	clk.Advance(time.Second)
	again, err := send(t, p, "ten_a", "run_1/step_1/1", `{"to": "ann@example.com", "subject": "Hello", "body": "Hi Ann"}`)
	if err != nil || string(again) != string(out) {
		t.Errorf("repeated call = %s, %v; want %s", again, err, out)
	}
	if _, err := send(t, p, "ten_a", "run_1/step_1/2", `{"to": ["ann@example.com"], "subject": "Hello", "body": ""}`); err != nil {
		t.Fatal(err)
	}
	if got := len(list(t, st, "ten_a")); got != 2 {
		t.Errorf("outbox has %d messages, want 2", got)
	}
	// Each tenant has its own outbox.
	if got := len(list(t, st, "ten_b")); got != 0 {
		t.Errorf("another tenant sees %d messages", got)
	}
}

func TestSendRefusesBadArguments(t *testing.T) {
	t.Parallel()
	p, st, _ := setup(t)
	for _, test := range []struct {
		name, args string
		want       []errs.Violation
	}{
		{"everything wrong at once", `{"to": ["ann@example.com", "nope"], "subject": " ", "cc": "x", "bcc": "y"}`, []errs.Violation{
			{Loc: []any{"args", "bcc"}, Msg: "is not an argument of email.send", Type: "extra_forbidden"},
			{Loc: []any{"args", "body"}, Msg: "is required", Type: "missing"},
			{Loc: []any{"args", "to", 1}, Msg: "must be an email address", Type: "value_error"},
			{Loc: []any{"args", "cc", 0}, Msg: "must be an email address", Type: "value_error"},
			{Loc: []any{"args", "subject"}, Msg: "must not be blank", Type: "string_too_short"},
		}},
		{"empty list and two lines", `{"to": [], "subject": "a\nb", "body": "x", "reply_to": "Ann <a@example.com>"}`, []errs.Violation{
			{Loc: []any{"args", "to"}, Msg: "must have at least 1 address", Type: "too_short"},
			{Loc: []any{"args", "subject"}, Msg: "must be one line", Type: "value_error"},
			{Loc: []any{"args", "reply_to"}, Msg: "must be an email address", Type: "value_error"},
		}},
		{"wrong types", `{"to": 5, "subject": "s", "body": 1}`, []errs.Violation{
			{Loc: []any{"args", "body"}, Msg: "has the wrong type", Type: "type_error"},
			{Loc: []any{"args", "to"}, Msg: "has the wrong type", Type: "type_error"},
			{Loc: []any{"args", "to"}, Msg: "must have at least 1 address", Type: "too_short"},
		}},
		{"not an object", `[]`, []errs.Violation{{Loc: []any{"args"}, Msg: "must be a JSON object", Type: "type_error"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := send(t, p, "ten_a", "", test.args)
			if !errors.Is(err, errs.Invalid) {
				t.Fatalf("error = %v, want invalid", err)
			}
			if diff := cmp.Diff(test.want, errs.Violations(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	if got := len(list(t, st, "ten_a")); got != 0 {
		t.Errorf("refused calls wrote %d messages", got)
	}
	_, err := p.Call(context.Background(), capability.Call{Tenant: "ten_a", Capability: "sms.send", Args: json.RawMessage(`{}`)})
	if !errors.Is(err, errs.Invalid) {
		t.Errorf("another capability: %v", err)
	}
}

func TestListPages(t *testing.T) {
	t.Parallel()
	p, st, clk := setup(t)
	for i := 0; i < 3; i++ {
		clk.Advance(time.Second)
		if _, err := send(t, p, "ten_a", "", `{"to": "a@example.com", "subject": "s", "body": "b"}`); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	first, next, err := mail.List(ctx, st, "ten_a", store.Page{Limit: 2})
	if err != nil || len(first) != 2 || next == "" || !first[0].CreatedAt.After(first[1].CreatedAt) {
		t.Fatalf("first page = %d messages, next %q, %v", len(first), next, err)
	}
	rest, next, err := mail.List(ctx, st, "ten_a", store.Page{Limit: 2, Cursor: next})
	if err != nil || len(rest) != 1 || next != "" {
		t.Fatalf("second page = %d messages, next %q, %v", len(rest), next, err)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	p, _, _ := setup(t)
	want := capability.Info{ID: "builtin.email", Name: "Outbox", Kind: capability.KindBuiltin, Capabilities: []string{"email.send"}}
	if diff := cmp.Diff(want, p.Info()); diff != "" {
		t.Errorf("Info (-want +got):\n%s", diff)
	}
}

// TestConcurrentSendsOncePerKey: calls made at once (written in shared
// batches) each get an answer, and the calls of one idempotency key, in one
// batch or in several, write one message and all answer its id.
func TestConcurrentSendsOncePerKey(t *testing.T) {
	t.Parallel()
	p, st, _ := setup(t)
	const keys, copies = 30, 4
	ids := make([][copies]string, keys)
	var wg sync.WaitGroup
	for k := range keys {
		for c := range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := send(t, p, "ten_a", fmt.Sprintf("run_%d/notify/1", k),
					fmt.Sprintf(`{"to": "ann@example.com", "subject": "Item %d", "body": "Hi"}`, k))
				if err != nil {
					t.Error(err)
					return
				}
				var res capability.EmailSendResult
				if err := json.Unmarshal(out, &res); err != nil {
					t.Error(err)
				}
				ids[k][c] = res.MessageID
			}()
		}
	}
	testwait.Wait(t, &wg, "the concurrent sends returned")
	msgs := list(t, st, "ten_a")
	if len(msgs) != keys {
		t.Fatalf("%d messages, want %d", len(msgs), keys)
	}
	byKey := map[string]string{}
	for _, m := range msgs {
		byKey[m.IdempotencyKey] = m.ID
	}
	for k := range keys {
		want := byKey[fmt.Sprintf("run_%d/notify/1", k)]
		if diff := cmp.Diff([copies]string{want, want, want, want}, ids[k]); want == "" || diff != "" {
			t.Errorf("key %d: answers (-want +got):\n%s", k, diff)
		}
	}
}

// TestSendSameArgumentsAgain: arguments sent before (a step with fixed
// arguments, run after run) write the same message each time, even when
// the caller reuses its buffer, and bad ones are refused each time.
func TestSendSameArgumentsAgain(t *testing.T) {
	t.Parallel()
	p, st, _ := setup(t)
	args := []byte(`{"to": [" ann@example.com"], "subject": "Hi", "body": "One"}`)
	for i, key := range []string{"k1", "k2"} {
		if _, err := p.Call(context.Background(), capability.Call{Tenant: "ten_a", Capability: capability.EmailSend,
			Args: args, IdempotencyKey: key}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	copy(args[len(args)-5:], `Two"}`)
	if _, err := p.Call(context.Background(), capability.Call{Tenant: "ten_a", Capability: capability.EmailSend,
		Args: args, IdempotencyKey: "k3"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range list(t, st, "ten_a") {
		got = append(got, m.IdempotencyKey+" "+strings.Join(m.To, ",")+" "+m.Subject+" "+m.Body)
	}
	want := []string{"k3 ann@example.com Hi Two", "k2 ann@example.com Hi One", "k1 ann@example.com Hi One"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outbox (-want +got):\n%s", diff)
	}
	for i := range 2 {
		if _, err := send(t, p, "ten_a", "", `{"to": ["nope"], "subject": "s", "body": "b"}`); !errors.Is(err, errs.Invalid) {
			t.Errorf("bad arguments, send %d: %v, want invalid", i, err)
		}
	}
}

// TestResultsMatchCatalog: what Call answers, for a new message and for a
// repeated idempotency key, matches the catalog's email.send result
// schema, as the provider tells the registry (ResultsMatchCatalog).
func TestResultsMatchCatalog(t *testing.T) {
	t.Parallel()
	p, _, _ := setup(t)
	c, ok := registry.New(registry.Config{}).Capability(capability.EmailSend)
	if !ok {
		t.Fatal("email.send is not in the catalog")
	}
	v, err := schema.Compile(c.Result)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "k1", "k1"} {
		out, err := send(t, p, "ten_a", key, `{"to": ["ann@example.com"], "subject": "Hi", "body": "b"}`)
		if err != nil {
			t.Fatal(err)
		}
		if vs := v.ValidateJSON(out, "result"); len(vs) > 0 {
			t.Errorf("result %s: %v", out, vs)
		}
	}
}

// A call of a run's step (a context with callwrites) commits nothing: it
// answers at once and hands the message's write to the caller, which
// commits it with the step's result. A call whose write never committed (a
// crash) leaves no message, and its repeat hands a new write. A handed
// write that finds a message under its key (one committed on its own, by
// an outbox that did so, before a crash) is refused, and the call made
// again then answers that message and hands nothing.
func TestStepCallHandsItsWrite(t *testing.T) {
	t.Parallel()
	p, st, _ := setup(t)
	ctx := context.Background()
	args := json.RawMessage(`{"to": "ann@example.com", "subject": "Hello", "body": "Hi Ann"}`)
	call := capability.Call{Tenant: "ten_a", Capability: capability.EmailSend, Args: args, IdempotencyKey: "run_1/notify/1"}
	stepCall := func(call capability.Call) (capability.EmailSendResult, []func(store.Txn) error) {
		t.Helper()
		var w callwrites.Writes
		out, err := p.Call(callwrites.With(ctx, &w), call)
		if err != nil {
			t.Fatal(err)
		}
		var res capability.EmailSendResult
		if err := json.Unmarshal(out, &res); err != nil || res.Status != "queued" {
			t.Fatalf("result %s, %v", out, err)
		}
		return res, w.TakeAll().Ops
	}
	apply := func(ops []func(store.Txn) error) error {
		return st.Update(ctx, func(tx store.Txn) error {
			for _, op := range ops {
				if err := op(tx); err != nil {
					return err
				}
			}
			return nil
		})
	}

	lost, ops := stepCall(call)
	if len(ops) != 1 || len(list(t, st, "ten_a")) != 0 {
		t.Fatalf("a step's call handed %d writes and wrote %d messages; want 1 and none", len(ops), len(list(t, st, "ten_a")))
	}
	// Its commit never happened: the repeat makes a new message.
	res, ops := stepCall(call)
	if res.MessageID == lost.MessageID || len(ops) != 1 {
		t.Fatalf("the repeat answered %s (the lost one %s) with %d writes", res.MessageID, lost.MessageID, len(ops))
	}
	if err := apply(ops); err != nil {
		t.Fatal(err)
	}
	got := list(t, st, "ten_a")
	if len(got) != 1 || got[0].ID != res.MessageID || got[0].IdempotencyKey != call.IdempotencyKey {
		t.Fatalf("outbox %+v; want the one message %s", got, res.MessageID)
	}

	// A message the outbox committed on its own, under a run's key.
	old := call
	old.IdempotencyKey = "run_2/notify/1"
	first, err := send(t, p, old.Tenant, old.IdempotencyKey, string(args))
	if err != nil {
		t.Fatal(err)
	}
	_, ops = stepCall(old)
	if err := apply(ops); !errors.Is(err, errs.Conflict) {
		t.Fatalf("a second message under a key: %v, want a conflict", err)
	}
	again, ops := stepCall(old)
	if out, _ := json.Marshal(again); string(out) != string(first) || len(ops) != 0 {
		t.Errorf("the call made again answered %s with %d writes; want %s and none", out, len(ops), first)
	}
	if n := len(list(t, st, "ten_a")); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// noReads is a transaction that may not read.
type noReads struct{ store.Txn }

func (noReads) Get([]byte) ([]byte, error) { return nil, errors.New("the write read a key") }

// A run's first call (callwrites.Writes.New: no call with its key was made
// before) hands a write that reads nothing, and the message is then found
// under its key.
func TestNewStepCallWritesWithoutReading(t *testing.T) {
	t.Parallel()
	p, st, _ := setup(t)
	ctx := context.Background()
	w := &callwrites.Writes{New: true}
	out, err := p.Call(callwrites.With(ctx, w), capability.Call{Tenant: "ten_a", Capability: capability.EmailSend,
		Args: json.RawMessage(`{"to": "ann@example.com", "subject": "Hello", "body": "Hi Ann"}`), IdempotencyKey: "run_1/notify/1"})
	if err != nil {
		t.Fatal(err)
	}
	ops := w.TakeAll().Ops
	err = st.Update(ctx, func(tx store.Txn) error {
		for _, op := range ops {
			if err := op(noReads{tx}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || len(ops) != 1 {
		t.Fatalf("%d writes: %v", len(ops), err)
	}
	var res capability.EmailSendResult
	_ = json.Unmarshal(out, &res)
	again, err := send(t, p, "ten_a", "run_1/notify/1", `{"to": "ann@example.com", "subject": "Hello", "body": "Hi Ann"}`)
	if err != nil || !strings.Contains(string(again), res.MessageID) {
		t.Errorf("a call with the key answered %s, %v; want message %s", again, err, res.MessageID)
	}
}
