package access

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// APIKeyIn creates an API key (interface.md's ApiKeyIn).
type APIKeyIn struct {
	Name string `json:"name" jsonschema:"required,minLength=1,maxLength=120"`
	// Roles default to [member].
	Roles []string `json:"roles" jsonschema:"enum=admin,enum=approver,enum=member,enum=viewer,default=member"`
	// Apps limits the key; null means every app.
	Apps []string `json:"apps" jsonschema:"nullable"`
	// ExpiresDays is the key's lifetime; null means it does not expire.
	ExpiresDays *int `json:"expires_days" jsonschema:"nullable,minimum=1,maximum=730"`
	// BreakGlassReason lets an admin key skip the four-eyes wait; the key
	// then lasts 24 hours.
	BreakGlassReason *string `json:"break_glass_reason" jsonschema:"nullable,maxLength=2000"`
}

// Key statuses.
const (
	KeyActive  = "active"
	KeyPending = "pending" // waits for a second admin in the change queue
	KeyExpired = "expired"
)

// Key is an API key as lists show it: never its secret.
type Key struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
	Apps  []string `json:"apps"`
	// Prefix is the first characters of the secret, enough to recognise it.
	Prefix    string     `json:"prefix"`
	ExpiresAt *time.Time `json:"expires_at"`
	CreatedAt time.Time  `json:"created_at"`
	// CreatedBy is the person who made the key.
	CreatedBy string `json:"created_by"`
	// ParentKeyID is the API key that made this key, when a key made it:
	// the key expires no later than its parent and is revoked with it.
	ParentKeyID string `json:"parent_key_id,omitempty"`
	// Status is active, pending (waiting for a second admin) or expired.
	Status           string  `json:"status"`
	BreakGlassReason *string `json:"break_glass_reason"`
	// ChangeID is the change a pending key waits on.
	ChangeID string `json:"change_id,omitempty"`
}

// NewKey is a key just made, with its secret: the only time it is shown.
type NewKey struct {
	Key
	Secret string `json:"secret"`
}

var keys = &store.Collection[Key]{
	Name:     "apikey",
	ID:       func(k *Key) string { return k.ID },
	NotFound: "api key not found",
	Indexes: []store.Index[Key]{
		{Name: "creator", Values: func(k *Key) [][]any { return [][]any{{k.CreatedBy}} }},
		{Name: "parent", Values: func(k *Key) [][]any {
			if k.ParentKeyID == "" {
				return nil
			}
			return [][]any{{k.ParentKeyID}}
		}},
	},
}

// revokedKey is what stays of a revoked key: whose it was. An approval's
// separation of duties and distinct approvers compare people, and the
// runs a key started and the votes it cast outlive the key (see KeyIDsOf).
type revokedKey struct {
	ID        string `json:"id"`
	CreatedBy string `json:"created_by"`
}

var revokedKeys = &store.Collection[revokedKey]{
	Name:     "apikeyrevoked",
	ID:       func(k *revokedKey) string { return k.ID },
	NotFound: "revoked api key not found",
	Indexes: []store.Index[revokedKey]{
		{Name: "creator", Values: func(k *revokedKey) [][]any { return [][]any{{k.CreatedBy}} }},
	},
}

// at is the key as seen at now: an active key past its expiry is expired.
func (k *Key) at(now time.Time) *Key {
	out := *k
	if out.Status == KeyActive && expired(out.ExpiresAt, now) {
		out.Status = KeyExpired
	}
	return &out
}

const maxKeyName = 120

// MaxKeysPerUser bounds the API keys one person holds (those made through
// the person's own keys included), so that minting keys cannot multiply
// what the person may do or store.
const MaxKeysPerUser = 50

func (s *Service) checkKeyIn(in APIKeyIn) error {
	vs := checkLen([]any{"name"}, in.Name, 1, maxKeyName)
	if len(vs) == 0 && strings.TrimSpace(in.Name) == "" {
		vs = append(vs, errs.Violation{Loc: []any{"name"}, Msg: "must not be blank", Type: "string_too_short"})
	}
	if d := in.ExpiresDays; d != nil && *d < 1 {
		vs = append(vs, errs.Violation{Loc: []any{"expires_days"}, Msg: "must be at least 1", Type: "greater_than_equal"})
	} else if d != nil && *d > 730 {
		vs = append(vs, errs.Violation{Loc: []any{"expires_days"}, Msg: "must be at most 730", Type: "less_than_equal"})
	}
	vs = append(vs, s.checkGrant(in.Roles, in.Apps)...)
	vs = append(vs, checkReason(in.BreakGlassReason)...)
	return errs.Validation(vs...)
}

