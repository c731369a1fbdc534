package access

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// InviteIn invites a person by email.
type InviteIn struct {
	Email string `json:"email" jsonschema:"required,format=email,maxLength=254"`
	// Roles default to [member].
	Roles []string `json:"roles" jsonschema:"enum=admin,enum=approver,enum=member,enum=viewer,default=member"`
	// Apps limits the person; null means every app.
	Apps []string `json:"apps" jsonschema:"nullable"`
	// BreakGlassReason lets an admin invitation skip the four-eyes wait;
	// the invitation and the admin role it grants then last 24 hours.
	BreakGlassReason *string `json:"break_glass_reason" jsonschema:"nullable,maxLength=2000"`
}

// AcceptIn accepts an invitation.
type AcceptIn struct {
	// Name is the person's name, kept when the person has none yet.
	Name *string `json:"name" jsonschema:"nullable,maxLength=200"`
	// Password is accepted for compatibility with the interface and not
	// stored: people sign in with email codes.
	Password *string `json:"password" jsonschema:"nullable,maxLength=200"`
}

// Invitation statuses.
const (
	InvitationPending  = "pending"
	InvitationAwaiting = "awaiting_approval" // waits for a second admin
	InvitationAccepted = "accepted"
	InvitationExpired  = "expired"
)

// Invitation is an invitation as lists show it: never its token.
type Invitation struct {
	ID    string   `json:"id"`
	Email string   `json:"email"`
	Roles []string `json:"roles"`
	Apps  []string `json:"apps"`
	// Status is pending, awaiting_approval, accepted or expired.
	Status           string     `json:"status"`
	ExpiresAt        time.Time  `json:"expires_at"`
	CreatedAt        time.Time  `json:"created_at"`
	InvitedBy        string     `json:"invited_by"`
	BreakGlassReason *string    `json:"break_glass_reason"`
	ChangeID         string     `json:"change_id,omitempty"`
	AcceptedAt       *time.Time `json:"accepted_at,omitempty"`
	// UserID is the person who accepted.
	UserID string `json:"user_id,omitempty"`
}

// NewInvitation is an invitation just made, with its token: the only time
// it is shown (it is also sent to the invitee by email.send).
type NewInvitation struct {
	Invitation
	Token string `json:"token"`
	// EmailSent reports whether email.send took the invitation.
	EmailSent bool `json:"email_sent"`
}

// invitation is the stored record.
type invitation struct {
	Invitation
	Lookup string `json:"lookup"`
	// GrantExpiresAt ends a break-glass admin grant.
	GrantExpiresAt *time.Time `json:"grant_expires_at,omitempty"`
}

var invitations = &store.Collection[invitation]{
	Name:     "invitation",
	ID:       func(i *invitation) string { return i.ID },
	NotFound: "invitation not found",
}

func (i *invitation) at(now time.Time) *Invitation {
	out := i.Invitation
	if (out.Status == InvitationPending || out.Status == InvitationAwaiting) && !now.Before(out.ExpiresAt) {
		out.Status = InvitationExpired
	}
	return &out
}

func (s *Service) checkInviteIn(in InviteIn) error {
	vs := checkEmail([]any{"email"}, in.Email, true)
	vs = append(vs, s.checkGrant(in.Roles, in.Apps)...)
	vs = append(vs, checkReason(in.BreakGlassReason)...)
	return errs.Validation(vs...)
}

