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
// Besides writes, a Writes carries counter increments (AddCount, kept by
// the caller's commits so that concurrent ones add up) and functions told
// how the commit ended (OnSettled). The autonomy gate uses them: before a
// call whose provider is a Joiner, it hands its answer and day counts to
// the same commit, and releases what it counted in memory if that commit
// fails or the result is dropped.
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
	// Joins, set by the caller, says the call's provider is a Joiner:
	// nothing of the call acts outside the commit of its result, so
	// writes tied to the call that were decided before it (the autonomy
	// gate's answer) may wait for that commit too.
	Joins bool
	// MustJoin, set by the caller, says the call is made before the
	// caller's record of the run it is made for is durable (a run's first
	// commit): only a Joiner may take it, whose action is lost with the
	// run if that commit is. A caller that resolves the provider (the
	// capability registry) refuses the call when the provider it finds is
	// not one (its binding changed since the caller looked).
	MustJoin bool

	mu      sync.Mutex
	ops     []func(store.Txn) error
	counts  []Count
	settled []func(err error)
}

// Count is an increment of a counter the caller keeps in its commits: an
// 8-byte big-endian value at Key that only the caller writes, so that
// increments of commits in flight add up (a write that read the value
// would lose one).
type Count struct {
	Key string
	N   int64
}

// Batch is everything added to a Writes: the writes, the counter
// increments, and the functions told how the commit carrying them ended.
type Batch struct {
	Ops     []func(store.Txn) error
	Counts  []Count
	Settled []func(err error)
}

// Empty reports whether b holds nothing.
func (b *Batch) Empty() bool {
	return len(b.Ops) == 0 && len(b.Counts) == 0 && len(b.Settled) == 0
}

// Drop tells b's Settled functions how the commit carrying b ended: nil
// when it committed, else err (also when b is dropped without a commit),
// and empties b.
func (b *Batch) Drop(err error) {
	for _, fn := range b.Settled {
		fn(err)
	}
	*b = Batch{}
}

// Joiner is implemented by a provider whose every action, when the caller
// offers a Writes, is a write it adds there instead of doing it: nothing
// of its calls happens outside the caller's commit of their result. (The
// outbox's email.send is one; a provider that calls another system, or
// commits on its own, is not.) JoinsWrites is a marker and does nothing;
// its argument, a type of this internal package, keeps a provider from
// outside this module (an embedder's, a plugin's) from implementing it by
// chance or on purpose.
type Joiner interface {
	JoinsWrites(Mark)
}

// Mark is the argument of Joiner's marker method.
type Mark struct{}

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

// AddCount adds the increments cs to their counters in the transaction
// that commits the call's result (and only if it commits it).
func (w *Writes) AddCount(cs ...Count) {
	w.mu.Lock()
	w.counts = append(w.counts, cs...)
	w.mu.Unlock()
}

// OnSettled adds fn, which the caller calls once: with nil when the
// transaction carrying the writes committed, with an error when it failed
// or the writes were dropped without a commit (a result that came too
// late, a run cancelled or reloaded meanwhile). A provider that keeps
// something in memory for its writes (a reservation) releases it there.
func (w *Writes) OnSettled(fn func(err error)) {
	w.mu.Lock()
	w.settled = append(w.settled, fn)
	w.mu.Unlock()
}

// TakeAll returns everything added and empties w.
func (w *Writes) TakeAll() Batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := Batch{Ops: w.ops, Counts: w.counts, Settled: w.settled}
	w.ops, w.counts, w.settled = nil, nil, nil
	return b
}
