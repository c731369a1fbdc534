package registry_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/callwrites"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/cockroachdb/errors"
)

// joining is a provider that says its actions commit with the caller's
// commit of their result (callwrites.Joiner).
type joining struct{ *provider }

func (joining) JoinsWrites(callwrites.Mark) {}

// TestJoinsWrites: a Route tells whether the provider a tenant's call
// of a capability goes to joins its writes to the caller's commit: a
// Joiner does, any other does not, nor does a capability no provider
// fills.
func TestJoinsWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, joining{newProvider("outbox", capability.KindBuiltin, "email.send")},
		newProvider("sms", capability.KindBuiltin, "sms.send"))
	ctx := context.Background()
	for _, tc := range []struct {
		capID string
		want  bool
	}{{"email.send", true}, {"sms.send", false}, {"ticket.create", false}} {
		rt := b.reg.Route(ctx, "t1", tc.capID)
		if got := rt.JoinsWrites(); got != tc.want {
			t.Errorf("JoinsWrites(%s) = %v, want %v", tc.capID, got, tc.want)
		}
	}
}

// TestCallThatMustJoin: a call whose caller's Writes say MustJoin (made
// before the run it is made for is durable) goes to a Joiner, and is
// refused, unavailable and uncalled, by any other provider: its binding
// changed since the caller looked. Without MustJoin, any provider takes
// it.
func TestCallThatMustJoin(t *testing.T) {
	t.Parallel()
	outbox, sms := newProvider("outbox", capability.KindBuiltin, "email.send"), newProvider("sms", capability.KindBuiltin, "sms.send")
	b := setup(t, joining{outbox}, sms)
	const mail, sms1 = `{"to": "ann@example.com", "subject": "Hi", "body": "Hello"}`, `{"to": "+15550100", "text": "Hi"}`
	for _, tc := range []struct {
		capID    string
		args     string
		mustJoin bool
		p        *provider
		refused  bool
	}{
		{"email.send", mail, true, outbox, false},
		{"sms.send", sms1, true, sms, true},
		{"sms.send", sms1, false, sms, false},
	} {
		w := &callwrites.Writes{MustJoin: tc.mustJoin}
		before := tc.p.calls.Load()
		_, err := b.reg.Call(callwrites.With(context.Background(), w), capability.Call{Tenant: "t1", Capability: tc.capID,
			Args: json.RawMessage(tc.args), IdempotencyKey: "k"})
		called := tc.p.calls.Load() > before
		if refused := errors.Is(err, errs.Unavailable); refused != tc.refused || called == tc.refused ||
			(!tc.refused && err != nil) {
			t.Errorf("%s, MustJoin %v: error %v, called %v; want refused %v", tc.capID, tc.mustJoin, err, called, tc.refused)
		}
	}
}
