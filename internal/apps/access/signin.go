package access

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
	"github.com/cockroachdb/errors"
)

// The fixed demo identities of development login.
const (
	DemoTenant = "ten_demo"
	DemoUser   = "usr_demo"
	DemoEmail  = "demo@example.com"
)

// DevLoginIn asks for a development session; every field is optional (see
// DevLogin for the defaults).
type DevLoginIn struct {
	Apps     []string `json:"apps"`
	Email    string   `json:"email" jsonschema:"format=email,maxLength=254"`
	Roles    []string `json:"roles" jsonschema:"enum=admin,enum=approver,enum=member,enum=viewer,default=admin"`
	TenantID string   `json:"tenant_id" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9_.-]*$,maxLength=80"`
	UserID   string   `json:"user_id" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9_.-]*$,maxLength=80"`
}

// EmailIn asks for an email sign-in code.
type EmailIn struct {
	Email string `json:"email" jsonschema:"required,format=email,maxLength=254"`
	// TenantID picks the workspace when the person belongs to several;
	// the one joined last otherwise.
	TenantID string `json:"tenant_id" jsonschema:"maxLength=80"`
}

// CodeIn trades an email sign-in code for a session.
type CodeIn struct {
	Email string `json:"email" jsonschema:"required,format=email,maxLength=254"`
	Code  string `json:"code" jsonschema:"required,minLength=6,maxLength=20"`
}