// Invite invites in.Email for p (who needs access.manage) and sends the
// token through email.send. The invitation cannot carry a permission or an
// app p lacks (errs.Forbidden). An admin invitation while four-eyes is on
// is created awaiting_approval (it can be accepted once a second admin
// approves its change) unless BreakGlassReason is given: then the
// invitation and the admin role it grants last BreakGlassTTL.
func (s *Service) Invite(ctx context.Context, p *Principal, in InviteIn) (*NewInvitation, error) {
	if in.Roles == nil {
		in.Roles = []string{RoleMember}
	}
	if err := s.checkInviteIn(in); err != nil {
		return nil, err
	}
	if !p.Can(PermAccessManage) {
		return nil, errs.Forbiddenf("missing permission %s", PermAccessManage)
	}
	if err := canGrant(p, in.Roles, in.Apps); err != nil {
		return nil, err
	}
	now := s.now()
	var (
		out    *NewInvitation
		wsName string
		mail   = "access/invitation/"
	)
	err := s.st.Update(ctx, func(tx store.Txn) error {
		ws, err := workspaces.Get(tx, store.System, p.Tenant)
		if err != nil {
			return err
		}
		wsName = ws.Name
		inv := &invitation{Invitation: Invitation{ID: s.ids.New("inv", now), Email: normEmail(in.Email),
			Roles: sorted(clone(in.Roles)), Apps: cloneApps(in.Apps), Status: InvitationPending,
			ExpiresAt: now.Add(InvitationTTL), CreatedAt: now, InvitedBy: p.UserID, BreakGlassReason: in.BreakGlassReason}}
		admin := grantsAdmin(inv.Roles) && ws.FourEyes
		if admin && in.BreakGlassReason != nil {
			end := now.Add(BreakGlassTTL)
			inv.ExpiresAt, inv.GrantExpiresAt = end, &end
		}
		token, err := putNewCredential(tx, tagInvitation, &credential{Kind: credInvitation, Tenant: p.Tenant,
			RecordID: inv.ID, Email: inv.Email, ExpiresAt: &inv.ExpiresAt})
		if err != nil {
			return err
		}
		inv.Lookup = token[:lookupLen]
		if admin && in.BreakGlassReason == nil {
			inv.Status = InvitationAwaiting
			ch, err := s.proposeTx(tx, p.Tenant, kindAdminInvitation, p.Actor(), p.UserID,
				"invitation of "+inv.Email+" with the admin role", invitationChange{InvitationID: inv.ID}, now)
			if err != nil {
				return err
			}
			inv.ChangeID = ch.ID
		}
		if err := invitations.Put(tx, p.Tenant, inv); err != nil {
			return err
		}
		out = &NewInvitation{Invitation: *inv.at(now), Token: token}
		return audit.Write(tx, p.Tenant, &s.ids, audit.Entry{At: now, Actor: p.Actor(), Action: "invitation.create",
			Entity: "invitation", EntityID: inv.ID, After: audit.Marshal(inv.at(now)), Reason: reasonOf(in.BreakGlassReason)})
	})
	if err != nil {
		return nil, err
	}
	if s.cfg.Mailer != nil {
		out.EmailSent = s.sendMail(ctx, p.Tenant, mail+out.ID, out.Email, "You are invited to "+wsName,
			invitationText(wsName, out)) == nil
	}
	return out, nil
}

func invitationText(wsName string, inv *NewInvitation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are invited to join %s with the roles %s.\n\n", wsName, strings.Join(inv.Roles, ", "))
	fmt.Fprintf(&b, "Your invitation token: %s\n", inv.Token)
	fmt.Fprintf(&b, "Accept it with POST /v1/invitations/%s/accept before %s. It works once.\n",
		inv.Token, inv.ExpiresAt.Format(time.RFC3339))
	if inv.Status == InvitationAwaiting {
		b.WriteString("It can be accepted once a second admin of the workspace has approved it.\n")
	}
	return b.String()
}

// Invitations returns one page of the tenant's invitations, newest first
// (revoked ones are gone).
func (s *Service) Invitations(ctx context.Context, tenant string, page store.Page) ([]*Invitation, string, error) {
	now := s.now()
	return viewPage(ctx, s.st,
		func(r store.Reader) ([]*invitation, string, error) { return invitations.List(r, tenant, page) },
		func(i *invitation) *Invitation { return i.at(now) })
}

// Invitation returns one invitation of the tenant.
func (s *Service) Invitation(ctx context.Context, tenant, id string) (*Invitation, error) {
	now := s.now()
	return viewOne(ctx, s.st,
		func(r store.Reader) (*invitation, error) { return invitations.Get(r, tenant, id) },
		func(i *invitation) *Invitation { return i.at(now) })
}

