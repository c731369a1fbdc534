package registry_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/capability"
)

// atOnce is a provider that says its calls never block
// (capability.ReturnsAtOnce).
type atOnce struct{ *provider }

func (atOnce) ReturnsAtOnce() {}

// TestReturnsAtOnce: a Route tells whether the provider a tenant's
// call of a capability goes to returns at once: a built-in provider that
// says so does; a connector that says so does not (its calls go out over
// the network), nor does a provider that does not say so, nor a
// capability no provider fills.
func TestReturnsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, atOnce{newProvider("memo", capability.KindBuiltin, "document.validate")},
		atOnce{newProvider("hook", capability.KindConnector, "sms.send")},
		newProvider("mail", capability.KindBuiltin, "email.send"))
	ctx := context.Background()
	for _, tc := range []struct {
		capID string
		want  bool
	}{{"document.validate", true}, {"sms.send", false}, {"email.send", false}, {"ticket.create", false}} {
		rt := b.reg.Route(ctx, "t1", tc.capID)
		if got := rt.ReturnsAtOnce(); got != tc.want {
			t.Errorf("ReturnsAtOnce(%s) = %v, want %v", tc.capID, got, tc.want)
		}
	}
}
