package access

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/internal/foureyes"
	"github.com/bas-platform/bas/internal/ids"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Change statuses (see package foureyes).
const (
	ChangePending   = foureyes.ChangePending
	ChangeApproved  = foureyes.ChangeApproved
	ChangeRejected  = foureyes.ChangeRejected
	ChangeWithdrawn = foureyes.ChangeWithdrawn
)

// Change is a widening change waiting for, or decided by, a second person
// (foureyes.Change).
type Change = foureyes.Change

// The access service is the four-eyes queue of the other apps.
var _ foureyes.Queue = (*Service)(nil)

var changes = &store.Collection[Change]{
	Name:     "change",
	ID:       func(c *Change) string { return c.ID },
	NotFound: "change not found",
	Indexes: []store.Index[Change]{
		{Name: "status", Values: func(c *Change) [][]any { return [][]any{{c.Status}} }},
	},
}

// ApplyFunc applies (or, registered with OnReject, drops) an approved
// change of one kind (foureyes.ApplyFunc).
type ApplyFunc = foureyes.ApplyFunc

// KindOption configures a change kind.
type KindOption func(*changeKind)

// OnReject runs fn in the transaction that rejects a change of the kind
// (to drop what was prepared for it).
func OnReject(fn ApplyFunc) KindOption { return func(k *changeKind) { k.reject = fn } }

// DecidedWith sets the permission a person needs to approve or reject
// changes of the kind. Defaults to access.manage.
func DecidedWith(perm string) KindOption { return func(k *changeKind) { k.perm = perm } }

type changeKind struct {
	apply  ApplyFunc
	reject ApplyFunc
	perm   string
}

// RegisterChangeKind makes kind known to the change queue: approving a
// change of that kind runs apply. Register every kind when the workspace
// opens, before changes of it are decided. Registering a kind twice, or
// a nil apply, panics: it is a programming error.
func (s *Service) RegisterChangeKind(kind string, apply ApplyFunc, opts ...KindOption) {
	if kind == "" || apply == nil {
		panic("access: RegisterChangeKind needs a kind and an apply function")
	}
	k := &changeKind{apply: apply, perm: PermAccessManage}
	for _, o := range opts {
		o(k)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.kinds[kind]; dup {
		panic(fmt.Sprintf("access: change kind %q registered twice", kind))
	}
	s.kinds[kind] = k
}

func (s *Service) kind(name string) *changeKind {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.kinds[name]
}

func (s *Service) registerOwnKinds() {
	s.RegisterChangeKind(kindAdminKey, s.approveKey, OnReject(s.rejectKey))
	s.RegisterChangeKind(kindAdminInvitation, s.approveInvitation, OnReject(s.rejectInvitation))
	s.RegisterChangeKind(kindFourEyesOff, s.approveFourEyesOff)
}

// ProposeChange queues a change of a registered kind for a second person
// and returns it, pending. requester is the proposing actor: a person's id,
// or a key id (the key's creator then may not decide either). payload is
// stored as JSON and handed to the kind's ApplyFunc on approval. Whether a
// change must wait at all is the caller's rule (see FourEyes).
func (s *Service) ProposeChange(ctx context.Context, tenant, kind, requester, summary string, payload any) (*Change, error) {
	var ch *Change
	err := s.st.Update(ctx, func(tx store.Txn) error {
		var err error
		ch, err = s.ProposeChangeTx(tx, tenant, kind, requester, summary, payload)
		return err
	})
	return ch, err
}

// ProposeChangeTx is ProposeChange inside the caller's transaction, so a
// change can be queued together with the records that refer to it.
func (s *Service) ProposeChangeTx(tx store.Txn, tenant, kind, requester, summary string, payload any) (*Change, error) {
	user := requester
	if ids.Valid("key", requester) {
		k, err := keys.Get(tx, tenant, requester)
		if err != nil {
			return nil, errors.Wrap(err, "the requesting key")
		}
		user = k.CreatedBy
	}
	return s.proposeTx(tx, tenant, kind, requester, user, summary, payload, s.now())
}

func (s *Service) proposeTx(tx store.Txn, tenant, kind, requester, requesterUser, summary string, payload any,
	now time.Time) (*Change, error) {
	if s.kind(kind) == nil {
		return nil, errors.Newf("access: change kind %q is not registered", kind)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, errors.Wrapf(err, "encode the payload of a %s change", kind)
	}
	ch := &Change{ID: s.ids.New("chg", now), Kind: kind, Summary: summary, Status: ChangePending, Payload: raw,
		RequestedBy: requester, RequesterUserID: requesterUser, CreatedAt: now}
	if err := changes.Put(tx, tenant, ch); err != nil {
		return nil, err
	}
	return ch, audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: requester, Action: "change.propose",
		Entity: "change", EntityID: ch.ID, After: audit.Marshal(ch)})
}

