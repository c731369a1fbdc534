package runengine

import "github.com/bas-platform/bas/store"

// Internal is not part of the API: it hands this module's own packages
// (bas, which wires the apps beside the engine) the engine's outbox, as an
// any whose type may change at any time. Its value has the methods
//
//	Emit(tx store.Txn, tenant, name string, data any) error // write an event within tx
//	Kick()                                                // once tx has committed
func (e *Engine) Internal() any { return outbox{e} }

// outbox is what apps use of the engine: events written in their own
// transactions.
type outbox struct{ e *Engine }

// Emit writes an event into the outbox within tx, so it is emitted if and
// only if tx commits. Call Kick once tx has committed.
func (o outbox) Emit(tx store.Txn, tenant, name string, data any) error {
	return o.e.emitTx(tx, tenant, name, data)
}

// Kick tells the dispatcher that events may be waiting in the outbox.
func (o outbox) Kick() { o.e.kick() }