// CreateKey makes an API key for p. The key cannot carry a permission or an
// app p lacks (errs.Forbidden). A key made by an API key is its child: it
// expires no later than its parent and is revoked with it. A person holds
// at most MaxKeysPerUser keys (errs.Conflict beyond). A key granting admin while the workspace's
// four-eyes rule is on waits, pending, for a second admin (its change is
// in ChangeID; the secret works once approved), unless BreakGlassReason is
// given: then it works at once, is audited with the reason and expires
// within BreakGlassTTL.
func (s *Service) CreateKey(ctx context.Context, p *Principal, in APIKeyIn) (*NewKey, error) {
	if in.Roles == nil {
		in.Roles = []string{RoleMember}
	}
	if err := s.checkKeyIn(in); err != nil {
		return nil, err
	}
	if err := canGrant(p, in.Roles, in.Apps); err != nil {
		return nil, err
	}
	now := s.now()
	var out *NewKey
	err := s.st.Update(ctx, func(tx store.Txn) error {
		fourEyes, err := fourEyesTx(tx, p.Tenant)
		if err != nil {
			return err
		}
		held, err := keys.CountBy(tx, p.Tenant, "creator", p.UserID)
		if err != nil {
			return err
		}
		if held >= MaxKeysPerUser {
			return errs.Conflictf("you hold %d API keys, the most one person may; revoke one you no longer use", held)
		}
		k := &Key{ID: s.ids.New("key", now), Name: in.Name, Roles: sorted(clone(in.Roles)), Apps: cloneApps(in.Apps),
			CreatedAt: now, CreatedBy: p.UserID, ParentKeyID: p.KeyID, Status: KeyActive, BreakGlassReason: in.BreakGlassReason}
		if in.ExpiresDays != nil {
			exp := now.Add(time.Duration(*in.ExpiresDays) * 24 * time.Hour)
			k.ExpiresAt = &exp
		}
		if pe := p.KeyExpiresAt; pe != nil && (k.ExpiresAt == nil || pe.Before(*k.ExpiresAt)) {
			exp := *pe
			k.ExpiresAt = &exp
		}
		admin := grantsAdmin(k.Roles) && fourEyes
		if admin && in.BreakGlassReason != nil {
			if exp := now.Add(BreakGlassTTL); k.ExpiresAt == nil || exp.Before(*k.ExpiresAt) {
				k.ExpiresAt = &exp
			}
		}
		if admin && in.BreakGlassReason == nil {
			k.Status = KeyPending
		}
		secret, err := putNewCredential(tx, tagKey, &credential{Kind: credKey, Tenant: p.Tenant, RecordID: k.ID,
			UserID: p.UserID, Email: p.Email, Roles: k.Roles, Apps: k.Apps, Pending: k.Status == KeyPending,
			ExpiresAt: k.ExpiresAt})
		if err != nil {
			return err
		}
		k.Prefix = secret[:lookupLen]
		if k.Status == KeyPending {
			ch, err := s.proposeTx(tx, p.Tenant, kindAdminKey, p.Actor(), p.UserID,
				"API key \""+k.Name+"\" with the admin role", keyChange{KeyID: k.ID}, now)
			if err != nil {
				return err
			}
			k.ChangeID = ch.ID
		}
		if err := keys.Put(tx, p.Tenant, k); err != nil {
			return err
		}
		out = &NewKey{Key: *k, Secret: secret}
		return audit.Write(tx, p.Tenant, &s.ids, audit.Entry{At: now, Actor: p.Actor(), Action: "api_key.create",
			Entity: "api_key", EntityID: k.ID, After: audit.Marshal(k), Reason: reasonOf(in.BreakGlassReason)})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func reasonOf(r *string) string {
	if r == nil {
		return ""
	}
	return *r
}

// Keys returns one page of API keys, newest first: for an API key, the
// keys it made; for a person, every key of the tenant with access.manage,
// the person's own otherwise.
func (s *Service) Keys(ctx context.Context, p *Principal, page store.Page) ([]*Key, string, error) {
	now := s.now()
	return viewPage(ctx, s.st,
		func(r store.Reader) ([]*Key, string, error) {
			if p.KeyID != "" {
				return keys.ListBy(r, p.Tenant, "parent", []any{p.KeyID}, page)
			}
			if p.Can(PermAccessManage) {
				return keys.List(r, p.Tenant, page)
			}
			return keys.ListBy(r, p.Tenant, "creator", []any{p.UserID}, page)
		},
		func(k *Key) *Key { return k.at(now) })
}

// KeyIDsOf returns the ids of the tenant's API keys person userID made
// (also through a key of theirs): the names the person acts under besides
// their own. Revoked keys are among them: what a key did (a run it
// started, a vote it cast) stays the person's once the key is gone.
func (s *Service) KeyIDsOf(ctx context.Context, tenant, userID string) ([]string, error) {
	var ids []string
	add := func(id string) error {
		ids = append(ids, id)
		return nil
	}
	err := s.st.View(ctx, func(r store.Reader) error {
		if err := keys.IDsBy(r, tenant, "creator", []any{userID}, add); err != nil {
			return err
		}
		return revokedKeys.IDsBy(r, tenant, "creator", []any{userID}, add)
	})
	return ids, err
}

// Key returns one API key of the tenant.
func (s *Service) Key(ctx context.Context, tenant, id string) (*Key, error) {
	now := s.now()
	return viewOne(ctx, s.st,
		func(r store.Reader) (*Key, error) { return keys.Get(r, tenant, id) },
		func(k *Key) *Key { return k.at(now) })
}

// CanSeeKey reports, as an error, whether p may read or revoke k: an API
// key acts only on the keys it made; a person on its own keys, or on any
// with access.manage.
func CanSeeKey(p *Principal, k *Key) error {
	if p.KeyID != "" {
		if k.ParentKeyID != p.KeyID {
			return errs.Forbiddenf("an API key acts only on the keys it made")
		}
		return nil
	}
	if k.CreatedBy != p.UserID && !p.Can(PermAccessManage) {
		return errs.Forbiddenf("missing permission %s", PermAccessManage)
	}
	return nil
}

// RevokeKey deletes an API key and the keys it made (and theirs); they
// stop working at once. See CanSeeKey for who may. A pending key's change
// is withdrawn.
func (s *Service) RevokeKey(ctx context.Context, p *Principal, id string) error {
	now := s.now()
	return s.st.Update(ctx, func(tx store.Txn) error {
		k, err := keys.Get(tx, p.Tenant, id)
		if err != nil {
			return err
		}
		if err := CanSeeKey(p, k); err != nil {
			return err
		}
		if err := deleteKeyTx(tx, p.Tenant, k); err != nil {
			return err
		}
		if k.Status == KeyPending && k.ChangeID != "" {
			if err := s.withdrawTx(tx, p.Tenant, k.ChangeID, p.Actor(), "the key was revoked", now); err != nil {
				return err
			}
		}
		return audit.Write(tx, p.Tenant, &s.ids, audit.Entry{At: now, Actor: p.Actor(), Action: "api_key.revoke",
			Entity: "api_key", EntityID: k.ID, Before: audit.Marshal(k.at(now))})
	})
}

// deleteKeyTx deletes k, its credential, and the keys it made, theirs
// and so on (a person holds at most MaxKeysPerUser keys, so the tree is
// small).
func deleteKeyTx(tx store.Txn, tenant string, k *Key) error {
	var children []string
	if err := keys.IDsBy(tx, tenant, "parent", []any{k.ID}, func(id string) error {
		children = append(children, id)
		return nil
	}); err != nil {
		return err
	}
	for _, id := range children {
		c, err := keys.Get(tx, tenant, id)
		if errors.Is(err, errs.NotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := deleteKeyTx(tx, tenant, c); err != nil {
			return err
		}
	}
	if err := credentials.Delete(tx, store.System, k.Prefix); err != nil && !errors.Is(err, errs.NotFound) {
		return err
	}
	if err := revokedKeys.Put(tx, tenant, &revokedKey{ID: k.ID, CreatedBy: k.CreatedBy}); err != nil {
		return err
	}
	return keys.Delete(tx, tenant, k.ID)
}

// keyChange is the payload of an admin key waiting for a second admin.
type keyChange struct {
	KeyID string `json:"key_id"`
}

const kindAdminKey = "access.api_key"

// changedKey returns the key a keyChange payload names.
func changedKey(tx store.Txn, tenant string, payload json.RawMessage) (*Key, error) {
	var kc keyChange
	if err := json.Unmarshal(payload, &kc); err != nil {
		return nil, errors.Wrap(err, "decode key change")
	}
	return keys.Get(tx, tenant, kc.KeyID)
}

// approveKey activates a pending key.
func (s *Service) approveKey(_ context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	k, err := changedKey(tx, tenant, payload)
	if err != nil {
		return err
	}
	c, err := credentials.Get(tx, store.System, k.Prefix)
	if err != nil {
		return err
	}
	before := *k
	k.Status, c.Pending = KeyActive, false
	if err := credentials.Put(tx, store.System, c); err != nil {
		return err
	}
	if err := keys.Put(tx, tenant, k); err != nil {
		return err
	}
	return audit.Write(tx, tenant, &s.ids, audit.Entry{At: s.now(), Actor: approver, Action: "api_key.activate",
		Entity: "api_key", EntityID: k.ID, Before: audit.Marshal(before), After: audit.Marshal(k)})
}

// rejectKey deletes a pending key.
func (s *Service) rejectKey(_ context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	k, err := changedKey(tx, tenant, payload)
	if err != nil {
		return err
	}
	if err := deleteKeyTx(tx, tenant, k); err != nil {
		return err
	}
	return audit.Write(tx, tenant, &s.ids, audit.Entry{At: s.now(), Actor: approver, Action: "api_key.revoke",
		Entity: "api_key", EntityID: k.ID, Before: audit.Marshal(k), Reason: "the admin grant was rejected"})
}