// ValidChangeStatus reports whether status is one a change can have.
func ValidChangeStatus(status string) bool {
	switch status {
	case ChangePending, ChangeApproved, ChangeRejected, ChangeWithdrawn:
		return true
	}
	return false
}

// Changes returns one page of the tenant's changes, newest first, all of
// them or those with status.
func (s *Service) Changes(ctx context.Context, tenant, status string, page store.Page) ([]*Change, string, error) {
	var (
		out  []*Change
		next string
	)
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		if status == "" {
			out, next, err = changes.List(r, tenant, page)
		} else {
			out, next, err = changes.ListBy(r, tenant, "status", []any{status}, page)
		}
		return err
	})
	return out, next, err
}

// Change returns one change of the tenant.
func (s *Service) Change(ctx context.Context, tenant, id string) (*Change, error) {
	var ch *Change
	err := s.st.View(ctx, func(r store.Reader) error {
		var err error
		ch, err = changes.Get(r, tenant, id)
		return err
	})
	return ch, err
}

const maxNoteLen = 2000

// DecisionIn is the body of approving or rejecting a change.
type DecisionIn struct {
	Note *string `json:"note" jsonschema:"nullable,maxLength=2000"`
}

// Approve applies a pending change for p, in the transaction that marks it
// approved. p needs the kind's permission (errs.Forbidden), may not be the
// requester or the requester's key (errs.Forbidden), and the change must
// still be pending (errs.Conflict).
func (s *Service) Approve(ctx context.Context, p *Principal, id, note string) (*Change, error) {
	return s.decide(ctx, p, id, note, true)
}

// Reject drops a pending change for p, under Approve's rules.
func (s *Service) Reject(ctx context.Context, p *Principal, id, note string) (*Change, error) {
	return s.decide(ctx, p, id, note, false)
}

func (s *Service) decide(ctx context.Context, p *Principal, id, note string, approve bool) (*Change, error) {
	if err := errs.Validation(checkLen([]any{"note"}, note, 0, maxNoteLen)...); err != nil {
		return nil, err
	}
	now := s.now()
	var out *Change
	ctx, ended := foureyes.WithAfterDecided(ctx)
	defer ended()
	err := s.st.Update(ctx, func(tx store.Txn) error {
		ch, err := changes.Get(tx, p.Tenant, id)
		if err != nil {
			return err
		}
		k := s.kind(ch.Kind)
		if k == nil {
			return errs.Conflictf("change kind %s is not known to this workspace", ch.Kind)
		}
		if !p.Can(k.perm) {
			return errs.Forbiddenf("missing permission %s", k.perm)
		}
		if p.UserID == ch.RequesterUserID || p.Actor() == ch.RequestedBy {
			return errs.Forbiddenf("the requester cannot approve or reject its own change")
		}
		if ch.Status != ChangePending {
			return errs.Conflictf("change already %s", ch.Status)
		}
		fn, status, action := k.apply, ChangeApproved, "change.approve"
		if !approve {
			fn, status, action = k.reject, ChangeRejected, "change.reject"
		}
		if fn != nil {
			if err := fn(ctx, tx, p.Tenant, ch.Payload, p.Actor()); err != nil {
				return err
			}
		}
		before := *ch
		actor := p.Actor()
		ch.Status, ch.DecidedBy, ch.DecidedAt, ch.Note = status, &actor, &now, note
		if err := changes.Put(tx, p.Tenant, ch); err != nil {
			return err
		}
		out = ch
		return audit.Write(tx, p.Tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: action, Entity: "change",
			EntityID: ch.ID, Before: audit.Marshal(before), After: audit.Marshal(ch), Reason: note})
	})
	return out, err
}

// withdrawTx closes a pending change whose subject went away.
func (s *Service) withdrawTx(tx store.Txn, tenant, id, actor, note string, now time.Time) error {
	ch, err := changes.Get(tx, tenant, id)
	if errors.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil || ch.Status != ChangePending {
		return err
	}
	before := *ch
	ch.Status, ch.DecidedBy, ch.DecidedAt, ch.Note = ChangeWithdrawn, &actor, &now, note
	if err := changes.Put(tx, tenant, ch); err != nil {
		return err
	}
	return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: actor, Action: "change.withdraw", Entity: "change",
		EntityID: ch.ID, Before: audit.Marshal(before), After: audit.Marshal(ch), Reason: note})
}

const kindFourEyesOff = "access.four_eyes_off"

// approveFourEyesOff applies a workspace patch that turns four-eyes off.
func (s *Service) approveFourEyesOff(_ context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	var patch WorkspacePatch
	if err := json.Unmarshal(payload, &patch); err != nil {
		return errors.Wrap(err, "decode workspace change")
	}
	_, err := s.applyWorkspacePatch(tx, tenant, patch, approver, s.now())
	return err
}
