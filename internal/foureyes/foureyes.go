// Package foureyes holds what the apps share of the four-eyes rule: a
// change that widens what may happen without a person (a looser step
// control, more automation, an admin grant) waits for a second person when
// the workspace has the rule on.
//
// Change is the record a second person approves or rejects; Queue is what
// an app hands such a change to (the access app keeps the queue, decides
// changes and runs the kind's ApplyFunc on approval); Required reads the
// rule the same way for every app. An app proposes a change with a payload
// and registers, when the workspace opens, the ApplyFunc that applies an
// approved one.
package foureyes

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Change statuses.
const (
	ChangePending   = "pending"
	ChangeApproved  = "approved"
	ChangeRejected  = "rejected"
	ChangeWithdrawn = "withdrawn" // its subject went away before a decision
)

// Change is a widening change waiting for, or decided by, a second person.
type Change struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Summary says in a line what approving does.
	Summary string `json:"summary"`
	// Status is pending, approved, rejected or withdrawn.
	Status string `json:"status"`
	// Payload is the kind's description of the change, applied on approval.
	Payload json.RawMessage `json:"payload"`
	// RequestedBy is the actor who proposed it (a person or a key).
	RequestedBy string `json:"requested_by"`
	// RequesterUserID is the person behind RequestedBy; neither may decide.
	RequesterUserID string     `json:"requester_user_id"`
	CreatedAt       time.Time  `json:"created_at"`
	DecidedBy       *string    `json:"decided_by"`
	DecidedAt       *time.Time `json:"decided_at"`
	Note            string     `json:"note"`
}

// ApplyFunc applies (or, registered for rejection, drops) an approved
// change of one kind. It runs inside the transaction that marks the change
// decided, so the change and its effect commit together; an error aborts
// both. approver is the deciding actor (for the audit log). It must have no
// outside effects: the transaction may run again on a conflict.
type ApplyFunc func(ctx context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error

// afterKey is the context key of the list AfterDecided adds to.
type afterKey struct{}

// afterList is what runs once a decision's transaction ended.
type afterList struct {
	mu  sync.Mutex
	fns []func()
}

// WithAfterDecided returns ctx carrying the list AfterDecided adds to, and
// the function that runs what was added (each once, in order). The queue
// hands ctx to the ApplyFunc it runs and calls ended once the transaction
// that decides the change ended, committed or not.
func WithAfterDecided(ctx context.Context) (_ context.Context, ended func()) {
	l := &afterList{}
	return context.WithValue(ctx, afterKey{}, l), func() {
		l.mu.Lock()
		fns := l.fns
		l.fns = nil
		l.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}
}

// AfterDecided asks, from an ApplyFunc, for fn to run once the transaction
// the ApplyFunc runs in ended (committed or not; the transaction may run
// the ApplyFunc again on a conflict, and each call's fn runs). It reports
// false, and fn is not run, when ctx does not come from WithAfterDecided.
func AfterDecided(ctx context.Context, fn func()) bool {
	l, ok := ctx.Value(afterKey{}).(*afterList)
	if !ok {
		return false
	}
	l.mu.Lock()
	l.fns = append(l.fns, fn)
	l.mu.Unlock()
	return true
}

// Queue is the four-eyes queue as an app sees it (the access app keeps it).
type Queue interface {
	// FourEyes reports whether tenant's widening changes wait for a second
	// person.
	FourEyes(ctx context.Context, tenant string) (bool, error)
	// ProposeChangeTx queues a change of kind in tx and returns it,
	// pending; payload is stored as JSON and handed to the kind's
	// ApplyFunc on approval.
	ProposeChangeTx(tx store.Txn, tenant, kind, requester, summary string, payload any) (*Change, error)
}

// Required reports whether tenant's widening changes must wait for a
// second person: false without a queue or without a workspace record,
// the workspace's rule otherwise.
func Required(ctx context.Context, q Queue, tenant string) (bool, error) {
	if q == nil {
		return false, nil
	}
	on, err := q.FourEyes(ctx, tenant)
	switch {
	case err == nil:
		return on, nil
	case errors.Is(err, errs.NotFound):
		return false, nil
	}
	return false, errors.Wrap(err, "read the four-eyes setting")
}
