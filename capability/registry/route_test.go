package registry_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/capability/registry"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
	"github.com/google/go-cmp/cmp"
)

// TestRouteFollowsBindings: a Route resolved once answers for its
// provider while the tenant's bindings and the registered providers stay
// as they were; once either changes it is no longer current, and a call
// made with it goes where a call goes now. A Route that resolved no
// provider is not current, says neither JoinsWrites nor ReturnsAtOnce, and
// its call fails as Call does.
func TestRouteFollowsBindings(t *testing.T) {
	t.Parallel()
	outbox, relay := newProvider("outbox", capability.KindBuiltin, "email.send"), newProvider("relay", capability.KindBuiltin, "email.send")
	b := setup(t, joining{outbox}, atOnce{relay})
	ctx := context.Background()
	if err := b.reg.Bind(ctx, "t1", "email.send", "outbox", "usr_1"); err != nil {
		t.Fatal(err)
	}
	type state struct {
		Current, Joins, AtOnce bool
		Outbox, Relay          int64
		Err                    bool
	}
	look := func(tenant string, rt *registry.Route) state {
		_, err := b.reg.CallRoute(ctx, rt, call(tenant, "email.send", emailOK))
		return state{b.reg.Current(rt), rt.JoinsWrites(), rt.ReturnsAtOnce(), outbox.calls.Load(), relay.calls.Load(), err != nil}
	}
	rt := b.reg.Route(ctx, "t1", "email.send")
	got := []state{look("t1", &rt)}
	if err := b.reg.Bind(ctx, "t1", "email.send", "relay", "usr_1"); err != nil {
		t.Fatal(err)
	}
	got = append(got, look("t1", &rt)) // resolved before the binding changed
	rt = b.reg.Route(ctx, "t1", "email.send")
	got = append(got, look("t1", &rt))
	if err := b.reg.Register(newProvider("sms", capability.KindBuiltin, "sms.send")); err != nil {
		t.Fatal(err)
	}
	got = append(got, look("t1", &rt))           // resolved before the providers changed
	none := b.reg.Route(ctx, "t2", "email.send") // two fill it, none bound
	got = append(got, look("t2", &none))
	want := []state{
		{Current: true, Joins: true, Outbox: 1},
		{Joins: true, Outbox: 1, Relay: 1},
		{Current: true, AtOnce: true, Outbox: 1, Relay: 2},
		{AtOnce: true, Outbox: 1, Relay: 3},
		{Outbox: 1, Relay: 3, Err: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := b.reg.CallRoute(ctx, &none, call("t2", "email.send", emailOK)); !errors.Is(err, errs.Unavailable) {
		t.Errorf("a call with a Route that resolved none: %v, want errs.Unavailable", err)
	}
}

// TestRouteStaleAfterEveryChange: each change of where calls go (a tenant's
// binding, made or removed, of this tenant or another; a provider
// registered, unregistered or refreshed) leaves a Route resolved before it
// no longer current, so its calls resolve again; a bind that changes
// nothing (the provider already bound) or is refused leaves it current. A
// nil Route is not current.
func TestRouteStaleAfterEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		change  func(reg *registry.Registry) error
		current bool
	}{
		{"bind another provider", func(reg *registry.Registry) error {
			return reg.Bind(ctx, "t1", "email.send", "relay", "usr_1")
		}, false},
		{"unbind", func(reg *registry.Registry) error { return reg.Unbind(ctx, "t1", "email.send", "usr_1") }, false},
		{"bind in another tenant", func(reg *registry.Registry) error {
			return reg.Bind(ctx, "t2", "email.send", "relay", "usr_2")
		}, false},
		{"register a provider", func(reg *registry.Registry) error {
			return reg.Register(newProvider("chat", capability.KindBuiltin, "chat.message.send"))
		}, false},
		{"unregister a provider", func(reg *registry.Registry) error {
			if !reg.Unregister("sms") {
				return errors.New("sms was not registered")
			}
			return nil
		}, false},
		{"refresh a provider", func(reg *registry.Registry) error { return reg.Refresh("sms") }, false},
		{"bind the provider already bound", func(reg *registry.Registry) error {
			return reg.Bind(ctx, "t1", "email.send", "outbox", "usr_1")
		}, true},
		{"a refused bind", func(reg *registry.Registry) error {
			if err := reg.Bind(ctx, "t1", "email.send", "sms", "usr_1"); !errors.Is(err, errs.Invalid) {
				return errors.Newf("bind to a provider of another capability: %v, want errs.Invalid", err)
			}
			return nil
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, joining{newProvider("outbox", capability.KindBuiltin, "email.send")},
				newProvider("relay", capability.KindBuiltin, "email.send"),
				newProvider("sms", capability.KindBuiltin, "sms.send"))
			if err := b.reg.Bind(ctx, "t1", "email.send", "outbox", "usr_1"); err != nil {
				t.Fatal(err)
			}
			rt := b.reg.Route(ctx, "t1", "email.send")
			if !b.reg.Current(&rt) {
				t.Fatal("a Route just resolved is not current")
			}
			if err := tc.change(b.reg); err != nil {
				t.Fatal(err)
			}
			if got := b.reg.Current(&rt); got != tc.current {
				t.Errorf("Current after the change = %v, want %v", got, tc.current)
			}
		})
	}
	if registry.New(registry.Config{Store: openStore(t)}).Current(nil) {
		t.Error("a nil Route is current")
	}
}