// Session is a new session: the token is shown only here.
type Session struct {
	Token     string    `json:"token"`
	TenantID  string    `json:"tenant_id"`
	UserID    string    `json:"user_id"`
	Email     string    `json:"email"`
	Roles     []string  `json:"roles"`
	Apps      []string  `json:"apps"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Me is the caller as GET /v1/auth/me shows it.
type Me struct {
	UserID      string   `json:"user_id"`
	TenantID    string   `json:"tenant_id"`
	Email       string   `json:"email"`
	Name        string   `json:"name"`
	Roles       []string `json:"roles"`
	Apps        []string `json:"apps"`
	Permissions []string `json:"permissions"`
	Departments []string `json:"departments"`
	// KeyID is set when the caller is an API key.
	KeyID string `json:"key_id,omitempty"`
}

// signin is a pending email sign-in code, under store.System keyed by
// email. Only a hash of the code is kept.
type signin struct {
	ID        string    `json:"id"` // the email
	Tenant    string    `json:"tenant"`
	UserID    string    `json:"user_id"`
	Hash      string    `json:"hash"`
	Tries     int       `json:"tries"`
	ExpiresAt time.Time `json:"expires_at"`
}

var signins = &store.Collection[signin]{
	Name: "signin",
	ID:   func(c *signin) string { return c.ID },
	Indexes: []store.Index[signin]{
		{Name: "expires", Values: func(c *signin) [][]any { return [][]any{{c.ExpiresAt.UnixNano()}} }},
	},
}

func (in DevLoginIn) check(s *Service) error {
	vs := s.checkGrant(in.Roles, in.Apps)
	if in.TenantID != "" && !ValidID(in.TenantID) {
		vs = append(vs, errs.Violation{Loc: []any{"tenant_id"}, Msg: "must be 1 to 80 letters, digits, '_', '.' or '-'", Type: "string_pattern_mismatch"})
	}
	if in.UserID != "" && !ValidID(in.UserID) {
		vs = append(vs, errs.Violation{Loc: []any{"user_id"}, Msg: "must be 1 to 80 letters, digits, '_', '.' or '-'", Type: "string_pattern_mismatch"})
	}
	vs = append(vs, checkEmail([]any{"email"}, in.Email, false)...)
	return errs.Validation(vs...)
}

// DevLogin signs in for development: it creates the workspace and the
// person on first use and returns a session. Defaults: tenant DemoTenant;
// with neither user_id nor email, the person DemoUser <DemoEmail>; a new
// user_id without email gets <user_id>@example.com; roles [admin]; every
// app. An existing person gets exactly the roles and apps asked for (the
// change is audited with the actor "dev-login"). Hosts must offer it only
// in development.
func (s *Service) DevLogin(ctx context.Context, in DevLoginIn) (*Session, error) {
	if in.Roles == nil {
		in.Roles = []string{RoleAdmin}
	}
	if err := in.check(s); err != nil {
		return nil, err
	}
	tenant := in.TenantID
	if tenant == "" {
		tenant = DemoTenant
	}
	userID, email := in.UserID, normEmail(in.Email)
	if userID == "" && email == "" {
		userID, email = DemoUser, DemoEmail
	}
	const actor = "dev-login"
	now := s.now()
	var sess *Session
	err := s.st.Update(ctx, func(tx store.Txn) error {
		if _, err := workspaces.Get(tx, store.System, tenant); errors.Is(err, errs.NotFound) {
			name := tenant
			if tenant == DemoTenant {
				name = "Demo workspace"
			}
			if _, err := s.createWorkspaceTx(tx, tenant, name, false, actor, now); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		u, err := devUser(tx, tenant, userID, email)
		if err != nil {
			return err
		}
		if u == nil {
			if email == "" {
				email = strings.ToLower(userID) + "@example.com"
			}
			u, err = s.joinTx(tx, tenant, join{id: userID, email: email, roles: in.Roles, apps: in.Apps,
				actor: actor, reason: "development login"}, now)
			if err != nil {
				return err
			}
		} else if !slices.Equal(u.Roles, sorted(clone(in.Roles))) || !sameApps(u.Apps, in.Apps) || len(u.Grants) > 0 {
			before := u.member(now)
			u.Roles, u.Apps, u.Grants = sorted(clone(in.Roles)), cloneApps(in.Apps), nil
			if err := putUser(tx, tenant, u); err != nil {
				return err
			}
			if err := s.auditMember(tx, tenant, "member.update", actor, "development login", before, u.member(now), now); err != nil {
				return err
			}
		}
		sess, err = s.newSessionTx(tx, tenant, u, now, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.sweep(ctx)
	return sess, nil
}

// devUser finds the person development login names: by id when given (an
// id whose email differs from the one given is a conflict), else by email.
// nil, nil means a new person.
func devUser(tx store.Txn, tenant, userID, email string) (*user, error) {
	if userID != "" {
		u, err := users.Get(tx, tenant, userID)
		switch {
		case errors.Is(err, errs.NotFound):
			return nil, nil
		case err != nil:
			return nil, err
		case email != "" && u.Email != email:
			return nil, errs.Conflictf("user %s has another email", userID)
		}
		return u, nil
	}
	u, err := users.Lookup(tx, tenant, "email", email)
	if errors.Is(err, errs.NotFound) {
		return nil, nil
	}
	return u, err
}

func sameApps(a, b []string) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return slices.Equal(cloneApps(a), cloneApps(b))
}

// newSessionTx starts a session for u.
func (s *Service) newSessionTx(tx store.Txn, tenant string, u *user, now time.Time, dev bool) (*Session, error) {
	exp := now.Add(s.cfg.SessionTTL)
	token, err := putNewCredential(tx, tagSession, &credential{Kind: credSession, Tenant: tenant,
		UserID: u.ID, Email: u.Email, ExpiresAt: &exp, Dev: dev})
	if err != nil {
		return nil, err
	}
	return &Session{Token: token, TenantID: tenant, UserID: u.ID, Email: u.Email,
		Roles: u.effectiveRoles(now), Apps: cloneApps(u.Apps), ExpiresAt: exp}, nil
}

// codeDigits is the length of an email sign-in code.
const codeDigits = 8

// SendCode sends an email sign-in code to in.Email through the Mailer's
// email.send, for the workspace in.TenantID or, when empty, the one the
// person joined last. An address that belongs to no workspace gets nothing,
// without an error, so the answer does not tell who is a member. A new code
// replaces the previous one.
func (s *Service) SendCode(ctx context.Context, in EmailIn) error {
	if err := errs.Validation(checkEmail([]any{"email"}, in.Email, true)...); err != nil {
		return err
	}
	if s.cfg.Mailer == nil {
		return errs.Unavailablef("email sign-in is not available: no email provider is configured")
	}
	email := normEmail(in.Email)
	now := s.now()
	code, err := randomDigits(codeDigits)
	if err != nil {
		return err
	}
	var (
		rec     *signin
		wsName  string
		mailKey = "access/signin/" + s.ids.New("sgn", now)
	)
	err = s.st.Update(ctx, func(tx store.Txn) error {
		m, err := pickMembership(tx, email, in.TenantID)
		if err != nil || m == nil {
			return err
		}
		ws, err := workspaces.Get(tx, store.System, m.Tenant)
		if err != nil {
			return err
		}
		wsName = ws.Name
		rec = &signin{ID: email, Tenant: m.Tenant, UserID: m.UserID, Hash: hashSecret(email + "\n" + code),
			ExpiresAt: now.Add(s.cfg.CodeTTL)}
		return signins.Put(tx, store.System, rec)
	})
	if err != nil || rec == nil {
		return err
	}
	body := fmt.Sprintf("Your sign-in code for %s is %s.\n\nIt works once, for %d minutes. If you did not ask for it, ignore this message.\n",
		wsName, code, int(s.cfg.CodeTTL/time.Minute))
	if err := s.sendMail(ctx, rec.Tenant, mailKey, email, "Your sign-in code for "+wsName, body); err != nil {
		return errs.Unavailablef("the sign-in code could not be sent; try again later")
	}
	return nil
}

// pickMembership returns email's membership of tenant (when given) or the
// one joined last; nil when there is none.
func pickMembership(r store.Reader, email, tenant string) (*membership, error) {
	ms, _, err := memberships.ListBy(r, store.System, "email", []any{email}, store.Page{Limit: 200})
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	if tenant == "" {
		return ms[0], nil
	}
	for _, m := range ms {
		if m.Tenant == tenant {
			return m, nil
		}
	}
	return nil, nil
}

func randomDigits(n int) (string, error) {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
	v, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return "", errors.Wrap(err, "draw a sign-in code")
	}
	return fmt.Sprintf("%0*d", n, v), nil
}

// sendMail sends one email through the Mailer's email.send. Failures are
// logged without the message, which may hold a secret.
func (s *Service) sendMail(ctx context.Context, tenant, key, to, subject, body string) error {
	if s.cfg.Mailer == nil {
		return errs.Unavailablef("no email provider is configured")
	}
	args, err := json.Marshal(map[string]any{"to": []string{to}, "subject": subject, "body": body})
	if err != nil {
		return errors.Wrap(err, "encode email")
	}
	_, err = s.cfg.Mailer.Call(ctx, capability.Call{Tenant: tenant, Capability: "email.send", Args: args, IdempotencyKey: key})
	if err != nil {
		s.log.Warn("access: email.send failed", slog.String("tenant", tenant), slog.String("subject", subject),
			slog.String("error", err.Error()))
	}
	return err
}

// SignIn trades an email sign-in code for a session. A wrong or expired
// code is errs.Unauthenticated; the fifth wrong try burns the code.
func (s *Service) SignIn(ctx context.Context, in CodeIn) (*Session, error) {
	vs := checkEmail([]any{"email"}, in.Email, true)
	vs = append(vs, checkLen([]any{"code"}, in.Code, 6, 20)...)
	if err := errs.Validation(vs...); err != nil {
		return nil, err
	}
	email := normEmail(in.Email)
	now := s.now()
	var sess *Session
	err := s.st.Update(ctx, func(tx store.Txn) error {
		sess = nil
		rec, err := signins.Get(tx, store.System, email)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case !now.Before(rec.ExpiresAt):
			return signins.Delete(tx, store.System, email)
		case !sameSecret(email+"\n"+strings.TrimSpace(in.Code), rec.Hash):
			rec.Tries++
			if rec.Tries >= MaxCodeTries {
				return signins.Delete(tx, store.System, email)
			}
			return signins.Put(tx, store.System, rec)
		}
		if err := signins.Delete(tx, store.System, email); err != nil {
			return err
		}
		u, err := users.Get(tx, rec.Tenant, rec.UserID)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		sess, err = s.newSessionTx(tx, rec.Tenant, u, now, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	if sess == nil {
		// The transaction committed the failed try (or the burnt code).
		return nil, errs.Unauthenticatedf("wrong or expired code")
	}
	s.sweep(ctx)
	return sess, nil
}

// Logout ends p's session at once. An API key cannot log out: it is revoked
// instead (errs.Conflict).
func (s *Service) Logout(ctx context.Context, p *Principal) error {
	if p.SessionID == "" {
		return errs.Conflictf("only a session can log out; revoke an API key with DELETE /v1/api-keys/{id}")
	}
	return s.st.Update(ctx, func(tx store.Txn) error {
		err := credentials.Delete(tx, store.System, p.SessionID)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		return err
	})
}

// Me describes the caller.
func (s *Service) Me(ctx context.Context, p *Principal) (*Me, error) {
	me := &Me{UserID: p.UserID, TenantID: p.Tenant, Email: p.Email, Roles: nonNil(p.Roles), Apps: cloneApps(p.Apps),
		Permissions: nonNil(p.Perms), Departments: []string{}, KeyID: p.KeyID}
	err := s.st.View(ctx, func(r store.Reader) error {
		u, err := users.Get(r, p.Tenant, p.UserID)
		if errors.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		me.Name, me.Departments = u.Name, nonNil(clone(u.Departments))
		return nil
	})
	return me, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
