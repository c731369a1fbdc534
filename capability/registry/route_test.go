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
