package registry_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/store/clock"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		send = "chat.message.send"
		get  = "erp.purchase_order.get"
	)
	po := `{"number":"PO-1","supplier":"Acme","currency":"EUR","total_cents":1000,"lines":[{"sku":"A","description":"a","quantity":1,"unit_cents":1000}],"status":"open"}`
	args := map[string]string{send: `{"channel":"#ops","text":"hi"}`, get: `{"number":"PO-1"}`}
	ok := map[string]string{send: `{"message_id":"m1","status":"sent"}`, get: po}
	unavailable := func(context.Context, capability.Call) (json.RawMessage, error) {
		return nil, errs.Unavailablef("the ERP is down")
	}
	timeout := func(ctx context.Context, _ capability.Call) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	malformedOut := func(context.Context, capability.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"number":"PO-1"}`), nil
	}
	notFound := func(context.Context, capability.Call) (json.RawMessage, error) {
		return nil, errs.NotFoundf("purchase order PO-1 not found")
	}
	answer := func(c capability.Call) (json.RawMessage, error) { return json.RawMessage(ok[c.Capability]), nil }

	type step struct {
		advance time.Duration
		cap     string
		fail    func(context.Context, capability.Call) (json.RawMessage, error) // nil: answers well
		calls   int                                                             // times the provider is called
		wantErr string                                                          // "" for success; "circuit" for refused at once
	}
	rep := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	cat := func(ss ...[]step) []step {
		var out []step
		for _, s := range ss {
			out = append(out, s...)
		}
		return out
	}
	tests := []struct {
		name  string
		steps []step
		want  []registry.CircuitOut // the circuits shown at the end
	}{
		{
			name: "opens after N unavailable answers",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				rep(2, step{cap: get, calls: 0, wantErr: "circuit"})),
			want: []registry.CircuitOut{{Capability: get, State: "open", Failures: 3, RetryAt: t0.Add(time.Minute)}},
		},
		{
			name: "opens after N timeouts",
			steps: cat(rep(3, step{cap: get, fail: timeout, calls: 1, wantErr: "did not answer"}),
				rep(1, step{cap: get, calls: 0, wantErr: "circuit"})),
			want: []registry.CircuitOut{{Capability: get, State: "open", Failures: 3, RetryAt: t0.Add(time.Minute)}},
		},
		{
			name: "opens after N malformed outputs",
			steps: cat(rep(3, step{cap: get, fail: malformedOut, calls: 1, wantErr: "malformed output"}),
				rep(1, step{cap: get, calls: 0, wantErr: "circuit"})),
			want: []registry.CircuitOut{{Capability: get, State: "open", Failures: 3, RetryAt: t0.Add(time.Minute)}},
		},
		{
			name: "stays closed just below N",
			steps: cat(rep(2, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				rep(1, step{cap: get, calls: 1})),
		},
		{
			name: "a success resets the count",
			steps: cat(rep(2, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				rep(1, step{cap: get, calls: 1}),
				rep(2, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				rep(1, step{cap: get, calls: 1})),
		},
		{
			name:  "caller errors do not open it",
			steps: rep(6, step{cap: get, fail: notFound, calls: 1, wantErr: "not found"}),
		},
		{
			name:  "invalid arguments do not reach it",
			steps: rep(6, step{cap: get, fail: unavailable, calls: 0, wantErr: "args"}),
		},
		{
			name: "the other capability of the provider is unaffected",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				rep(2, step{cap: send, calls: 1}),
				rep(1, step{cap: get, calls: 0, wantErr: "circuit"})),
			want: []registry.CircuitOut{{Capability: get, State: "open", Failures: 3, RetryAt: t0.Add(time.Minute)}},
		},
		{
			name: "still open just before the cool-down ends",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				[]step{{advance: time.Minute - time.Nanosecond, cap: get, calls: 0, wantErr: "circuit"}}),
			want: []registry.CircuitOut{{Capability: get, State: "open", Failures: 3, RetryAt: t0.Add(time.Minute)}},
		},
		{
			name: "half-open: shown when the cool-down is over",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				[]step{{advance: time.Minute}}),
			want: []registry.CircuitOut{{Capability: get, State: "half_open", Failures: 3, RetryAt: t0.Add(time.Minute)}},
		},
		{
			name: "half-open trial success closes it",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				[]step{{advance: time.Minute, cap: get, calls: 1}},
				rep(2, step{cap: get, calls: 1})),
		},
		{
			name: "half-open trial failure re-opens it for another cool-down",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				[]step{{advance: time.Minute, cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}},
				rep(1, step{cap: get, calls: 0, wantErr: "circuit"})),
			want: []registry.CircuitOut{{Capability: get, State: "open", Failures: 4, RetryAt: t0.Add(2 * time.Minute)}},
		},
		{
			name: "half-open trial with a caller error closes it",
			steps: cat(rep(3, step{cap: get, fail: unavailable, calls: 1, wantErr: "the ERP is down"}),
				[]step{{advance: time.Minute, cap: get, fail: notFound, calls: 1, wantErr: "not found"}},
				rep(1, step{cap: get, calls: 1})),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var fail func(context.Context, capability.Call) (json.RawMessage, error)
			p := newProvider("plugin.erp", capability.KindPlugin, get, send)
			p.fn = func(ctx context.Context, c capability.Call) (json.RawMessage, error) {
				if fail != nil {
					return fail(ctx, c)
				}
				return answer(c)
			}
			b := &testBundle{store: openStore(t)}
			b.clock = clock.NewFake(t0)
			// The registry's own deadline times the hanging calls out (a
			// caller's short one could run out while the bindings load).
			b.reg = registry.New(registry.Config{Store: b.store, Clock: b.clock, CircuitFailures: 3, CircuitCoolDown: time.Minute,
				CallTimeout: 300 * time.Millisecond})
			if err := b.reg.Register(p); err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				b.clock.Advance(s.advance)
				if s.cap == "" {
					continue
				}
				fail = s.fail
				a := args[s.cap]
				if s.wantErr == "args" {
					a = `{}`
				}
				before := p.calls.Load()
				_, err := b.reg.Call(ctx, call("ten_a", s.cap, a))
				if got := int(p.calls.Load() - before); got != s.calls {
					t.Errorf("step %d: the provider was called %d times, want %d", i, got, s.calls)
				}
				switch s.wantErr {
				case "":
					if err != nil {
						t.Errorf("step %d: Call = %v, want success", i, err)
					}
				case "circuit":
					if !errors.Is(err, registry.ErrCircuitOpen) || !errors.Is(err, errs.Unavailable) ||
						!strings.Contains(errs.PublicMessage(err), "circuit of provider plugin.erp for "+s.cap+" is open") ||
						!strings.Contains(errs.PublicMessage(err), "trial call through at ") {
						t.Errorf("step %d: Call = %v, want an open circuit", i, err)
					}
				default:
					if err == nil || !strings.Contains(err.Error(), s.wantErr) || errors.Is(err, registry.ErrCircuitOpen) {
						t.Errorf("step %d: Call = %v, want %q", i, err, s.wantErr)
					}
				}
			}
			conns := b.reg.Connections(ctx)
			if diff := cmp.Diff(tc.want, conns[0].Circuits); diff != "" {
				t.Errorf("circuits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCircuitRefusesDuringTrial: while the half-open trial call is under
// way, other calls fail at once.
func TestCircuitRefusesDuringTrial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var down bool
	p := newProvider("plugin.mail", capability.KindPlugin, "chat.message.send")
	p.fn = func(context.Context, capability.Call) (json.RawMessage, error) {
		if down {
			return nil, errs.Unavailablef("down")
		}
		entered <- struct{}{}
		<-release
		return json.RawMessage(`{"message_id":"m1","status":"sent"}`), nil
	}
	clk := clock.NewFake(t0)
	reg := registry.New(registry.Config{Store: openStore(t), Clock: clk, CircuitFailures: 1, CircuitCoolDown: time.Second})
	if err := reg.Register(p); err != nil {
		t.Fatal(err)
	}
	c := call("ten_a", "chat.message.send", `{"channel":"#ops","text":"hi"}`)
	down = true
	if _, err := reg.Call(ctx, c); err == nil {
		t.Fatal("want the first call to fail")
	}
	down = false
	clk.Advance(time.Second)
	done := make(chan error, 1)
	go func() { _, err := reg.Call(ctx, c); done <- err }()
	testwait.Recv(t, entered, "the trial call reached the provider")
	if _, err := reg.Call(ctx, c); !errors.Is(err, registry.ErrCircuitOpen) || !strings.Contains(err.Error(), "half-open") {
		t.Errorf("call during the trial = %v, want refused", err)
	}
	if got := reg.Connections(ctx)[0].Circuits; len(got) != 1 || got[0].State != registry.CircuitHalfOpen {
		t.Errorf("circuits during the trial = %+v", got)
	}
	close(release)
	if err := testwait.Recv(t, done, "the trial call returned"); err != nil {
		t.Fatalf("trial = %v", err)
	}
	if _, err := reg.Call(ctx, c); err != nil {
		t.Errorf("after the trial = %v", err)
	}
	if got := reg.Connections(ctx)[0].Circuits; got != nil {
		t.Errorf("circuits after the trial = %+v, want none", got)
	}
}

// TestCircuitKeptAndNotCounted: a Refresh keeps a provider's open circuit;
// calls their caller cancelled do not count against it.
func TestCircuitKeptAndNotCounted(t *testing.T) {
	t.Parallel()
	p := newProvider("plugin.mail", capability.KindPlugin, "chat.message.send")
	p.fn = func(ctx context.Context, _ capability.Call) (json.RawMessage, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errs.Unavailablef("down")
	}
	b := setup(t, p)
	c := call("ten_a", "chat.message.send", `{"channel":"#ops","text":"hi"}`)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 {
		if _, err := b.reg.Call(cancelled, c); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call = %v", err)
		}
	}
	if got := b.reg.Connections(context.Background())[0].Circuits; got != nil {
		t.Fatalf("circuits after cancelled calls = %+v, want none", got)
	}
	for range 5 { // the default threshold
		if _, err := b.reg.Call(context.Background(), c); errors.Is(err, registry.ErrCircuitOpen) {
			t.Fatalf("refused before the threshold: %v", err)
		}
	}
	if err := b.reg.Refresh("plugin.mail"); err != nil {
		t.Fatal(err)
	}
	want := []registry.CircuitOut{{Capability: "chat.message.send", State: "open", Failures: 5, RetryAt: t0.Add(30 * time.Second)}}
	if diff := cmp.Diff(want, b.reg.Connections(context.Background())[0].Circuits); diff != "" {
		t.Errorf("circuits after Refresh (-want +got):\n%s", diff)
	}
	if _, err := b.reg.Call(context.Background(), c); !errors.Is(err, registry.ErrCircuitOpen) {
		t.Errorf("call after Refresh = %v, want refused", err)
	}
}