// RevokeInvitation withdraws an invitation that has not been accepted: its
// token stops working (accepting it is a conflict) and it leaves the list.
func (s *Service) RevokeInvitation(ctx context.Context, p *Principal, id string) error {
	if !p.Can(PermAccessManage) {
		return errs.Forbiddenf("missing permission %s", PermAccessManage)
	}
	now := s.now()
	return s.st.Update(ctx, func(tx store.Txn) error {
		inv, err := invitations.Get(tx, p.Tenant, id)
		if err != nil {
			return err
		}
		if inv.Status == InvitationAccepted {
			return errs.Conflictf("invitation already accepted")
		}
		if err := revokeInvitationTx(tx, p.Tenant, inv); err != nil {
			return err
		}
		if inv.Status == InvitationAwaiting && inv.ChangeID != "" {
			if err := s.withdrawTx(tx, p.Tenant, inv.ChangeID, p.Actor(), "the invitation was revoked", now); err != nil {
				return err
			}
		}
		return audit.Write(tx, p.Tenant, &s.ids, audit.Entry{At: now, Actor: p.Actor(), Action: "invitation.revoke",
			Entity: "invitation", EntityID: inv.ID, Before: audit.Marshal(inv.at(now))})
	})
}

// revokeInvitationTx marks the token revoked (so accepting it says so) and
// deletes the invitation.
func revokeInvitationTx(tx store.Txn, tenant string, inv *invitation) error {
	c, err := credentials.Get(tx, store.System, inv.Lookup)
	switch {
	case err == nil:
		c.Revoked = true
		if err := credentials.Put(tx, store.System, c); err != nil {
			return err
		}
	case !errors.Is(err, errs.NotFound):
		return err
	}
	return invitations.Delete(tx, tenant, inv.ID)
}

// CheckAcceptIn reports every violation of in, located at its field names
// (["password"]); the HTTP API puts them under "body".
func CheckAcceptIn(in AcceptIn) error {
	var vs []errs.Violation
	if in.Name != nil {
		vs = append(vs, checkLen([]any{"name"}, *in.Name, 0, maxNameLen)...)
	}
	if in.Password != nil {
		vs = append(vs, checkLen([]any{"password"}, *in.Password, 0, 200)...)
	}
	return errs.Validation(vs...)
}

func errNoInvitation() error { return errs.NotFoundf("invitation not found") }

// InvitationByToken returns the invitation a token names, whatever its
// status; an unknown token is errs.NotFound, a revoked one errs.Conflict.
// The API looks the token up with it before reading a body, so a wrong
// token is a 404 before any validation.
func (s *Service) InvitationByToken(ctx context.Context, token string) (*Invitation, error) {
	now := s.now()
	return viewOne(ctx, s.st,
		func(r store.Reader) (*invitation, error) {
			inv, _, err := invitationByToken(r, token)
			return inv, err
		},
		func(i *invitation) *Invitation { return i.at(now) })
}

// invitationByToken resolves an invitation token to the invitation and its
// tenant: an unknown or wrong token is errs.NotFound, a revoked one
// errs.Conflict.
func invitationByToken(r store.Reader, token string) (*invitation, string, error) {
	tag, lookup, ok := parseSecret(token)
	if !ok || tag != tagInvitation {
		return nil, "", errNoInvitation()
	}
	c, err := credentials.Get(r, store.System, lookup)
	if errors.Is(err, errs.NotFound) || (err == nil && !sameSecret(token, c.Hash)) {
		return nil, "", errNoInvitation()
	}
	if err != nil {
		return nil, "", err
	}
	if c.Revoked {
		return nil, "", errs.Conflictf("invitation revoked")
	}
	inv, err := invitations.Get(r, c.Tenant, c.RecordID)
	if err != nil {
		return nil, "", err
	}
	return inv, c.Tenant, nil
}

