package store

import "context"

type alsoKey struct{}

// AlsoInUpdate returns ctx carrying fn: an Update given ctx, on a store
// made by Hooked, runs fn in its transaction after its own function (when
// that succeeded), so what fn writes commits exactly when the change does.
// The HTTP layer uses it to mark an Idempotency-Key as acted on in the
// transaction of the effect.
func AlsoInUpdate(ctx context.Context, fn func(Txn) error) context.Context {
	return context.WithValue(ctx, alsoKey{}, fn)
}

// HasAlsoInUpdate reports whether ctx carries a function of AlsoInUpdate:
// an Update given ctx must then write only what its caller asked for, not
// share its transaction with other callers' writes.
func HasAlsoInUpdate(ctx context.Context) bool {
	fn, _ := ctx.Value(alsoKey{}).(func(Txn) error)
	return fn != nil
}

// Hooked returns st with Update honouring AlsoInUpdate and giving its
// function a transaction that knows its context (TxnContext). It keeps st's
// Pipeliner ability; a store already hooked is returned as it is.
func Hooked(st Store) Store {
	switch s := st.(type) {
	case *hooked, *hookedPipeliner:
		return st
	case Pipeliner:
		return &hookedPipeliner{hooked: hooked{Store: st}, pipe: s}
	}
	return &hooked{Store: st}
}

// TxnContext returns the context of the Update that tx belongs to, on a
// store made by Hooked (context.Background otherwise): code that is given
// only a transaction can still read the request or call it serves.
func TxnContext(tx Txn) context.Context {
	if c, ok := tx.(*ctxTxn); ok {
		return c.ctx
	}
	return context.Background()
}

// ctxTxn is a transaction that knows its Update's context.
type ctxTxn struct {
	Txn
	ctx context.Context
}

type hooked struct{ Store }

func (h *hooked) Update(ctx context.Context, fn func(Txn) error) error {
	also, _ := ctx.Value(alsoKey{}).(func(Txn) error)
	return h.Store.Update(ctx, func(tx Txn) error {
		tx = &ctxTxn{Txn: tx, ctx: ctx}
		if err := fn(tx); err != nil {
			return err
		}
		if also == nil {
			return nil
		}
		return also(tx)
	})
}

type hookedPipeliner struct {
	hooked
	pipe Pipeliner
}

func (h *hookedPipeliner) Begin(ctx context.Context) (PipelinedTxn, error) { return h.pipe.Begin(ctx) }
