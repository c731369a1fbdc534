// Package callwrites lets a built-in capability provider hand the run
// engine the writes of a call, so that they commit in the transaction of
// the step's result instead of one of their own.
//
// The engine puts a Writes in the context of every capability call it
// makes. A provider whose action is a write of the workspace's own store
// (the outbox's email.send enqueues a message) may, instead of committing,
// Add its write there and answer at once: the write, the step's
// completion and the rest of the step's changes are then one transaction,
// so a crash leaves all or none, and on resume the call is made again
// with the same idempotency key. The provider must answer as it would
// after its own commit, and its write must not depend on what other
// commits in flight write (the engine's commits are pipelined: a write
// reads what was durable when its transaction opened).
//
// Only code of this module can reach it: plugins, connectors and an
// embedder's providers commit their own writes as before. Callers other
// than the engine (a direct call over HTTP) put no Writes in the context,
// and a provider then commits itself.
package callwrites

import (
	"context"
	"sync"

	"github.com/bas-platform/bas/store"
)

// Writes collects the writes of one call, to commit with the step's
// result. The zero value is ready to use.
type Writes struct {
	// New, set by the caller, says no call with this call's idempotency
	// key was made before (the run engine knows it of a run's first
	// calls): nothing was written under the key, and the provider's write
	// need not look.
	New bool

	mu  sync.Mutex
	ops []func(store.Txn) error
}

// ContextKey is the context key of a call's *Writes. With uses it; a
// caller with a context type of its own may answer it from Value.
type ContextKey struct{}

// With returns ctx carrying w.
func With(ctx context.Context, w *Writes) context.Context {
	return context.WithValue(ctx, ContextKey{}, w)
}

// From returns the Writes ctx carries, or nil when the caller commits
// nothing for the provider.
func From(ctx context.Context) *Writes {
	w, _ := ctx.Value(ContextKey{}).(*Writes)
	return w
}

// Add adds op, a write the caller applies in the transaction that commits
// the call's result (and only if it commits it).
func (w *Writes) Add(op func(store.Txn) error) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
}

// Take returns the writes added and empties w.
func (w *Writes) Take() []func(store.Txn) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := w.ops
	w.ops = nil
	return ops
}
