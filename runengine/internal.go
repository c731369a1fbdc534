package runengine

import (
	"context"
	"encoding/json"

	"github.com/bas-platform/bas/store"
)

// Internal is not part of the API: it hands this module's own packages the
// engine's plumbing, as an any whose type may change at any time (bas
// wires the apps to the outbox; httpapi answers a start with the JSON view
// the worker encodes, without a snapshot). Its value has the methods
//
//	Emit(tx store.Txn, tenant, name string, data any) error // write an event within tx
//	Kick()                                                // once tx has committed
//	StartJSON(ctx context.Context, p StartParams) (json.RawMessage, error)
func (e *Engine) Internal() any { return internals{e} }

// internals is the engine's plumbing for this module's packages.
type internals struct{ e *Engine }

// Emit writes an event into the outbox within tx, so it is emitted if and
// only if tx commits. Call Kick once tx has committed.
func (i internals) Emit(tx store.Txn, tenant, name string, data any) error {
	return i.e.emitTx(tx, tenant, name, data)
}

// Kick tells the dispatcher that events may be waiting in the outbox.
func (i internals) Kick() { i.e.kick() }

// StartJSON is Start answering the run as the API shows it.
func (i internals) StartJSON(ctx context.Context, p StartParams) (json.RawMessage, error) {
	rep, err := i.e.start(ctx, p, true)
	if err != nil {
		return nil, err
	}
	return rep.view, nil
}
