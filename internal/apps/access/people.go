package access

import (
	"context"
	"slices"
	"time"

	"github.com/bas-platform/bas/internal/audit"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// Member is a person of a workspace as the API shows it.
type Member struct {
	UserID string `json:"user_id"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	// Roles are the person's roles now, temporary grants included.
	Roles []string `json:"roles"`
	// Apps limits the person to these apps; null means every app.
	Apps        []string `json:"apps"`
	Departments []string `json:"departments"`
	// Grants are the temporary (break-glass) roles with their expiry.
	Grants []Grant `json:"grants,omitempty"`
}

// Grant is a role held until ExpiresAt: a break-glass grant.
type Grant struct {
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expires_at"`
	Reason    string    `json:"reason"`
}

// user is the stored person.
type user struct {
	ID          string    `json:"id"`
	Email       string    `json:"email"`
	Name        string    `json:"name"`
	Roles       []string  `json:"roles"`
	Apps        []string  `json:"apps"`
	Departments []string  `json:"departments"`
	Grants      []Grant   `json:"grants,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

var users = &store.Collection[user]{
	Name:     "user",
	ID:       func(u *user) string { return u.ID },
	NotFound: "member not found",
	Indexes: []store.Index[user]{
		{Name: "email", Unique: true, Values: func(u *user) [][]any { return [][]any{{u.Email}} }},
	},
}

// membership maps an email to a workspace it belongs to, under
// store.System, so email sign-in can find the person's workspaces.
type membership struct {
	ID       string    `json:"id"` // email "/" tenant
	Email    string    `json:"email"`
	Tenant   string    `json:"tenant"`
	UserID   string    `json:"user_id"`
	JoinedAt time.Time `json:"joined_at"`
}

var memberships = &store.Collection[membership]{
	Name: "membership",
	ID:   func(m *membership) string { return m.ID },
	Indexes: []store.Index[membership]{
		{Name: "email", Values: func(m *membership) [][]any { return [][]any{{m.Email, m.JoinedAt.UnixNano()}} }},
	},
}

// effectiveRoles are the permanent roles and the grants not yet expired.
func (u *user) effectiveRoles(now time.Time) []string {
	roles := clone(u.Roles)
	for _, g := range u.Grants {
		if now.Before(g.ExpiresAt) {
			roles = append(roles, g.Role)
		}
	}
	return sorted(roles)
}

func (u *user) member(now time.Time) *Member {
	m := &Member{UserID: u.ID, Email: u.Email, Name: u.Name, Roles: u.effectiveRoles(now),
		Apps: cloneApps(u.Apps), Departments: clone(u.Departments)}
	if m.Roles == nil {
		m.Roles = []string{}
	}
	if m.Departments == nil {
		m.Departments = []string{}
	}
	for _, g := range u.Grants {
		if now.Before(g.ExpiresAt) {
			m.Grants = append(m.Grants, g)
		}
	}
	return m
}

const maxNameLen = 200

// join is a person joining a workspace, or gaining roles in it.
type join struct {
	email string
	name  string
	id    string // the new person's id; a fresh "usr_" id when empty
	roles []string
	apps  []string // nil: every app
	grant *Grant
	actor string
	// reason is written to the audit log.
	reason string
}

// joinTx makes j.email a member of tenant, or widens the member it already
// is: roles and apps are merged (every app absorbs a limit), a temporary
// grant is added. Audited as member.create or member.update.
func (s *Service) joinTx(tx store.Txn, tenant string, j join, now time.Time) (*user, error) {
	email := normEmail(j.email)
	u, err := users.Lookup(tx, tenant, "email", email)
	switch {
	case errors.Is(err, errs.NotFound):
		id := j.id
		if id == "" {
			id = s.ids.New("usr", now)
		}
		u = &user{ID: id, Email: email, Name: j.name, Roles: sorted(clone(j.roles)), Apps: cloneApps(j.apps),
			Departments: []string{}, CreatedAt: now}
		if u.Roles == nil {
			u.Roles = []string{}
		}
		if j.grant != nil {
			u.Grants = []Grant{*j.grant}
		}
		if err := putUser(tx, tenant, u); err != nil {
			return nil, err
		}
		if err := memberships.Put(tx, store.System, &membership{ID: email + "/" + tenant, Email: email,
			Tenant: tenant, UserID: u.ID, JoinedAt: now}); err != nil {
			return nil, err
		}
		return u, s.auditMember(tx, tenant, "member.create", j.actor, j.reason, nil, u.member(now), now)
	case err != nil:
		return nil, err
	}
	before := u.member(now)
	u.Roles = sorted(append(clone(u.Roles), j.roles...))
	u.Apps = unionApps(u.Apps, j.apps)
	if u.Name == "" {
		u.Name = j.name
	}
	if j.grant != nil {
		u.Grants = append(liveGrants(u.Grants, now), *j.grant)
	}
	if err := putUser(tx, tenant, u); err != nil {
		return nil, err
	}
	return u, s.auditMember(tx, tenant, "member.update", j.actor, j.reason, before, u.member(now), now)
}

func liveGrants(gs []Grant, now time.Time) []Grant {
	return slices.DeleteFunc(slices.Clone(gs), func(g Grant) bool { return !now.Before(g.ExpiresAt) })
}

// putUser writes u; a taken email is errs.Conflict.
func putUser(tx store.Txn, tenant string, u *user) error {
	err := users.Put(tx, tenant, u)
	if errors.Is(err, errs.Conflict) {
		return errs.Conflictf("a member with email %s already exists", u.Email)
	}
	return err
}

// Members returns one page of the tenant's people, newest first.
func (s *Service) Members(ctx context.Context, tenant string, page store.Page) ([]*Member, string, error) {
	now := s.now()
	return viewPage(ctx, s.st,
		func(r store.Reader) ([]*user, string, error) { return users.List(r, tenant, page) },
		func(u *user) *Member { return u.member(now) })
}

// Member returns one person of the tenant; another tenant's is not found.
func (s *Service) Member(ctx context.Context, tenant, userID string) (*Member, error) {
	now := s.now()
	return viewOne(ctx, s.st,
		func(r store.Reader) (*user, error) { return users.Get(r, tenant, userID) },
		func(u *user) *Member { return u.member(now) })
}

// MaxDepartments bounds a person's departments (interface.md section 8).
const MaxDepartments = 14

// SetDepartments replaces a person's departments, audited as actor's
// change. Who may set whose departments is the caller's rule. Too many
// departments is a violation at ["departments"].
func (s *Service) SetDepartments(ctx context.Context, tenant, actor, userID string, departments []string) (*Member, error) {
	if len(departments) > MaxDepartments {
		return nil, errs.Invalidf([]any{"departments"}, "too_long", "must have at most %d items", MaxDepartments)
	}
	now := s.now()
	var m *Member
	err := s.st.Update(ctx, func(tx store.Txn) error {
		u, err := users.Get(tx, tenant, userID)
		if err != nil {
			return err
		}
		before := u.member(now)
		u.Departments = []string{}
		for _, d := range departments {
			if !slices.Contains(u.Departments, d) {
				u.Departments = append(u.Departments, d)
			}
		}
		if err := putUser(tx, tenant, u); err != nil {
			return err
		}
		m = u.member(now)
		return s.auditMember(tx, tenant, "member.departments", actor, "", before, m, now)
	})
	return m, err
}

// auditMember writes a change to a person.
func (s *Service) auditMember(tx store.Txn, tenant, action, actor, reason string, before, after *Member, now time.Time) error {
	e := audit.Entry{At: now, Actor: actor, Action: action, Entity: "member", EntityID: after.UserID,
		After: audit.Marshal(after), Reason: reason}
	if before != nil {
		e.Before = audit.Marshal(before)
	}
	return audit.Write(tx, tenant, &s.ids, e)
}
