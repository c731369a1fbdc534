package registry_test

import (
	"context"
	"testing"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/callwrites"
)

// joining is a provider that says its actions commit with the caller's
// commit of their result (callwrites.Joiner).
type joining struct{ *provider }

func (joining) JoinsWrites(callwrites.Mark) {}

// TestJoinsWrites: the registry tells whether the provider a tenant's call
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
		if got := b.reg.JoinsWrites(ctx, "t1", tc.capID); got != tc.want {
			t.Errorf("JoinsWrites(%s) = %v, want %v", tc.capID, got, tc.want)
		}
	}
}