// Accept accepts the invitation whose token is given: the invitee becomes a
// member with the invitation's roles and apps (or gains them, when already
// a member) and gets a session. An unknown token is errs.NotFound; a used,
// revoked, expired or not yet approved invitation is errs.Conflict.
func (s *Service) Accept(ctx context.Context, token string, in AcceptIn) (*Session, error) {
	if err := CheckAcceptIn(in); err != nil {
		return nil, err
	}
	now := s.now()
	var sess *Session
	err := s.st.Update(ctx, func(tx store.Txn) error {
		inv, tenant, err := invitationByToken(tx, token)
		if err != nil {
			return err
		}
		switch view := inv.at(now); view.Status {
		case InvitationAccepted:
			return errs.Conflictf("invitation already accepted")
		case InvitationAwaiting:
			return errs.Conflictf("invitation awaits approval by a second admin")
		case InvitationExpired:
			return errs.Conflictf("invitation expired")
		}
		u, err := s.acceptTx(tx, tenant, inv, in, now)
		if err != nil {
			return err
		}
		sess, err = s.newSessionTx(tx, tenant, u, now, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// acceptTx makes the invitee a member and marks the invitation accepted.
func (s *Service) acceptTx(tx store.Txn, tenant string, inv *invitation, in AcceptIn, now time.Time) (*user, error) {
	uid := s.ids.New("usr", now)
	if u, err := users.Lookup(tx, tenant, "email", inv.Email); err == nil {
		uid = u.ID
	} else if !errors.Is(err, errs.NotFound) {
		return nil, err
	}
	j := join{id: uid, email: inv.Email, roles: inv.Roles, apps: inv.Apps, actor: uid,
		reason: "accepted invitation " + inv.ID}
	if in.Name != nil {
		j.name = strings.TrimSpace(*in.Name)
	}
	if inv.GrantExpiresAt != nil {
		// A break-glass admin grant is temporary; the other roles stay.
		j.roles = nil
		for _, r := range inv.Roles {
			if r != RoleAdmin {
				j.roles = append(j.roles, r)
			}
		}
		j.grant = &Grant{Role: RoleAdmin, ExpiresAt: *inv.GrantExpiresAt, Reason: reasonOf(inv.BreakGlassReason)}
	}
	u, err := s.joinTx(tx, tenant, j, now)
	if err != nil {
		return nil, err
	}
	before := inv.at(now)
	inv.Status, inv.AcceptedAt, inv.UserID = InvitationAccepted, &now, u.ID
	if err := invitations.Put(tx, tenant, inv); err != nil {
		return nil, err
	}
	return u, audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: uid, Action: "invitation.accept",
		Entity: "invitation", EntityID: inv.ID, Before: audit.Marshal(before), After: audit.Marshal(inv.at(now))})
}

// invitationChange is the payload of an admin invitation waiting for a
// second admin.
type invitationChange struct {
	InvitationID string `json:"invitation_id"`
}

const kindAdminInvitation = "access.invitation"

// changedInvitation returns the invitation an invitationChange payload
// names.
func changedInvitation(tx store.Txn, tenant string, payload json.RawMessage) (*invitation, error) {
	var ic invitationChange
	if err := json.Unmarshal(payload, &ic); err != nil {
		return nil, errors.Wrap(err, "decode invitation change")
	}
	return invitations.Get(tx, tenant, ic.InvitationID)
}

// approveInvitation lets an awaiting invitation be accepted.
func (s *Service) approveInvitation(_ context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	inv, err := changedInvitation(tx, tenant, payload)
	if err != nil {
		return err
	}
	now := s.now()
	before := inv.at(now)
	inv.Status = InvitationPending
	if err := invitations.Put(tx, tenant, inv); err != nil {
		return err
	}
	return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: approver, Action: "invitation.approve",
		Entity: "invitation", EntityID: inv.ID, Before: audit.Marshal(before), After: audit.Marshal(inv.at(now))})
}

// rejectInvitation revokes an awaiting invitation.
func (s *Service) rejectInvitation(_ context.Context, tx store.Txn, tenant string, payload json.RawMessage, approver string) error {
	inv, err := changedInvitation(tx, tenant, payload)
	if err != nil {
		return err
	}
	now := s.now()
	if err := revokeInvitationTx(tx, tenant, inv); err != nil {
		return err
	}
	return audit.Write(tx, tenant, &s.ids, audit.Entry{At: now, Actor: approver, Action: "invitation.revoke",
		Entity: "invitation", EntityID: inv.ID, Before: audit.Marshal(inv.at(now)), Reason: "the admin grant was rejected"})
}
