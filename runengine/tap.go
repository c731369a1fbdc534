package runengine

import (
	"time"

	"github.com/bas-platform/bas/store"
)

// EventTap sees every event the engine and the apps emit, in the
// transaction that emits it (outbound webhooks are one). A tap counts as a
// listener: an event it wants is written even when no process or run
// listens to it.
type EventTap interface {
	// Wants reports, cheaply, whether the tap may want events named name
	// of tenant; Tap is called only for those.
	Wants(tenant, name string) bool
	// Tap returns the writes to add to the transaction emitting ev and
	// what to do once that transaction is durable, or a nil op when the
	// tap has no interest in ev. It is called outside the transaction and
	// must not block; op must only write (it runs in the engine's commit
	// pipeline) and after must not block.
	Tap(ev *Event) (op func(store.Txn) error, after func())
	// Kick is called after an app's transaction that emitted events
	// committed (the apps' Emit has no after of its own).
	Kick()
}

// newEvent makes an event emitted at at.
func (e *Engine) newEvent(tenant, name string, data map[string]any, at time.Time) *Event {
	return &Event{ID: e.ids.New("evt", at), Tenant: tenant, Name: name, Data: data, At: at}
}
